"""Kueue's flavor assigner (kueue-semantics §4), with TAS placement (§4.7).

Algorithm overview (``flavorassigner.go: assignFlavors``):
  1. per pod-set group (``podSetGroupName``, else each pod set alone), in
     spec order: for every requested resource pick one flavor of its
     resource group (eligibility, then per-resource quota fit, then the
     fungibility stop rule); earlier groups' usage counts as assumed;
  2. if nothing is NoFit, place TAS pod sets: with the current usage when
     the quota fits (failure downgrades to Preempt), then on an empty
     cluster when preemption is needed (failure is NoFit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from placewise.models.cluster import ClusterQueue
from placewise.models.quantity import format_units
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSet, TopologyAssignment
from placewise.solver.greedy.modes import (
    GranularMode,
    Mode,
    PreemptionMode,
    is_preferred,
    should_try_next,
)
from placewise.solver.greedy.slices import Kept, merged
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.eligibility import flavor_rejection, requests_tas, tas_only
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.tas import TasPodSetRequest, TasResult
from placewise.solver.kueue.workload import TasUsage, WlInfo

Oracle = Callable[[WlInfo, FR, int], tuple[PreemptionMode, int]]
"""Simulated preemption for one flavor-resource: (possibility, borrow after)."""


@dataclass(slots=True)
class FlavorPick:
    flavor: str
    mode: Mode
    borrow: int


@dataclass(slots=True)
class PodSetDraft:
    """One pod set's part of an assignment (Kueue's PodSetAssignment)."""

    pod_set: PodSet
    count: int
    requests: dict[str, int]
    flavors: dict[str, FlavorPick] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    error: str | None = None
    topology: TopologyAssignment | None = None

    @property
    def name(self) -> str:
        return self.pod_set.name

    def mode(self) -> Mode:
        if self.error is not None:
            return Mode.NO_FIT
        if not self.reasons:
            return Mode.FIT
        if not self.flavors:
            return Mode.NO_FIT
        return min(p.mode for p in self.flavors.values())

    def set_mode(self, mode: Mode) -> None:
        for pick in self.flavors.values():
            pick.mode = mode


@dataclass(slots=True)
class Assignment:
    pod_sets: list[PodSetDraft]
    usage: dict[FR, int] = field(default_factory=dict)
    borrowing: int = 0
    forced: Mode | None = None
    tas_usage: list[TasUsage] = field(default_factory=list)

    def mode(self) -> Mode:
        if not self.pod_sets:
            return Mode.NO_FIT
        if self.forced is not None:
            return self.forced
        return min(ps.mode() for ps in self.pod_sets)

    def update_mode(self, name: str, mode: Mode) -> None:
        for ps in self.pod_sets:
            if ps.name == name:
                ps.set_mode(mode)
                self.forced = mode

    def frs_need_preemption(self) -> frozenset[FR]:
        return frozenset(
            (pick.flavor, r)
            for ps in self.pod_sets
            for r, pick in ps.flavors.items()
            if pick.mode is Mode.PREEMPT
        )

    def quota_usage(self) -> dict[FR, int]:
        """Kueue's TotalRequestsFor: non-zero requests keyed by their flavor."""
        return {fr: v for fr, v in self.usage.items() if v}

    def message(self) -> str:
        parts = []
        for ps in self.pod_sets:
            if ps.error is not None:
                return f"failed to assign flavors to pod set {ps.name}: {ps.error}"
            if ps.reasons:
                parts.append(
                    f"couldn't assign flavors to pod set {ps.name}: "
                    + ", ".join(sorted(ps.reasons))
                )
        return "; ".join(parts)


def pod_set_requests(cq: ClusterQueue, ps: PodSet, count: int) -> dict[str, int]:
    """Total requests of ``count`` pods, plus ``pods`` when the queue covers it."""
    out = {r: v * count for r, v in ps.requests.items()}
    if cq.group_of("pods") is not None:
        out["pods"] = count
    return out


class FlavorAssigner:
    """Assigns flavors (and TAS placements) for one workload in its queue."""

    def __init__(
        self,
        wl: WlInfo,
        snapshot: Snapshot,
        state: ClusterState,
        oracle: Oracle,
        pinned: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.wl = wl
        self.snapshot = snapshot
        self.state = state
        self.cq = snapshot.cluster_queues[wl.cq]
        self.oracle = oracle
        self.pinned = pinned
        self.tas_only = tas_only(snapshot, self.cq)
        self.kept: Kept = {}
        """An elastic slice's running pods per pod set: they stay where they
        are and only the growth is placed (:mod:`.slices`)."""

    # -- step 1: flavors per group ------------------------------------------

    def assign(self, counts: Sequence[int] | None = None) -> Assignment:
        pod_sets = self.wl.obj.pod_sets
        drafts = [
            PodSetDraft(ps, c, pod_set_requests(self.cq, ps, c))
            for ps, c in zip(
                pod_sets, counts or [p.count for p in pod_sets], strict=True
            )
        ]
        asg = Assignment(pod_sets=[])
        groups: dict[str, list[PodSetDraft]] = {}
        for i, d in enumerate(drafts):
            groups.setdefault(d.pod_set.topology.group or f"#{i}", []).append(d)
        for members in groups.values():
            if not self._assign_group(members, asg):
                return asg
        if asg.mode() is Mode.NO_FIT:
            return asg
        self._place_tas(asg)
        return asg

    def _assign_group(self, members: list[PodSetDraft], asg: Assignment) -> bool:
        requests: dict[str, int] = {}
        for d in members:
            for r, v in d.requests.items():
                requests[r] = requests.get(r, 0) + v
        chosen: dict[str, FlavorPick] | None = {}
        reasons: list[str] = []
        error = None
        for res in sorted(requests):
            assert chosen is not None
            qty = requests[res]
            if self.cq.group_of(res) is None and qty == 0:
                continue
            if res in chosen:
                continue
            picks, why, err = self._find_flavor(members, requests, res, asg.usage)
            if err is not None or (not picks and requests):
                chosen, reasons, error = None, why, err
                break
            chosen.update(picks)
            reasons.extend(why)
        failed = False
        for d in members:
            d.flavors = self._resolve(d, chosen or {})
            d.reasons = list(reasons)
            d.error = error
            asg.pod_sets.append(d)
            for r, pick in d.flavors.items():
                asg.borrowing = max(asg.borrowing, pick.borrow)
                fr = (pick.flavor, r)
                asg.usage[fr] = asg.usage.get(fr, 0) + d.requests.get(r, 0)
            if error is not None or (d.requests and not d.flavors):
                failed = True
        return not failed

    def _resolve(
        self, d: PodSetDraft, chosen: Mapping[str, FlavorPick]
    ) -> dict[str, FlavorPick]:
        if d.requests:
            return {r: p for r, p in chosen.items() if r in d.requests}
        if d.pod_set.topology.group:
            return {
                r: p
                for r, p in chosen.items()
                if self.snapshot.flavors[p.flavor].is_tas
            }
        return {}

    def _find_flavor(
        self,
        members: list[PodSetDraft],
        requests: Mapping[str, int],
        res: str,
        assumed: Mapping[FR, int],
    ) -> tuple[dict[str, FlavorPick], list[str], str | None]:
        gidx = self.cq.group_of(res)
        if gidx is None:
            return {}, [f"resource {res} unavailable in ClusterQueue"], None
        group = self.cq.resource_groups[gidx]
        covered = {
            r: v for r, v in sorted(requests.items()) if r in group.covered_resources
        }
        reasons: list[str] = []
        best: dict[str, FlavorPick] = {}
        best_mode = GranularMode.worst()
        ff = self.cq.flavor_fungibility
        for fq in group.flavors:
            name = fq.name
            if self.pinned is not None and not any(
                self.pinned.get(d.name, {}).get(res) == name for d in members
            ):
                reasons.append(self._pin_refusal(name, res, members))
                continue
            why = self._eligible(name, members, group.covered_resources)
            if why is not None:
                reasons.append(why)
                continue
            picks: dict[str, FlavorPick] = {}
            rep = GranularMode.best()
            for r, val in covered.items():
                fr = (name, r)
                pmode, borrow, why = self._fits_quota(fr, assumed.get(fr, 0), val)
                if why:
                    reasons.append(why)
                mode = GranularMode(pmode, borrow)
                if is_preferred(rep, mode, ff):
                    rep = mode
                if rep.mode is PreemptionMode.NO_FIT:
                    continue
                picks[r] = FlavorPick(name, pmode.assignment_mode, borrow)
            if not should_try_next(rep, ff):
                best, best_mode = picks, rep
                break
            if is_preferred(rep, best_mode, ff):
                best, best_mode = picks, rep
        if best_mode.mode is PreemptionMode.FIT:
            return best, [], None
        return best, reasons, None

    def _eligible(
        self, name: str, members: list[PodSetDraft], covered: Sequence[str]
    ) -> str | None:
        return flavor_rejection(
            self.snapshot, self.cq, name, [d.pod_set for d in members], covered
        )

    def _fits_quota(
        self, fr: FR, assumed: int, request: int
    ) -> tuple[PreemptionMode, int, str | None]:
        """kueue-semantics §4.3 (``fitsResourceQuota``)."""
        quota = self.state.quota
        cq = self.wl.cq
        flavor, res = fr
        val = assumed + request
        max_capacity = quota.potential_available(cq, fr)
        if val > max_capacity:
            return (
                PreemptionMode.NO_FIT,
                0,
                (
                    f"insufficient quota for {res} in flavor {flavor}, previously "
                    f"considered podsets requests ({format_units(res, assumed)}) + "
                    f"current podset request ({format_units(res, request)}) > maximum "
                    f"capacity ({format_units(res, max_capacity)})"
                ),
            )
        borrow, may_reclaim = quota.lowest_fitting_subtree(cq, fr, val)
        available = quota.available(cq, fr)
        if val <= available:
            return PreemptionMode.FIT, borrow, None
        why = (
            f"insufficient unused quota for {res} in flavor {flavor}, "
            f"{format_units(res, val - available)} more needed"
        )
        pre = self.cq.preemption
        # Under fair sharing a borrowing preemptor may reclaim (by share)
        # wherever reclaimWithinCohort allows; borrowWithinCohort is ignored.
        can_borrow_preempt = pre.borrow_within_cohort.policy != "Never" or (
            self.snapshot.fair_sharing.enable and pre.reclaim_within_cohort != "Never"
        )
        if quota.nominal(cq, fr) >= val or may_reclaim or can_borrow_preempt:
            mode, borrow_after = self.oracle(self.wl, fr, val)
            return mode, borrow_after, why
        return PreemptionMode.NO_FIT, borrow, why

    def _pin_refusal(self, name: str, res: str, members: list[PodSetDraft]) -> str:
        """Why a pinned search skips ``name``: an elastic slice keeps its old
        slice's flavors (Kueue's words), a re-check its nominated ones."""
        if self.snapshot.replaced_slice(self.wl.obj) is not None and self.pinned:
            was = self.pinned.get(members[0].name, {}).get(res)
            return (
                f"could not assign {name} flavor since the original workload is "
                f"assigned: {was}"
            )
        return (
            f"skipping flavor {name} as it is not found in the "
            f"nomination mapping for resource {res}"
        )

    # -- step 2: topology ------------------------------------------------------

    def tas_requests(self, asg: Assignment) -> dict[str, list[list[TasPodSetRequest]]]:
        """Per TAS flavor, groups of pod sets still needing a placement."""
        out: dict[str, dict[str, list[TasPodSetRequest]]] = {}
        for i, d in enumerate(asg.pod_sets):
            ps = d.pod_set
            if not requests_tas(ps, self.snapshot, self.cq) or d.error or d.count == 0:
                continue
            if d.topology is not None:
                continue
            count = d.count
            if ps.name in self.kept:
                count -= self.kept[ps.name][0]
                if count <= 0:
                    d.topology = self.kept[ps.name][1]
                    continue
            tas = sorted(
                {
                    p.flavor
                    for p in d.flavors.values()
                    if self.snapshot.flavors[p.flavor].is_tas
                }
            )
            if len(tas) != 1:
                d.error = (
                    "no TAS flavor assigned"
                    if not tas
                    else f"multiple TAS flavors assigned: {', '.join(tas)}"
                )
                asg.forced = None
                continue
            req = TasPodSetRequest(
                name=ps.name,
                count=count,
                requests=ps.requests,
                topology=ps.topology,
                placement=ps.placement,
            )
            out.setdefault(tas[0], {}).setdefault(
                ps.topology.group or f"#{i}", []
            ).append(req)
        return {f: list(groups.values()) for f, groups in sorted(out.items())}

    def find_topology(
        self, requests: Mapping[str, list[list[TasPodSetRequest]]], empty: bool = False
    ) -> TasResult:
        """Place every TAS flavor's groups; later flavors see earlier ones' pods."""
        return self.state.tas.find_workload_assignments(requests, empty=empty)

    def apply_topology(self, asg: Assignment, result: TasResult) -> None:
        for d in asg.pod_sets:
            if result.assignments and d.name in result.assignments:
                d.topology = result.assignments[d.name]
                if d.name in self.kept:
                    d.topology = merged(self.kept[d.name][1], d.topology)
                    if d.topology is None:
                        d.error = "the replaced slice is placed on other levels"
        asg.tas_usage = self.tas_usage(asg)

    def tas_usage(self, asg: Assignment) -> list[TasUsage]:
        out = []
        for d in asg.pod_sets:
            if d.topology is None:
                continue
            flavor = next(
                p.flavor
                for p in d.flavors.values()
                if self.snapshot.flavors[p.flavor].is_tas
            )
            out.append(TasUsage(flavor, d.topology, dict(d.pod_set.requests)))
        return out

    def _place_tas(self, asg: Assignment) -> None:
        requests = self.tas_requests(asg)
        if self.kept:
            asg.tas_usage = self.tas_usage(asg)  # kept pods, placed or not
        if asg.mode() is Mode.FIT and requests:
            result = self.find_topology(requests)
            if result.assignments is None:
                failed = (
                    result.failed_pod_set or next(iter(requests.values()))[0][0].name
                )
                for d in asg.pod_sets:
                    if d.name == failed:
                        d.reasons.append(result.reason or "topology placement failed")
                asg.update_mode(failed, Mode.PREEMPT)
            else:
                self.apply_topology(asg, result)
        if asg.mode() is Mode.PREEMPT and requests:
            result = self.find_topology(requests, empty=True)
            if result.assignments is None:
                failed = (
                    result.failed_pod_set or next(iter(requests.values()))[0][0].name
                )
                for d in asg.pod_sets:
                    if d.name == failed:
                        d.reasons.append(result.reason or "topology placement failed")
                asg.update_mode(failed, Mode.NO_FIT)
            else:
                for groups in requests.values():
                    for group in groups:
                        for r in group:
                            asg.update_mode(r.name, Mode.PREEMPT)
