"""Moves: a running workload evicted and admitted again elsewhere in one plan.

A move makes room for a pending gang that no host set can take while small
running jobs sit scattered over the racks (issue 20).  What a move may be is
decided here once, for every solver and the validator alike:

* which running workloads may move (:class:`MoveRules`, :func:`movable`):
  the opt-in label ``placewise.io/movable: "true"``, plus what a policy adds
  by priority or by ClusterQueue;
* what a move throws away (:func:`lost_gpu_seconds`): its GPUs times how
  long it has run (the clock of :mod:`placewise.models.timing`; where its
  start is unknown, the median of the known ones), zero when it is annotated
  ``placewise.io/checkpointed: "true"`` (it restarts cheaply);
* the budget: at most ``count`` moves and ``lost_gpu_hours`` of lost work.

Moves are off unless a budget is given (``solve --moves K`` or a policy's
``moves.budget``): a label alone never makes a plan evict anything.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

from placewise.models.scheduling import Frozen
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment, Workload

MOVABLE_LABEL = "placewise.io/movable"
"""Workload label: ``"true"`` lets a plan move this running workload."""
CHECKPOINTED = "placewise.io/checkpointed"
"""Workload annotation: ``"true"`` means a restart loses no work."""
HOSTNAME = "kubernetes.io/hostname"
HOUR = 3600


class MoveRules(Frozen):
    """Which running workloads may move, and how much moving a plan may do."""

    count: int | None = None
    """At most this many moves; None: no count limit (when lost work limits)."""
    lost_gpu_hours: float | None = None
    """At most this much lost work over all moves; None: no limit."""
    priority_at_most: int | None = None
    """Running workloads of this priority or lower are movable as well."""
    queues: tuple[str, ...] = ()
    """Running workloads of these ClusterQueues are movable as well."""
    accelerators: tuple[str, ...] = ()
    """Resources counted as GPUs in lost work (the policy's)."""
    price: float | None = None
    """GPUs a gang admitted through moves must gain per GPU-hour of work its
    moves throw away (each move also costs the policy's ``reversal_gpus``):
    a move must pay for itself.  None: the policy's ``preemption_price``;
    0: the budget alone limits moves.  The optimizer's rule, not the
    validator's: a plan that ignores it is still a valid plan."""

    @property
    def enabled(self) -> bool:
        """A budget was given and it allows at least one move."""
        if self.count is None and self.lost_gpu_hours is None:
            return False
        return self.count is None or self.count > 0

    @property
    def lost_budget_seconds(self) -> int | None:
        """The lost-work budget in whole GPU-seconds (rounded down: exact
        integer comparisons, never a move over the stated budget)."""
        if self.lost_gpu_hours is None:
            return None
        return int(self.lost_gpu_hours * HOUR)


def is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def movable(w: Workload, rules: MoveRules) -> bool:
    """Whether ``w`` (a running workload) may be moved under ``rules``."""
    if not w.is_running or not w.preemptible or w.admission is None:
        return False
    if w.evicted:
        return False  # already on its way out: nothing left to move
    if is_true(w.labels.get(MOVABLE_LABEL)):
        return True
    if rules.priority_at_most is not None and w.priority <= rules.priority_at_most:
        return True
    return w.admission.cluster_queue in rules.queues


def misplaced_labels(snapshot: Snapshot) -> list[str]:
    """Keys of workloads labelled movable that are not running (labels are
    set at submission, so this is worth a warning, not an error)."""
    return [
        w.key
        for w in snapshot.workloads.values()
        if is_true(w.labels.get(MOVABLE_LABEL)) and not w.is_running
    ]


def assumed_elapsed(elapsed: Iterable[int | None]) -> int:
    """Seconds assumed run where a start is unknown: the median of the known
    (no better guess in a snapshot); 0 when none is known."""
    known = [e for e in elapsed if e is not None]
    return int(statistics.median_low(known)) if known else 0


def lost_gpu_seconds(
    snapshot: Snapshot, w: Workload, accelerators: Sequence[str]
) -> int:
    """The work moving ``w`` throws away, in GPU-seconds."""
    if is_true(w.annotations.get(CHECKPOINTED)):
        return 0
    times = snapshot.run_times
    rt = times.get(w.key)
    elapsed = rt.elapsed if rt is not None else None
    if elapsed is None:
        elapsed = assumed_elapsed(t.elapsed for t in times.values())
    gpus = sum(q for (_f, r), q in w.usage().items() if r in accelerators)
    return gpus * elapsed


def gpu_hours(gpu_seconds: int) -> float:
    """As the plan writes it: GPU-hours, three decimals."""
    return round(gpu_seconds / HOUR, 3)


def hosts(assignments: Iterable[PodSetAssignment]) -> tuple[str, ...]:
    """Host names of a placement, from hostname-level topology assignments
    (sorted, each once); empty where the placement names no hosts."""
    out: set[str] = set()
    for psa in assignments:
        ta = psa.topology_assignment
        if ta is None or not ta.levels or ta.levels[-1] != HOSTNAME:
            continue
        out.update(d.values[-1] for d in ta.domains if d.values and d.count > 0)
    return tuple(sorted(out))


def running_hosts(w: Workload) -> tuple[str, ...]:
    """Where a running workload is now (empty for a non-TAS one)."""
    return hosts(w.admission.pod_set_assignments) if w.admission else ()


def unknown_queues(rules: MoveRules, queues: Mapping[str, object]) -> list[str]:
    """ClusterQueues a move policy names that the instance lacks."""
    return sorted(q for q in rules.queues if q not in queues)
