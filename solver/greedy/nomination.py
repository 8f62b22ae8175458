"""Nomination in Kueue's cycle: a head's flavor assignment, partial
admission and preemption targets (``scheduler.go: getAssignments``),
against the state every head of the cycle sees; an elastic slice is
assigned with its running slice's quota set aside (:mod:`.slices`).

Split from :mod:`.scheduler` (which owns the state) to keep both readable.
"""

from __future__ import annotations

from placewise.models.snapshot import Snapshot
from placewise.solver.greedy.flavors import Assignment, FlavorAssigner
from placewise.solver.greedy.modes import Mode, PreemptionMode
from placewise.solver.greedy.preemption import Preemptor, Target
from placewise.solver.greedy.slices import (
    Kept,
    kept_pods,
    old_slice,
    pinned_flavors,
)
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.workload import WlInfo


class Nomination:
    """The nomination half of :class:`~.scheduler.GreedyScheduler`."""

    snapshot: Snapshot
    state: ClusterState
    preemptor: Preemptor
    _refused: list[str]

    # -- nomination --------------------------------------------------------------

    def _oracle(self, wl: WlInfo, fr: FR, val: int) -> tuple[PreemptionMode, int]:
        targets = self.preemptor.get_targets(wl, {fr: val}, frozenset({fr}))
        quota = self.state.quota
        if not targets:
            return PreemptionMode.NO_CANDIDATES, quota.lowest_fitting_subtree(
                wl.cq, fr, val
            )[0]
        undo = self.state.simulate_removal(t.info for t in targets)
        borrow = quota.lowest_fitting_subtree(wl.cq, fr, val)[0]
        undo()
        if any(t.info.cq == wl.cq for t in targets):
            return PreemptionMode.PREEMPT, borrow
        return PreemptionMode.RECLAIM, borrow

    def assigner(
        self, info: WlInfo, pinned: dict[str, dict[str, str]] | None = None
    ) -> FlavorAssigner:
        return FlavorAssigner(info, self.snapshot, self.state, self._oracle, pinned)

    def _targets(self, fa: FlavorAssigner, asg: Assignment) -> list[Target]:
        requests = fa.tas_requests(asg)

        def tas_fits() -> frozenset[str] | None:
            found = fa.state.tas.find_workload_assignments(requests, quiet=True)
            if found.assignments is None:
                return None
            return frozenset(
                d.values[-1]
                for ta in found.assignments.values()
                for d in ta.domains
                if d.values
            )

        return self.preemptor.get_targets(
            fa.wl,
            asg.quota_usage(),
            asg.frs_need_preemption(),
            tas_fits if requests else None,
            requests or None,
        )

    def get_assignments(
        self, info: WlInfo, pinned: dict[str, dict[str, str]] | None = None
    ) -> tuple[Assignment, list[Target]]:
        old = old_slice(self.snapshot, self.state, info)
        if old is None:
            return self._assignments(info, pinned)
        # Its quota passes to the slice; its pods (and their room) stay.
        self.state.remove(old, tas_too=False)
        try:
            return self._assignments(info, pinned_flavors(old, pinned), kept_pods(old))
        finally:
            self.state.add(old, tas_too=False)

    def _assignments(
        self,
        info: WlInfo,
        pinned: dict[str, dict[str, str]] | None,
        kept: Kept | None = None,
    ) -> tuple[Assignment, list[Target]]:
        fa = self.assigner(info, pinned)
        fa.kept = kept or {}
        asg, targets = self._initial(fa)
        if asg.mode() is Mode.PREEMPT and (
            any(ps.topology.requests_tas for ps in info.obj.pod_sets) or fa.tas_only
        ):
            requests = fa.tas_requests(asg)
            if targets:
                undo = self.state.simulate_removal(t.info for t in targets)
                result = fa.find_topology(requests)
                undo()
            else:
                result = fa.find_topology(requests, empty=True)
            fa.apply_topology(asg, result)
        return asg, targets

    def _initial(self, fa: FlavorAssigner) -> tuple[Assignment, list[Target]]:
        full = fa.assign()
        mode = full.mode()
        if mode is Mode.FIT:
            return full, []
        if mode is Mode.PREEMPT:
            targets = self._targets(fa, full)
            self._refused = list(self.preemptor.blocked)
            if targets:
                return full, targets
        pod_sets = fa.wl.obj.pod_sets
        deltas = [p.count - (p.min_count or p.count) for p in pod_sets]
        total = sum(deltas)
        if total == 0:
            return full, []
        found: dict[int, tuple[Assignment, list[Target]]] = {}

        def ok(i: int) -> bool:
            counts = [
                p.count - (d * i) // total
                for p, d in zip(pod_sets, deltas, strict=True)
            ]
            asg = fa.assign(counts)
            m = asg.mode()
            if m is Mode.FIT:
                found[i] = (asg, [])
                return True
            if m is Mode.PREEMPT:
                t = self._targets(fa, asg)
                if t:
                    found[i] = (asg, t)
                    return True
            return False

        lo, hi = 0, total + 1
        last_good = 0
        while lo < hi:
            mid = (lo + hi) // 2
            if ok(mid):
                last_good = mid
                hi = mid
            else:
                lo = mid + 1
        if lo == last_good and lo in found:
            return found[lo]
        return full, []
