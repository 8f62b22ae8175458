"""Compile a snapshot into the index-based data the CP-SAT model is built from.

Everything here is static for one solve: which pending workloads the model
decides (free) and which it only accounts for (fixed), each pod-set group's
eligible flavors per resource group, the quota tree in §9's linear form,
TAS leaves with their free capacity, and which running workloads each
pending workload may preempt.  Pods of a pod set are identical, so
placements are integer counts per leaf, never Booleans per pod.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from placewise.models.cluster import HOSTNAME_LABEL, ClusterQueue
from placewise.models.plan import PlanAdmission, PlanPreemption
from placewise.models.quantity import UNLIMITED
from placewise.models.scheduling import untolerated
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Admission, PodSet, Workload
from placewise.solver.baselines.common import queue_order
from placewise.solver.eligibility import flavor_rejection, requests_tas
from placewise.solver.greedy.preemption import satisfies_policy
from placewise.solver.greedy.state import WlInfo, running_info
from placewise.solver.quota import FR, QuotaNode, QuotaTree

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
PODS = "pods"
MAX_REQUEST = 1 << 50
"""Pod-set requests above this stay out of the model (coefficients must fit
int64 with room for sums); no finite quota could admit them anyway."""


@dataclass(slots=True)
class Leaf:
    """A TAS capacity unit: one node (hostname leaves) or an aggregated leaf."""

    idx: int
    key: tuple[str, ...]
    """("node", name) — shared by every hostname-level flavor — or
    ("leaf", flavor, *path) for aggregated leaves."""
    free: dict[str, int]
    node: str | None


@dataclass(slots=True)
class FlavorTopo:
    """One TAS flavor: its levels and leaves (by path)."""

    name: str
    levels: tuple[str, ...]
    hostname: bool
    leaves: list[int]
    paths: dict[int, tuple[str, ...]]
    """leaf -> values from the highest level down to the leaf."""
    by_value: dict[tuple[str, ...], int] = field(default_factory=dict)
    """topologyAssignment domain values (hostname only, or the full path,
    as Kueue writes them) -> leaf."""

    def assignment_values(self, leaf: int) -> tuple[str, ...]:
        path = self.paths[leaf]
        return path[-1:] if self.hostname else path


@dataclass(slots=True)
class PodSetData:
    idx: int
    wl: int
    ps: PodSet
    group: int
    tas: bool
    min_count: int
    count: int
    requests: dict[str, int]
    """Per pod, plus ``pods: 1`` when the queue covers ``pods``."""


@dataclass(slots=True)
class GroupData:
    """Pod sets sharing flavors (a podSetGroupName group, or one pod set)."""

    idx: int
    wl: int
    pod_sets: list[int]
    flavors: dict[int, list[str]]
    """resource group index -> eligible flavors (in the queue's order)."""


@dataclass(slots=True)
class WorkloadData:
    idx: int
    info: WlInfo
    cq: ClusterQueue
    groups: list[int] = field(default_factory=list)
    pod_sets: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.info.key

    @property
    def obj(self) -> Workload:
        return self.info.obj


@dataclass(slots=True)
class VictimData:
    idx: int
    info: WlInfo
    leaf_usage: dict[int, dict[str, int]]
    """TAS usage this workload holds per leaf (released if preempted)."""


class Pair(NamedTuple):
    """A pending workload that may evict a running one."""

    workload: int
    frs: frozenset[FR]
    """Shared flavor-resources on which the victim's queue (and every
    cohort up to the common ancestor) already borrows."""
    need_nominal: bool
    """borrowWithinCohort does not allow it: the preemptor must end within
    its nominal quota."""
    dynamic: frozenset[FR] = frozenset()
    """Shared flavor-resources on which only the victim's queue is not yet
    borrowing: valid if the plan's admissions into that queue make it
    borrow (the validator judges borrowing at the plan's peak usage)."""


@dataclass(slots=True)
class ModelData:
    snapshot: Snapshot
    tree: QuotaTree
    workloads: list[WorkloadData]
    groups: list[GroupData]
    pod_sets: list[PodSetData]
    victims: list[VictimData]
    leaves: list[Leaf]
    topos: dict[str, FlavorTopo]
    base_usage: dict[str, dict[FR, int]]
    """Per queue: usage of every quota holder that is not a free decision."""
    pairs: dict[int, list[Pair]]
    """victim -> the pending workloads that may evict it."""
    strict_chains: list[list[int]]
    unsupported: dict[str, str]
    fixed_preemptions: list[PlanPreemption] = field(default_factory=list)
    """Preemptions decided outside the model (with ``removed``)."""
    allowed_nodes: frozenset[str] | None = None
    """Only these nodes may receive new placements (an LNS neighbourhood)."""
    max_leaves: int | None = None
    """Cap on candidate leaves per pod set and flavor (large instances)."""
    fixed_admissions: list[PlanAdmission] = field(default_factory=list)
    cache: dict[str, dict[Any, Any]] = field(default_factory=dict)
    """Per-solve memo of derived arrays (leaf capacity, node masks)."""
    """Admissions decided outside the model (e.g. by greedy for workloads the
    model cannot express); they are part of the returned plan."""


def _leaf_tables(snap: Snapshot) -> tuple[list[Leaf], dict[str, FlavorTopo]]:
    """TAS leaves with free capacity = allocatable - non-TAS pods - TAS usage."""
    leaves: list[Leaf] = []
    by_key: dict[tuple[str, ...], int] = {}
    topos: dict[str, FlavorTopo] = {}
    pod_usage = snap.pod_usage_by_node
    for name, flavor in sorted(snap.flavors.items()):
        topo = snap.topologies.get(flavor.topology_name or "")
        if topo is None:
            continue
        hostname = topo.levels[-1] == HOSTNAME_LABEL
        ft = FlavorTopo(name, topo.levels, hostname, [], {})
        for node in snap.flavor_nodes(flavor):
            path = tuple(node.labels[level] for level in topo.levels)
            key = ("node", node.name) if hostname else ("leaf", name, *path)
            fresh = key not in by_key
            if fresh:
                by_key[key] = len(leaves)
                leaves.append(
                    Leaf(len(leaves), key, {}, node.name if hostname else None)
                )
            leaf = leaves[by_key[key]]
            if leaf.idx not in ft.paths:
                ft.leaves.append(leaf.idx)
            if fresh or not hostname:
                # A node shared by several hostname-level flavors is one leaf
                # whose capacity is counted once; aggregated leaves sum nodes.
                used = pod_usage.get(node.name, {})
                for r, v in node.allocatable.items():
                    leaf.free[r] = leaf.free.get(r, 0) + v - used.get(r, 0)
            ft.paths[by_key[key]] = path
            ft.by_value[path[-1:] if hostname else path] = by_key[key]
        topos[name] = ft
    return leaves, topos


def admitted_info(snap: Snapshot, adm: PlanAdmission) -> WlInfo:
    """A plan's admission seen as a quota holder (for fixed decisions)."""
    w = snap.workloads[adm.workload]
    obj = w.model_copy(
        update={
            "admission": Admission(
                cluster_queue=adm.cluster_queue,
                pod_set_assignments=adm.pod_set_assignments,
            ),
            "quota_reserved": True,
        }
    )
    return running_info(snap, obj)


RESIDUAL_PER_QUEUE = 32
"""Pending workloads per queue a residual (large-instance) model decides:
the heads in Kueue's queue order.  15,000 pending workloads would otherwise
make a model no time limit can build."""


def residual_candidates(
    snap: Snapshot, admitted: Iterable[str], preemptions: Iterable[PlanPreemption] = ()
) -> list[Workload]:
    """The first pending, not-yet-admitted workloads of every queue.

    A pending workload that a kept preemption names as its preemptor stays
    as it is: admitting it with another flavor could orphan that eviction.
    """
    taken = set(admitted) | {p.preemptor for p in preemptions}
    by_cq: dict[str, list[Workload]] = {}
    for w in snap.admissible():
        if w.key not in taken:
            by_cq.setdefault(snap.cluster_queue_of(w) or "", []).append(w)
    out: list[Workload] = []
    for members in by_cq.values():
        members.sort(key=queue_order)
        out += members[:RESIDUAL_PER_QUEUE]
    return out


def compile_data(
    snap: Snapshot,
    free: Iterable[Workload] | None = None,
    fixed: dict[str, WlInfo] | None = None,
    removed: frozenset[str] = frozenset(),
) -> ModelData:
    """``free``: pending workloads the model decides (default: all admissible);
    ``fixed``: already-decided admissions counted as running; ``removed``:
    running workloads already decided to be preempted (their usage is gone)."""
    tree = QuotaTree(snap)
    leaves, topos = _leaf_tables(snap)
    holders: list[WlInfo] = [
        running_info(snap, w) for w in snap.running if w.key not in removed
    ]
    holders += list((fixed or {}).values())
    base: dict[str, dict[FR, int]] = {cq: {} for cq in snap.cluster_queues}
    victims: list[VictimData] = []
    for info in holders:
        for fr, v in info.usage.items():
            base[info.cq][fr] = base[info.cq].get(fr, 0) + v
        leaf_usage = _leaf_usage(topos, info)
        for leaf, usage in leaf_usage.items():
            for r, v in usage.items():
                leaves[leaf].free[r] = leaves[leaf].free.get(r, 0) - v
        if info.key in (fixed or {}):
            continue
        victims.append(VictimData(len(victims), info, leaf_usage))
    data = ModelData(snap, tree, [], [], [], victims, leaves, topos, base, {}, [], {})
    chosen = (
        list(free)
        if free is not None
        else [w for w in snap.pending if snap.blocked_reason(w) is None]
    )
    for w in sorted(chosen, key=lambda w: w.key):
        if fixed and w.key in fixed:
            continue
        cq_name = snap.cluster_queue_of(w)
        if cq_name is None or snap.blocked_reason(w) is not None:
            continue
        _add_workload(data, w, snap.cluster_queues[cq_name])
    _add_pairs(data)
    _add_chains(data)
    return data


def _leaf_usage(
    topos: dict[str, FlavorTopo], info: WlInfo
) -> dict[int, dict[str, int]]:
    """TAS usage a quota holder has per leaf (per-pod usage x pods, plus pods)."""
    leaf_usage: dict[int, dict[str, int]] = {}
    for t in info.tas:
        ft = topos.get(t.flavor)
        if ft is None:
            continue
        for d in t.assignment.domains:
            leaf = ft.by_value.get(tuple(d.values))
            if leaf is None:
                continue
            acc = leaf_usage.setdefault(leaf, {})
            for r, v in t.per_pod.items():
                acc[r] = acc.get(r, 0) + v * d.count
            acc[PODS] = acc.get(PODS, 0) + d.count
    return leaf_usage


def derive(
    base: ModelData, inside: dict[str, WlInfo], allowed_nodes: frozenset[str]
) -> ModelData:
    """A neighbourhood of ``base`` without recompiling the cluster.

    ``base`` has every admission fixed; the workloads in ``inside`` become
    decisions again (their quota and TAS usage go back to the pool), next to
    ``base``'s own free (pending) workloads, with placements only on
    ``allowed_nodes``.  Victims, quota structure and the rest are shared.
    """
    snap = base.snapshot
    # A fixed preemption names its preemptor: re-deciding that workload
    # (another flavor, or not admitted) would orphan the eviction.  In a
    # StrictFIFO queue, dropping a re-decided workload would leave the fixed
    # ones behind it admitted out of order: those stay fixed too.
    # A kept reclaim from a queue that borrowed only thanks to the plan's
    # admissions into it stays legal only if those admissions stay too.
    named = {p.preemptor for p in base.fixed_preemptions}
    held = _queues_borrowing_by_admissions(base)
    inside = {
        k: v
        for k, v in inside.items()
        if k not in named
        and v.cq not in held
        and snap.cluster_queues[v.cq].queueing_strategy != "StrictFIFO"
    }
    leaves = [Leaf(lf.idx, lf.key, dict(lf.free), lf.node) for lf in base.leaves]
    usage = {cq: dict(u) for cq, u in base.base_usage.items()}
    for info in inside.values():
        for fr, v in info.usage.items():
            usage[info.cq][fr] = usage[info.cq].get(fr, 0) - v
        for leaf, amounts in _leaf_usage(base.topos, info).items():
            for r, v in amounts.items():
                leaves[leaf].free[r] = leaves[leaf].free.get(r, 0) + v
    data = ModelData(
        snap, base.tree, [], [], [], base.victims, leaves, base.topos, usage, {}, [], {}
    )
    data.fixed_admissions = [
        a for a in base.fixed_admissions if a.workload not in inside
    ]
    data.fixed_preemptions = list(base.fixed_preemptions)
    data.max_leaves = base.max_leaves
    data.allowed_nodes = allowed_nodes
    keys = sorted({wd.key for wd in base.workloads} | set(inside))
    for key in keys:
        w = snap.workloads[key]
        cq_name = snap.cluster_queue_of(w) if key not in inside else inside[key].cq
        if cq_name is None:
            continue
        _add_workload(data, w, snap.cluster_queues[cq_name])
    _add_pairs(data)
    _add_chains(data)
    return data


def _queues_borrowing_by_admissions(data: ModelData) -> set[str]:
    """Queues a kept cross-queue preemption reclaimed from although they did
    not borrow before the plan (on every flavor-resource the victim uses)."""
    snap, tree = data.snapshot, data.tree
    out: set[str] = set()
    for p in data.fixed_preemptions:
        victim = snap.workloads.get(p.workload)
        pre = snap.workloads.get(p.preemptor)
        if victim is None or victim.admission is None or pre is None:
            continue
        vcq = victim.admission.cluster_queue
        if vcq == snap.cluster_queue_of(pre) or vcq not in snap.cluster_queues:
            continue
        node = tree.node(vcq)
        if not any(_borrowing(node, fr) for fr in victim.usage()):
            out.add(vcq)
    return out


def _add_workload(data: ModelData, w: Workload, cq: ClusterQueue) -> None:
    snap = data.snapshot
    wd = WorkloadData(len(data.workloads), WlInfo(obj=w, cq=cq.name), cq)
    groups: dict[str, list[PodSet]] = {}
    for i, ps in enumerate(w.pod_sets):
        groups.setdefault(ps.topology.group or f"#{i}", []).append(ps)
    covers_pods = cq.group_of(PODS) is not None
    new_groups: list[GroupData] = []
    new_sets: list[PodSetData] = []
    for members in groups.values():
        gd = GroupData(len(data.groups) + len(new_groups), wd.idx, [], {})
        requested = {r for ps in members for r, v in ps.requests.items() if v}
        if covers_pods:
            requested.add(PODS)
        for r in sorted(requested):
            g = cq.group_of(r)
            if g is None:
                data.unsupported[w.key] = f"resource {r} unavailable in ClusterQueue"
                return
            if g in gd.flavors:
                continue
            rg = cq.resource_groups[g]
            eligible = [
                fq.name
                for fq in rg.flavors
                if flavor_rejection(snap, cq, fq.name, members, rg.covered_resources)
                is None
                and _slices_nest(snap, fq.name, members)
            ]
            if not eligible:
                data.unsupported[w.key] = "no eligible flavor"
                return
            gd.flavors[g] = eligible
        for ps in members:
            tas = requests_tas(ps, snap, cq)
            req = {r: v for r, v in ps.requests.items() if v}
            if any(v * max(ps.count, 1) > MAX_REQUEST for v in req.values()):
                # Beyond int64 range no quota can hold it; keep the model exact.
                data.unsupported[w.key] = "request too large for any quota"
                return
            if covers_pods:
                req[PODS] = 1
            pd = PodSetData(
                len(data.pod_sets) + len(new_sets),
                wd.idx,
                ps,
                gd.idx,
                tas,
                ps.min_count or ps.count,
                ps.count,
                req,
            )
            if tas:
                tas_flavors = {
                    f for fl in gd.flavors.values() for f in fl if f in data.topos
                }
                tas_groups = [
                    g
                    for g, fl in gd.flavors.items()
                    if any(f in data.topos for f in fl)
                ]
                if len(tas_groups) > 1 or not tas_flavors:
                    data.unsupported[w.key] = "TAS flavors in several resource groups"
                    return
            gd.pod_sets.append(pd.idx)
            new_sets.append(pd)
        new_groups.append(gd)
    if sum(1 for p in new_sets if p.min_count < p.count) > 1:
        data.unsupported[w.key] = "minCount on more than one pod set"
        return
    data.workloads.append(wd)
    data.groups.extend(new_groups)
    data.pod_sets.extend(new_sets)
    wd.groups = [g.idx for g in new_groups]
    wd.pod_sets = [p.idx for p in new_sets]


def _slices_nest(snap: Snapshot, flavor: str, members: list[PodSet]) -> bool:
    """Slice levels must not sit above the requested level (Kueue fails them)."""
    fl = snap.flavors.get(flavor)
    topo = snap.topologies.get(fl.topology_name or "") if fl else None
    if topo is None:
        return True
    for ps in members:
        t = ps.topology
        main = t.required or t.preferred
        depth = topo.levels.index(main) if main in topo.levels else 0
        for layer in t.slices:
            if layer.level not in topo.levels:
                return False
            if topo.levels.index(layer.level) < depth:
                return False
            depth = topo.levels.index(layer.level)
    return True


def candidate_frs(data: ModelData, wd: WorkloadData) -> set[FR]:
    out: set[FR] = set()
    for g in wd.groups:
        gd = data.groups[g]
        rs = {r for p in gd.pod_sets for r in data.pod_sets[p].requests}
        for rg, flavors in gd.flavors.items():
            covered = wd.cq.resource_groups[rg].covered_resources
            out.update((f, r) for f in flavors for r in rs if r in covered)
    return out


def _borrowing(node: QuotaNode, fr: FR) -> bool:
    return node.usage.get(fr, 0) > node.subtree.get(fr, 0)


def _add_pairs(data: ModelData) -> None:
    """Which pending workload may evict which running one (the validator's rules).

    The structural part (same tree, common ancestor, which flavor-resources
    every queue below it borrows) depends only on the two queues, so it is
    computed once per queue pair; the per-workload part is the priority
    policy and the shared flavor-resources.
    """
    tree, snap = data.tree, data.snapshot
    frs_of = [frozenset(candidate_frs(data, wd)) for wd in data.workloads]
    # (queue, fr) where the plan's admissions could make a queue that does
    # not borrow yet borrow: running usage plus everything its free
    # workloads could add exceeds nominal.
    potential: dict[tuple[str, FR], int] = {}
    for wd in data.workloads:
        for fr in frs_of[wd.idx]:
            most = sum(
                data.pod_sets[p].requests.get(fr[1], 0) * data.pod_sets[p].count
                for p in wd.pod_sets
            )
            key = (wd.cq.name, fr)
            potential[key] = potential.get(key, 0) + most
    admits_into = {
        (cq, fr)
        for (cq, fr), most in potential.items()
        if data.base_usage.get(cq, {}).get(fr, 0) + most
        > tree.node(cq).nominal.get(fr, 0)
    }
    by_cq: dict[str, list[WorkloadData]] = {}
    for wd in data.workloads:
        by_cq.setdefault(wd.cq.name, []).append(wd)
    paths: dict[str, list[QuotaNode]] = {}

    def path(cq: str) -> list[QuotaNode]:
        if cq not in paths:
            paths[cq] = _path(tree.node(cq))
        return paths[cq]

    all_frs = frozenset().union(*frs_of)
    reach_cache: dict[tuple[str, str], tuple[frozenset[FR], frozenset[FR]] | None] = {}

    def reach(vcq: str, wcq: str) -> tuple[frozenset[FR], frozenset[FR]] | None:
        """For a victim's queue and another queue of its tree: the frs on
        which every node from the victim's queue up to (excluding) the common
        ancestor borrows already, and those on which only the victim's queue
        does not yet but the plan's admissions could make it; None outside
        one tree."""
        key = (vcq, wcq)
        if key not in reach_cache:
            mine, theirs = path(wcq), path(vcq)
            lca = next((n for n in theirs if n in mine), None)
            if lca is None or len(theirs) == 1:
                reach_cache[key] = None
            else:
                nodes = theirs[: theirs.index(lca)]
                static = frozenset(
                    fr for fr in all_frs if all(_borrowing(n, fr) for n in nodes)
                )
                dynamic = frozenset(
                    fr
                    for fr in all_frs - static
                    if all(_borrowing(n, fr) for n in nodes[1:])
                    and (vcq, fr) in admits_into
                )
                reach_cache[key] = (static, dynamic)
        return reach_cache[key]

    for v in data.victims:
        vcq = v.info.cq
        if not snap.is_active(vcq):
            continue
        for wcq, members in by_cq.items():
            cq = members[0].cq
            same = vcq == wcq
            borrowing = None if same else reach(vcq, wcq)
            if not same and borrowing is None:
                continue
            policy = (
                cq.preemption.within_cluster_queue
                if same
                else cq.preemption.reclaim_within_cohort
            )
            for wd in members:
                frs = frs_of[wd.idx] & v.info.frs
                if not frs or not satisfies_policy(wd.info, v.info, policy):
                    continue
                if same:
                    data.pairs.setdefault(v.idx, []).append(Pair(wd.idx, frs, False))
                    continue
                assert borrowing is not None
                ok, dyn = frs & borrowing[0], frs & borrowing[1]
                if not ok and not dyn:
                    continue
                bwc = cq.preemption.borrow_within_cohort
                thr = bwc.max_priority_threshold
                borrow_ok = (
                    bwc.policy == "LowerPriority"
                    and v.info.priority < wd.info.priority
                    and (thr is None or v.info.priority <= thr)
                )
                data.pairs.setdefault(v.idx, []).append(
                    Pair(wd.idx, ok, not borrow_ok, dyn)
                )


def _path(node: QuotaNode) -> list[QuotaNode]:
    out = [node]
    while out[-1].parent is not None:
        out.append(out[-1].parent)
    return out


def _add_chains(data: ModelData) -> None:
    """StrictFIFO: admitted only if every workload ahead in the queue is."""
    by_cq: dict[str, list[WorkloadData]] = {}
    for wd in data.workloads:
        if wd.cq.queueing_strategy == "StrictFIFO":
            by_cq.setdefault(wd.cq.name, []).append(wd)
    for members in by_cq.values():
        members.sort(key=lambda wd: (-wd.info.priority, wd.info.queue_ts, wd.info.uid))
        data.strict_chains.append([wd.idx for wd in members])


def leaf_fit(
    data: ModelData,
    pd: PodSetData,
    flavor: str,
    leaf: int,
    release: dict[str, int] | None = None,
) -> int:
    """How many pods of ``pd`` fit on a leaf (optionally after releasing usage)."""
    lf = data.leaves[leaf]
    ft = data.topos[flavor]
    if ft.hostname and lf.node is not None:
        node = data.snapshot.nodes[lf.node]
        fl = data.snapshot.flavors[flavor]
        if untolerated(node.taints, pd.ps.placement.tolerations + fl.tolerations):
            return 0
        if not pd.ps.placement.matches_node(node.labels, node.name):
            return 0
    best = pd.count
    per_pod = dict(pd.ps.requests)
    per_pod[PODS] = 1
    for r, need in per_pod.items():
        if need <= 0:
            continue
        have = lf.free.get(r, 0) + (release or {}).get(r, 0)
        if have >= UNLIMITED // 2:
            continue
        best = min(best, max(0, have) // need)
    return best


_CLIP = 1 << 62


def leaf_fits(
    data: ModelData,
    pd: PodSetData,
    flavor: str,
    release: dict[int, dict[str, int]],
) -> list[tuple[int, int]]:
    """(pods that fit, leaf) for every leaf of ``flavor`` where at least one
    pod of ``pd`` fits, counting what preemptions could release there.

    Vectorised over leaves: a 10,000-node flavor times hundreds of pod sets
    is millions of leaf checks.
    """
    topo = data.topos[flavor]
    leaves = np.asarray(topo.leaves, dtype=np.int64)
    if not len(leaves):
        return []
    fit = np.full(len(leaves), pd.count, dtype=np.int64)
    per_pod = dict(pd.ps.requests)
    per_pod[PODS] = 1
    for r, need in per_pod.items():
        if need <= 0:
            continue
        have = _have(data, flavor, r, release)
        bounded = have < _CLIP
        fit = np.where(bounded, np.minimum(fit, np.maximum(have, 0) // need), fit)
    if topo.hostname:
        fit[~_node_mask(data, flavor, pd)] = 0
    if data.allowed_nodes is not None:
        allowed = np.asarray(
            [data.leaves[leaf].node in data.allowed_nodes for leaf in topo.leaves]
        )
        fit[~allowed] = 0
    keep = np.nonzero(fit > 0)[0]
    return [(int(fit[i]), int(leaves[i])) for i in keep]


def _have(
    data: ModelData, flavor: str, r: str, release: dict[int, dict[str, int]]
) -> IntArray:
    key = (flavor, r)
    cache = data.cache.setdefault("have", {})
    if key not in cache:
        cache[key] = np.asarray(
            [
                max(  # bound pods beyond int64 leave hugely negative room
                    -_CLIP,
                    min(
                        _CLIP,
                        data.leaves[leaf].free.get(r, 0)
                        + release.get(leaf, {}).get(r, 0),
                    ),
                )
                for leaf in data.topos[flavor].leaves
            ],
            dtype=np.int64,
        )
    out: IntArray = cache[key]
    return out


def _node_mask(data: ModelData, flavor: str, pd: PodSetData) -> BoolArray:
    """Hostname leaves the pod's tolerations, selector and affinity allow."""
    key = (flavor, pd.ps.placement)
    cache = data.cache.setdefault("mask", {})
    if key not in cache:
        fl = data.snapshot.flavors[flavor]
        tolerations = pd.ps.placement.tolerations + fl.tolerations
        ok = []
        for leaf in data.topos[flavor].leaves:
            node = data.snapshot.nodes.get(data.leaves[leaf].node or "")
            ok.append(
                node is not None
                and not untolerated(node.taints, tolerations)
                and pd.ps.placement.matches_node(node.labels, node.name)
            )
        cache[key] = np.asarray(ok, dtype=bool)
    out: BoolArray = cache[key]
    return out
