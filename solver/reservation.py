"""Who gets a reservation: the head-of-line workload that kept losing.

Kueue admits whatever fits each cycle, so a large gang waits while smaller
work keeps taking every host that frees up: replayed over hours, the
largest jobs' delay grows without bound (issue 19, item 5).  Slurm's
backfill answers this with a reservation for the head of the queue and
backfill that does not delay it; placewise does the same once a workload
has waited ``Policy.starvation_minutes`` (its wait counted from its queue
order time: Kueue's, the creation time, kept through a preemption).

The choice is a function of the snapshot alone (wait times and the
cluster's occupancy), never of solver memory: every re-solve, the replay's
and the sidecar's, a restart and a new leader all reserve for the same
workload until it runs, and the reservation cannot outlive its reason.
One workload at a time, as Slurm reserves for its top job first: several
reservations would split the room the first one is draining.

Under Kueue's admission fair sharing a usage-based ClusterQueue offers the
head of its least-used LocalQueue first, whatever the waits
(:mod:`placewise.solver.kueue.afs`); the reservation follows that order, so
it never holds room for a queue that AFS would serve after another one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from placewise.models.snapshot import Snapshot
from placewise.models.timing import aware
from placewise.models.workload import Workload
from placewise.solver.kueue.afs import AfsLedger, UsageKey, applies, lq_key
from placewise.solver.policy import Policy


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room held for one starving workload, as every solver honours it."""

    workload: str
    priority: int
    leaves: frozenset[tuple[str, tuple[str, ...]]]
    """(TAS flavor, topologyAssignment domain values) of the held hosts."""
    starving: frozenset[str] = frozenset()
    """The other workloads past the threshold: the hold does not shut them
    out (see :func:`starving_keys`)."""

    def shuts_out(self, key: str, priority: int) -> bool:
        """Whether a pending workload may not use the held hosts: everyone of
        its priority or lower but the workload itself and the other
        starving workloads."""
        return (
            key != self.workload
            and key not in self.starving
            and priority <= self.priority
        )


CANDIDATES = 4
"""Starving workloads tried in order; one that cannot fit even on an
emptied cluster (more than its quota allows) yields to the next."""


def waited_seconds(w: Workload, now: datetime) -> int:
    """How long ``w`` has waited since it was (re)queued; never negative."""
    since = aware(w.queue_order_timestamp)
    assert since is not None
    return max(0, int((now - since).total_seconds()))


def starving(snapshot: Snapshot, pol: Policy) -> list[Workload]:
    """Pending workloads past the threshold, in reservation order: highest
    priority first (a reservation never holds room against higher
    priority work), then, under admission fair sharing, the rank of the
    LocalQueue's usage (:func:`afs_ranks`), then the longest wait, then
    the key."""
    now = snapshot.now
    if pol.starvation_minutes <= 0 or now is None:
        return []
    limit = pol.starvation_minutes * 60
    waits = [(w, waited_seconds(w, now)) for w in snapshot.pending]
    late = [(w, s) for w, s in waits if s >= limit]
    ranks = afs_ranks(snapshot, [w for w, _ in late])
    late.sort(
        key=lambda ws: (-ws[0].priority, ranks.get(ws[0].key, 0), -ws[1], ws[0].key)
    )
    return [w for w, _ in late[:CANDIDATES]]


def starving_keys(snapshot: Snapshot, pol: Policy) -> frozenset[str]:
    """Every pending workload past the threshold.  The hold shuts none of
    them out: it exists so that work queued *after* the starving workload
    cannot overtake it forever (Kueue admits whatever fits), and work that
    has itself waited past the threshold is not that work.  Among the
    starving the objective decides, as without a reservation, so held room
    never idles while a starving workload could use it (measured on the
    replays, issue 19: holding it against them delayed the largest jobs
    more than it helped the reserved one)."""
    import os

    if os.environ.get("PW_HOLD_ALL"):
        return frozenset()
    now = snapshot.now
    if pol.starvation_minutes <= 0 or now is None:
        return frozenset()
    limit = pol.starvation_minutes * 60
    return frozenset(w.key for w in snapshot.pending if waited_seconds(w, now) >= limit)


def afs_ranks(snapshot: Snapshot, workloads: Sequence[Workload]) -> dict[str, int]:
    """Rank of each workload's LocalQueue usage among the LocalQueues of its
    usage-based ClusterQueue that hold one of ``workloads`` (0 the least
    used, equal usages share a rank, a zero-weight queue last), by key;
    workloads of other ClusterQueues are left out (rank 0).  A rank, not a
    usage: AFS orders inside one ClusterQueue only, so only the place in
    that order compares across queues."""
    ledger = AfsLedger.of(snapshot)
    if ledger is None:
        return {}
    by_cq: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for w in workloads:
        name = snapshot.cluster_queue_of(w)
        cq = snapshot.cluster_queues.get(name) if name is not None else None
        if cq is not None and applies(cq):
            by_cq[cq.name][lq_key(w)].append(w.key)
    ranks: dict[str, int] = {}
    for queues in by_cq.values():
        usages: dict[str, UsageKey] = {lq: ledger.usage(lq) for lq in queues}
        order = {u: i for i, u in enumerate(sorted(set(usages.values())))}
        for lq, keys in queues.items():
            for key in keys:
                ranks[key] = order[usages[lq]]
    return ranks
