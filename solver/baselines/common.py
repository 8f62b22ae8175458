"""What every baseline shares: Kueue-style quota admission in priority/FIFO order.

A baseline stands for "what a cluster without placewise would do", so the
only thing it may differ in is *placement*; quota must be admitted exactly
as a ClusterQueue would allow it, otherwise a baseline could look better
than Kueue by ignoring quota.  :class:`BaselineScheduler` therefore owns the
walk over pending workloads (one global priority, then queue-time order;
StrictFIFO queues block behind their first failure), flavor candidates
(eligibility from :mod:`placewise.solver.kueue.eligibility`, resource-group order,
``whenCanBorrow``), quota fit on :class:`placewise.solver.kueue.quota.QuotaTree` (with
Kueue's partial admission down to ``minCount``), node capacity on
:class:`placewise.solver.kueue.tas.TasState`, and turning decisions into a Plan.  A
subclass only says where pods go (:meth:`BaselineScheduler.place`).

Baselines never preempt: neither kube-scheduler's default profile (for
gangs) nor a gang/binpack batch scheduler evicts Kueue workloads, and a
plan without preemptions cannot break a preemption rule.
"""

from __future__ import annotations

import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

import numpy as np

from placewise.models.cluster import PODS, ClusterQueue
from placewise.models.plan import Plan, PlanAdmission, PlanPending, SolverInfo
from placewise.models.snapshot import Snapshot
from placewise.models.workload import (
    PodSet,
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
    Workload,
)
from placewise.solver.baselines.records import (
    BaselineOutcome,
    BoolArray,
    FlavorChoice,
    FlavorIndex,
    IntArray,
    PartialGang,
    Placement,
    PodSetPlacement,
    PodSetStart,
)
from placewise.solver.kueue.eligibility import flavor_rejection, requests_tas
from placewise.solver.kueue.order import queue_order
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.kueue.tas import TasState
from placewise.solver.kueue.tas.types import CAP

MAX_FLAVOR_COMBINATIONS = 32
"""Flavor choices tried per workload; several resource groups multiply."""


class BaselineScheduler(ABC):
    """Priority/FIFO quota admission with a pluggable placement step."""

    name: str = "baseline"
    try_all_flavors: bool = True
    """Whether a placement failure moves on to the next quota-fitting flavor
    choice (a gang scheduler re-tries), or the first choice is final (Kueue
    quota admission without TAS picks one flavor, then pods are on their own)."""

    def __init__(self, snapshot: Snapshot, seed: int = 0) -> None:
        self._start = time.perf_counter()
        self.snap = snapshot
        self.seed = seed
        self.quota = QuotaTree(snapshot)
        self.tas = TasState.build(snapshot)
        self.admitted: dict[str, PlanAdmission] = {}
        self.reasons: dict[str, str] = {}
        self.partial: list[PartialGang] = []
        self._flavors: dict[str, FlavorIndex] = {}

    # -- the walk ---------------------------------------------------------

    def run(self) -> BaselineOutcome:
        blocked_strict: dict[str, str] = {}
        for w in sorted(self.snap.pending, key=queue_order):
            why = self.snap.blocked_reason(w)
            if why is None and self.snap.replaced_slice(w) is not None:
                # Growing a running job in place is Kueue's, not kube's.
                why = "elastic workload slice: the baselines do not replace slices"
            if why is not None:
                self.reasons[w.key] = why
                continue
            cq_name = self.snap.cluster_queue_of(w)
            assert cq_name is not None
            if cq_name in blocked_strict:
                self.reasons[w.key] = (
                    f"StrictFIFO: waiting behind {blocked_strict[cq_name]} in "
                    f"ClusterQueue {cq_name}"
                )
                continue
            cq = self.snap.cluster_queues[cq_name]
            if not self._admit(w, cq) and cq.queueing_strategy == "StrictFIFO":
                blocked_strict[cq_name] = w.key
        plan = self._plan(time.perf_counter() - self._start)
        return BaselineOutcome(plan=plan, partial=list(self.partial))

    def _admit(self, w: Workload, cq: ClusterQueue) -> bool:
        choices, why = self.flavor_choices(w, cq)
        if not choices:
            self.reasons[w.key] = why
            return False
        if not self.try_all_flavors:
            choices = choices[:1]
        failures: list[str] = []
        for choice in choices:
            placement = self.place(w, cq, choice)
            if placement.complete:
                self._commit_admission(w, cq, choice, placement)
                return True
            failures.append(
                f"flavor {', '.join(sorted(set(choice.flavors.values())))}: "
                f"{placement.failure}"
            )
            if not self.try_all_flavors:
                self._hold_partial(w, cq, choice, placement)
        self.reasons[w.key] = "; ".join(failures)
        return False

    @abstractmethod
    def place(self, w: Workload, cq: ClusterQueue, choice: FlavorChoice) -> Placement:
        """Place the pods of ``w``; capacity of committed pods is already taken.

        Implementations commit what they place through :meth:`take` so later
        pod sets see it, and :meth:`release` it again if the attempt is
        abandoned (all-or-nothing); what stays taken after a failed attempt
        holds the nodes (pods bound without their gang).
        """

    # -- flavors and quota ------------------------------------------------

    def needed(self, cq: ClusterQueue, ps: PodSet) -> list[str]:
        """Resources that need a flavor: non-zero requests, plus ``pods``."""
        out = [r for r, v in sorted(ps.requests.items()) if v > 0 and r != PODS]
        if cq.group_of(PODS) is not None:
            out.append(PODS)
        return out

    def serving(self, cq: ClusterQueue, w: Workload, ps: PodSet) -> dict[str, int]:
        """Resource -> resource group for ``ps``: the queue's rule
        (``ClusterQueue.serving_groups``) over what its pod-set group needs,
        as the validator reads it."""
        mates = [
            p
            for p in w.pod_sets
            if p is ps or (ps.topology.group and p.topology.group == ps.topology.group)
        ]
        return cq.serving_groups(r for p in mates for r in self.needed(cq, p))

    def usage_of(
        self,
        cq: ClusterQueue,
        w: Workload,
        flavors: Mapping[int, str],
        counts: Sequence[int],
    ) -> dict[FR, int]:
        out: dict[FR, int] = {}
        for ps, count in zip(w.pod_sets, counts, strict=True):
            serving = self.serving(cq, w, ps)
            for r in self.needed(cq, ps):
                group = serving[r]
                per_pod = 1 if r == PODS else ps.requests.get(r, 0)
                fr = (flavors[group], r)
                out[fr] = out.get(fr, 0) + per_pod * count
        return out

    def _fits(self, cq: ClusterQueue, usage: Mapping[FR, int]) -> bool:
        return all(v <= self.quota.available(cq.name, fr) for fr, v in usage.items())

    def _quota_counts(
        self, cq: ClusterQueue, w: Workload, flavors: Mapping[int, str]
    ) -> tuple[int, ...] | None:
        """The largest pod counts quota admits: full, else Kueue's partial
        admission (every minCount pod set scaled down together, binary search)."""
        full = tuple(ps.count for ps in w.pod_sets)
        if self._fits(cq, self.usage_of(cq, w, flavors, full)):
            return full
        mins = tuple(
            ps.min_count if ps.min_count is not None else ps.count for ps in w.pod_sets
        )
        if mins == full:
            return None
        steps = max(c - m for c, m in zip(full, mins, strict=True))

        def counts_at(k: int) -> tuple[int, ...]:
            return tuple(
                m + (c - m) * k // steps for c, m in zip(full, mins, strict=True)
            )

        lo, hi = 0, steps - 1
        best: tuple[int, ...] | None = None
        while lo <= hi:
            mid = (lo + hi) // 2
            counts = counts_at(mid)
            if self._fits(cq, self.usage_of(cq, w, flavors, counts)):
                best, lo = counts, mid + 1
            else:
                hi = mid - 1
        return best

    def flavor_choices(
        self, w: Workload, cq: ClusterQueue
    ) -> tuple[list[FlavorChoice], str]:
        """Quota-fitting flavor choices in the order Kueue would prefer them.

        Within each resource group flavors keep the queue's order; with
        ``whenCanBorrow: TryNextFlavor`` choices that fit without borrowing
        come first, with ``MayStopSearch`` the first fit wins even if it
        borrows.  Returns the choices, or why there is none.
        """
        groups: dict[int, list[PodSet]] = {}
        for ps in w.pod_sets:
            serving = self.serving(cq, w, ps)
            for r in self.needed(cq, ps):
                group = serving.get(r)
                if group is None:
                    return [], f"resource {r} unavailable in ClusterQueue {cq.name}"
                members = groups.setdefault(group, [])
                if ps not in members:
                    members.append(ps)
        candidates: list[list[str]] = []
        order = sorted(groups)
        for group in order:
            rg = cq.resource_groups[group]
            ok = [
                fq.name
                for fq in rg.flavors
                if flavor_rejection(
                    self.snap,
                    cq,
                    fq.name,
                    groups[group],
                    [r for r in rg.covered_resources if cq.group_of(r) == group],
                )
                is None
            ]
            if not ok:
                return [], (
                    "no eligible flavor for resources "
                    f"{', '.join(rg.covered_resources)} in ClusterQueue {cq.name}"
                )
            candidates.append(ok)
        fitting: list[FlavorChoice] = []
        why = f"insufficient unused quota in ClusterQueue {cq.name}"
        for combo in itertools.islice(
            itertools.product(*candidates), MAX_FLAVOR_COMBINATIONS
        ):
            flavors = dict(zip(order, combo, strict=True))
            problem = self._tas_problem(w, cq, flavors)
            if problem is not None:
                why = problem
                continue
            counts = self._quota_counts(cq, w, flavors)
            if counts is None:
                continue
            usage = self.usage_of(cq, w, flavors, counts)
            borrows = any(
                self.quota.borrowing_with(cq.name, fr, v) for fr, v in usage.items()
            )
            fitting.append(FlavorChoice(flavors, counts, usage, borrows))
        if not fitting:
            return [], why
        if cq.flavor_fungibility.when_can_borrow == "TryNextFlavor":
            fitting.sort(key=lambda c: c.borrows)  # stable: flavor order kept
        return fitting, ""

    def _tas_problem(
        self, w: Workload, cq: ClusterQueue, flavors: Mapping[int, str]
    ) -> str | None:
        """Why these flavors cannot place the workload's topology requests.

        A topology-placed pod set takes exactly one TAS flavor, and its slice
        layers must nest inside the requested level and each other (Kueue
        cannot place them otherwise, kueue-semantics §6.2).
        """
        for ps in w.pod_sets:
            if not requests_tas(ps, self.snap, cq):
                continue
            found = self.tas_flavors(cq, ps, flavors)
            if len(found) != 1:
                return f"pod set {ps.name} needs exactly one TAS flavor, got {found}"
            topo = self.snap.topologies.get(
                self.snap.flavors[found[0]].topology_name or ""
            )
            if topo is None:
                return f"flavor {found[0]} has no Topology"
            req = ps.topology
            outer = req.required or req.preferred
            chain = ([outer] if outer else []) + [s.level for s in req.slices]
            if any(level not in topo.levels for level in chain):
                return f"pod set {ps.name} asks for a level Topology {topo.name} lacks"
            depth = [topo.levels.index(level) for level in chain]
            for i in range(1, len(depth)):
                strict = i > 1 or not outer
                if depth[i] < depth[i - 1] or (strict and depth[i] == depth[i - 1]):
                    return f"pod set {ps.name}: slice levels do not nest"
        return None

    def tas_flavors(
        self, cq: ClusterQueue, ps: PodSet, flavors: Mapping[int, str]
    ) -> list[str]:
        out: set[str] = set()
        serving = cq.serving_groups(self.needed(cq, ps))
        for r in self.needed(cq, ps):
            group = serving.get(r)
            if group is None:
                continue
            f = self.snap.flavors.get(flavors[group])
            if f is not None and f.is_tas:
                out.add(f.name)
        return sorted(out)

    def tas_flavor(
        self, cq: ClusterQueue, ps: PodSet, choice: FlavorChoice
    ) -> str | None:
        """The TAS flavor a pod set is placed on, or None if it is not placed."""
        if not requests_tas(ps, self.snap, cq):
            return None
        found = self.tas_flavors(cq, ps, choice.flavors)
        return found[0] if found else None

    def start(
        self, cq: ClusterQueue, ps: PodSet, count: int, choice: FlavorChoice
    ) -> PodSetStart:
        """The placement record of one pod set and its flavor's arrays.

        A pod set that is not topology-placed (a non-TAS flavor) comes back
        counted in full, with nothing to place.
        """
        per_pod = {r: v for r, v in ps.requests.items() if v > 0 and r != PODS}
        flavor = self.tas_flavor(cq, ps, choice)
        placed = PodSetPlacement(ps.name, 0, count, flavor, per_pod=per_pod)
        if flavor is None:
            placed.count = count
            return PodSetStart(ps, placed)
        fi = self.flavor_index(flavor)
        vec = self.demand_vector(ps)
        if fi is None or vec is None:
            why = f"no {flavor} node offers pod set {ps.name}'s resources"
            return PodSetStart(ps, placed, problem=why)
        return PodSetStart(ps, placed, fi, vec)

    # -- capacity -----------------------------------------------------------

    def flavor_index(self, flavor: str) -> FlavorIndex | None:
        """Static arrays of a TAS flavor with nodes, or None."""
        if flavor in self._flavors:
            return self._flavors[flavor]
        if flavor not in self.tas.flavors():
            return None
        tree = self.tas.tree(flavor)
        n_res = len(self.tas.resources)
        alloc = np.zeros((n_res, tree.n_leaves), dtype=np.int64)
        for leaf, members in enumerate(tree.leaf_nodes):
            for node in members:
                for r, v in node.allocatable.items():
                    i = self.tas.resource_index.get(r)
                    if i is not None:
                        alloc[i, leaf] = min(CAP, int(alloc[i, leaf]) + v)
        depth = tree.depth
        domain_of: list[IntArray] = [np.zeros(0, dtype=np.int64)] * depth
        domain_of[depth - 1] = np.arange(tree.n_leaves, dtype=np.int64)
        for level in range(depth - 2, -1, -1):
            domain_of[level] = tree.parent[level + 1][domain_of[level + 1]]
        found = FlavorIndex(tree=tree, alloc=alloc, domain_of=domain_of)
        self._flavors[flavor] = found
        return found

    def demand_vector(self, ps: PodSet) -> IntArray | None:
        """Per-pod demand over the TAS resource rows (one ``pods`` each), or
        None when a requested resource exists on no TAS node."""
        vec = np.zeros(len(self.tas.resources), dtype=np.int64)
        for r, v in ps.requests.items():
            if v <= 0 or r == PODS:
                continue
            i = self.tas.resource_index.get(r)
            if i is None:
                return None
            vec[i] = min(CAP, v)
        vec[self.tas.resource_index[PODS]] += 1
        return vec

    def leaf_mask(self, fi: FlavorIndex, ps: PodSet) -> BoolArray:
        """Leaves this pod template may land on (taints, selector, affinity)."""
        tree = fi.tree
        tolerations = ps.placement.tolerations + tree.tolerations
        filt = tree.leaf_filter(ps.placement, tolerations)
        if filt.mask is None:
            return np.ones(tree.n_leaves, dtype=np.bool_)
        return filt.mask.copy()

    @staticmethod
    def fit_counts(free: IntArray, vec: IntArray) -> IntArray:
        """Pods of demand ``vec`` each leaf (column of ``free``) still holds."""
        out = np.full(free.shape[1], CAP, dtype=np.int64)
        for i in np.flatnonzero(vec > 0).tolist():
            np.minimum(out, free[i] // vec[i], out=out)
        np.maximum(out, 0, out=out)
        return out

    def take(self, placed: PodSetPlacement) -> None:
        """Commit a pod set's pods to node capacity (later pod sets see them)."""
        if placed.flavor is None or not placed.leaf_pods:
            return
        placed.topology = self._assignment(placed.flavor, placed.leaf_pods)
        self.tas.add_usage(placed.flavor, placed.topology, placed.per_pod)

    def release(self, placed: PodSetPlacement) -> None:
        if placed.flavor is None or placed.topology is None:
            return
        self.tas.remove_usage(placed.flavor, placed.topology, placed.per_pod)

    def _assignment(
        self, flavor: str, leaf_pods: Mapping[int, int]
    ) -> TopologyAssignment:
        tree = self.tas.tree(flavor)
        domains = tuple(
            TopologyDomain(values=tree.leaf_values(leaf), count=n)
            for leaf, n in sorted(leaf_pods.items())
            if n > 0
        )
        return TopologyAssignment(levels=tree.assignment_levels, domains=domains)

    def topology_failure(
        self,
        fi: FlavorIndex,
        ps: PodSet,
        leaf_pods: Mapping[int, int],
        group_domain: tuple[int, int] | None = None,
    ) -> str | None:
        """Why a placement breaks the pod set's required level or slices.

        The placers aim to honour both; this re-check is what guarantees
        that no placement reaching the plan can fail the validator's
        topology rules (e.g. a multi-layer slice request a placer only
        approximates).
        """
        tree = fi.tree
        levels = tree.levels
        leaves = [leaf for leaf, n in leaf_pods.items() if n > 0]
        req = ps.topology.required
        if req is not None and req in levels:
            k = levels.index(req)
            doms = {int(fi.domain_of[k][leaf]) for leaf in leaves}
            if group_domain is not None and group_domain[0] == k:
                doms.add(group_domain[1])
            if len(doms) > 1:
                return f"pods span {len(doms)} {req} domains but one is required"
        for layer in ps.topology.slices:
            if layer.level not in levels:
                return f"slice level {layer.level} is not in the topology"
            k = levels.index(layer.level)
            per: dict[int, int] = {}
            for leaf in leaves:
                d = int(fi.domain_of[k][leaf])
                per[d] = per.get(d, 0) + leaf_pods[leaf]
            if any(n % layer.size for n in per.values()):
                return f"a {layer.level} domain holds a partial slice of {layer.size}"
        return None

    # -- results --------------------------------------------------------------

    def _commit_admission(
        self, w: Workload, cq: ClusterQueue, choice: FlavorChoice, placement: Placement
    ) -> None:
        counts = tuple(p.count for p in placement.pod_sets)
        usage = self.usage_of(cq, w, choice.flavors, counts)
        self.quota.add_usage(cq.name, usage)
        psas = []
        for ps, placed in zip(w.pod_sets, placement.pod_sets, strict=True):
            flavors: dict[str, str] = {}
            resource_usage: dict[str, int] = {}
            serving = self.serving(cq, w, ps)
            for r in self.needed(cq, ps):
                flavors[r] = choice.flavors[serving[r]]
                per_pod = 1 if r == PODS else ps.requests.get(r, 0)
                resource_usage[r] = per_pod * placed.count
            psas.append(
                PodSetAssignment(
                    name=ps.name,
                    flavors=flavors,
                    resource_usage=resource_usage,
                    count=placed.count,
                    topology_assignment=placed.topology,
                )
            )
        self.admitted[w.key] = PlanAdmission(
            workload=w.key, cluster_queue=cq.name, pod_set_assignments=tuple(psas)
        )

    def _hold_partial(
        self, w: Workload, cq: ClusterQueue, choice: FlavorChoice, placement: Placement
    ) -> None:
        """Quota was reserved and some pods are bound: both stay held."""
        self.quota.add_usage(cq.name, choice.usage)
        placed = sum(p.count for p in placement.pod_sets)
        total = sum(p.asked for p in placement.pod_sets)
        nodes: dict[str, dict[str, int]] = {}
        held = 0
        for ps, p in zip(w.pod_sets, placement.pod_sets, strict=True):
            held += p.count * sum(ps.requests.get(r, 0) for r in ACCELERATORS)
            if p.flavor is None:
                continue
            tree = self.tas.tree(p.flavor)
            for leaf, n in p.leaf_pods.items():
                slot = nodes.setdefault(tree.leaf_values(leaf)[-1], {})
                for r, v in p.per_pod.items():
                    slot[r] = slot.get(r, 0) + v * n
                slot[PODS] = slot.get(PODS, 0) + n
        self.partial.append(PartialGang(w.key, placed, total, held, nodes))

    def _plan(self, wall: float) -> Plan:
        admissions = tuple(v for _, v in sorted(self.admitted.items()))
        pending = tuple(
            PlanPending(workload=w.key, reason=self.reasons.get(w.key, "pending"))
            for w in self.snap.pending
            if w.key not in self.admitted
        )
        return Plan(
            solver=SolverInfo(name=self.name, status="FEASIBLE", wall_seconds=wall),
            admissions=admissions,
            pending=pending,
        )
