"""``kai-consolidation``: KAI-Scheduler's consolidation action, as documented.

KAI-Scheduler (``NVIDIA/KAI-Scheduler``, docs/developer/action-framework.md)
runs *allocate* and then *consolidate*: for each pending job in queue order
that allocation could not place, it builds scenarios that accumulate
preemptible victims one by one (its ``PodAccumulatedScenarioBuilder``), at
most ``--max-consolidation-preemptees`` (16) victim pods; a scenario is
simulated — evict the victims, allocate the job, allocate every victim
again — and committed only if every evicted pod has somewhere to go,
else rolled back; the action stops at its time limit.  It does not prove
that a job cannot be placed.

Here allocation is the ``binpack-gang`` baseline (KAI's default placement
strategy is binpack), quota is admitted as a ClusterQueue would, victims are
the workloads the move policy lets move (label, priority, queue), offered
lowest priority first and then youngest (least work lost), and a move stays
in its ClusterQueue and flavor.  One adaptation to placewise's contract: a
victim of a committed scenario that can return to its old hosts does (a move
that frees nothing the job uses is never part of a plan, and the validator
rejects one).
"""

from __future__ import annotations

import time

from placewise.models.cluster import ClusterQueue
from placewise.models.moves import (
    MoveRules,
    gpu_hours,
    hosts,
    lost_gpu_seconds,
    movable,
    running_hosts,
)
from placewise.models.plan import Plan, PlanAdmission, PlanMove
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment, Workload
from placewise.solver.baselines.binpack_gang import BinpackGangScheduler
from placewise.solver.baselines.records import (
    BaselineOutcome,
    FlavorChoice,
    Placement,
)

MAX_PREEMPTEES = 16
"""KAI's ``--max-consolidation-preemptees`` default: victim pods per scenario."""
TIME_LIMIT = 10.0
"""Seconds the action may run before it stops trying further jobs."""


class KaiConsolidationScheduler(BinpackGangScheduler):
    name = "kai-consolidation"

    def __init__(
        self,
        snapshot: Snapshot,
        rules: MoveRules,
        seed: int = 0,
        time_limit: float = TIME_LIMIT,
    ) -> None:
        super().__init__(snapshot, seed)
        self.rules = rules
        self.deadline = self._start + time_limit
        self.lost = {
            w.key: lost_gpu_seconds(snapshot, w, rules.accelerators)
            for w in snapshot.running
        }
        self.candidates = sorted(
            (w for w in snapshot.running if movable(w, rules)),
            key=lambda w: (w.priority, self.lost[w.key], w.key),
        )
        self.moved: dict[str, PlanAdmission] = {}
        self.moves: dict[str, PlanMove] = {}
        self.lost_used = 0

    # -- the action ----------------------------------------------------------

    def _admit(self, w: Workload, cq: ClusterQueue) -> bool:
        if super()._admit(w, cq):
            return True
        if not self.rules.enabled or time.perf_counter() > self.deadline:
            return False
        choices, _ = self.flavor_choices(w, cq)
        for choice in choices[:1]:  # quota fits: only placement failed
            if self._consolidate(w, cq, choice):
                self.reasons.pop(w.key, None)
                return True
        return False

    def _consolidate(self, w: Workload, cq: ClusterQueue, choice: FlavorChoice) -> bool:
        victims: list[Workload] = []
        pods = 0
        for v in self.candidates:
            if v.key in self.moved:
                continue
            n = sum(psa.count for psa in _psas(v))
            if pods + n > MAX_PREEMPTEES or not self._affordable([*victims, v]):
                break
            victims.append(v)
            pods += n
            if self._scenario(w, cq, choice, victims):
                return True
        return False

    def _affordable(self, victims: list[Workload]) -> bool:
        if self.rules.count is not None and (
            len(self.moves) + len(victims) > self.rules.count
        ):
            return False
        budget = self.rules.lost_budget_seconds
        return budget is None or (
            self.lost_used + sum(self.lost[v.key] for v in victims) <= budget
        )

    def _scenario(
        self,
        w: Workload,
        cq: ClusterQueue,
        choice: FlavorChoice,
        victims: list[Workload],
    ) -> bool:
        """Evict, allocate the job, allocate every victim again; keep it all
        or roll it all back."""
        for v in victims:
            self._hold(v, -1)
        job = self.place(w, cq, choice)
        again: list[tuple[Workload, ClusterQueue, FlavorChoice, Placement]] = []
        ok = job.complete
        for v in victims if ok else ():
            vcq, vchoice = self._own(v)
            placed = self.place(v, vcq, vchoice)
            if not placed.complete:
                ok = False
                break
            again.append((v, vcq, vchoice, placed))
        if not ok:
            for *_, placed in again:
                self._release_all(placed)
            if job.complete:
                self._release_all(job)
            for v in victims:
                self._hold(v, 1)
            return False
        self._commit_admission(w, cq, choice, job)
        # Victims that free nothing the job needs stay where they were; one
        # returning can make room for another to return, so until none can.
        returned = True
        while returned:
            returned = False
            for item in list(again):
                if self._returns(item[0], item[3]):
                    again.remove(item)
                    returned = True
        for v, vcq, vchoice, placed in again:
            self._record_move(v, vcq, vchoice, placed)
        return True

    # -- victims -----------------------------------------------------------

    def _hold(self, v: Workload, sign: int) -> None:
        self.tas.update_many(self.tas.workload_usage(v.key), sign)

    def _release_all(self, placement: Placement) -> None:
        for placed in placement.pod_sets:
            self.release(placed)

    def _returns(self, v: Workload, placed: Placement) -> bool:
        """Put a victim back on its old hosts when they still hold it."""
        self._release_all(placed)
        parts = self.tas.workload_usage(v.key)
        if all(self.tas.fits(f, ta, per_pod) for f, ta, per_pod in parts):
            self._hold(v, 1)
            return True
        for p in placed.pod_sets:
            self.take(p)
        return False

    def _own(self, v: Workload) -> tuple[ClusterQueue, FlavorChoice]:
        """A victim keeps its queue, flavors and counts."""
        assert v.admission is not None
        cq = self.snap.cluster_queues[v.admission.cluster_queue]
        flavors: dict[int, str] = {}
        for psa in v.admission.pod_set_assignments:
            for r, f in psa.flavors.items():
                group = cq.group_of(r)
                if group is not None:
                    flavors[group] = f
        counts = tuple(
            next((p.count for p in _psas(v) if p.name == ps.name), ps.count)
            for ps in v.pod_sets
        )
        return cq, FlavorChoice(flavors, counts, v.usage(), False)

    def _record_move(
        self, v: Workload, cq: ClusterQueue, choice: FlavorChoice, placed: Placement
    ) -> None:
        old = {p.name: p for p in _psas(v)}
        psas = []
        for ps, p in zip(v.pod_sets, placed.pod_sets, strict=True):
            before = old.get(ps.name)
            if before is None:
                continue
            psas.append(before.model_copy(update={"topology_assignment": p.topology}))
        adm = PlanAdmission(
            workload=v.key, cluster_queue=cq.name, pod_set_assignments=tuple(psas)
        )
        self.moved[v.key] = adm
        self.lost_used += self.lost[v.key]
        self.moves[v.key] = PlanMove(
            workload=v.key,
            from_hosts=running_hosts(v),
            to_hosts=hosts(psas),
            lost_gpu_hours=gpu_hours(self.lost[v.key]),
        )

    def _plan(self, wall: float) -> Plan:
        plan = super()._plan(wall)
        return plan.model_copy(
            update={
                "admissions": (*plan.admissions, *self.moved.values()),
                "moves": tuple(self.moves[k] for k in self.moved),
            }
        )


def _psas(v: Workload) -> tuple[PodSetAssignment, ...]:
    return v.admission.pod_set_assignments if v.admission else ()


def run_kai_consolidation(
    snapshot: Snapshot, rules: MoveRules, seed: int = 0, time_limit: float = TIME_LIMIT
) -> BaselineOutcome:
    return KaiConsolidationScheduler(snapshot, rules, seed, time_limit).run()


def solve_kai_consolidation(
    snapshot: Snapshot, rules: MoveRules, seed: int = 0, time_limit: float = TIME_LIMIT
) -> Plan:
    return run_kai_consolidation(snapshot, rules, seed, time_limit).plan
