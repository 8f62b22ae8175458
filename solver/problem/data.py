"""Compile a snapshot into the index-based data the CP-SAT model is built from.

Everything here is static for one solve: which pending workloads the model
decides (free) and which it only accounts for (fixed), each pod-set group's
eligible flavors per resource group, the quota tree in §9's linear form,
TAS leaves with their free capacity, and which running workloads each
pending workload may preempt.  Pods of a pod set are identical, so
placements are integer counts per leaf, never Booleans per pod.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from placewise.models.cluster import HOSTNAME_LABEL, PODS, ClusterQueue
from placewise.models.plan import PlanAdmission
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Admission, PodSet, Workload
from placewise.solver.kueue.eligibility import flavor_rejection, requests_tas
from placewise.solver.kueue.order import queue_order
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.workload import WlInfo, running_info
from placewise.solver.reservation import Reservation

if TYPE_CHECKING:
    from placewise.solver.problem.pairs import Pair

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
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
    serves: dict[int, frozenset[str]] = field(default_factory=dict)
    """resource group index -> the requested resources it serves
    (``ClusterQueue.serving_groups``: a resource two groups list is served
    by one, so no usage counts twice)."""


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
    fixed_admissions: list[PlanAdmission] = field(default_factory=list)
    """Admissions the model takes as decided (counted in ``base_usage``)."""
    cache: dict[str, dict[Any, Any]] = field(default_factory=dict)
    """Per-solve memo of derived arrays (leaf capacity, node masks)."""
    inadmissible: set[str] = field(default_factory=set)
    """Of ``unsupported``, the workloads Kueue's own rules never admit (no
    flavor covers a resource, or none is eligible): no bound counts them."""
    reservation: Reservation | None = None
    """Hosts held for a starving workload (:mod:`placewise.solver.reservation`):
    the layout closes them to the work it shuts out."""

    def closed_leaves(self) -> frozenset[int]:
        """The reservation's hosts as leaves (every flavor sharing a node)."""
        if self.reservation is None:
            return frozenset()
        out = set()
        for flavor, values in self.reservation.leaves:
            topo = self.topos.get(flavor)
            leaf = topo.by_value.get(values) if topo is not None else None
            if leaf is not None:
                out.add(leaf)
        return frozenset(out)

    def shut_out(self, wl: int) -> bool:
        """Whether workload ``wl`` may not use the reserved hosts."""
        wd = self.workloads[wl]
        r = self.reservation
        return r is not None and r.shuts_out(wd.key, wd.info.priority)


SLICE = (
    "elastic workload slice: its quota is the growth over the running slice it "
    "replaces, which the model does not express (the warm start decides)"
)


def outside_demand(
    data: ModelData, size: Callable[[Workload], int], admitted: Set[str] = frozenset()
) -> dict[int, int]:
    """Per priority, the demand (``size``) of pending workloads the model
    leaves out although some plan could admit them: a bound must count it
    whole.  Copies of one dispatched workload (an ``exclusive`` group) count
    once, the largest: at most one of them runs."""
    snap = data.snapshot
    out: dict[int, int] = {}
    groups: dict[str, Workload] = {}
    for key in sorted(data.unsupported):
        w = snap.workloads.get(key)
        if w is None or key in admitted or key in data.inadmissible:
            continue
        if snap.blocked_reason(w) is not None:
            continue
        if w.exclusive is None:
            out[w.priority] = out.get(w.priority, 0) + size(w)
        elif w.exclusive not in groups or size(w) > size(groups[w.exclusive]):
            groups[w.exclusive] = w
    taken = {w.exclusive for k in admitted if (w := snap.workloads.get(k)) is not None}
    for group, w in sorted(groups.items()):
        if group not in taken:
            out[w.priority] = out.get(w.priority, 0) + size(w)
    return out


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


def compile_data(
    snap: Snapshot,
    free: Iterable[Workload] | None = None,
    fixed: dict[str, WlInfo] | None = None,
    removed: frozenset[str] = frozenset(),
    exclude: dict[str, str] | None = None,
    decided: Sequence[PlanAdmission] = (),
) -> ModelData:
    """``free``: pending workloads the model decides (default: all admissible);
    ``fixed``: already-decided admissions counted as running; ``removed``:
    running workloads already decided to be preempted (their usage is gone);
    ``exclude``: workloads left out of the model, with why; ``decided``: the
    plan admissions behind ``fixed``, which every decoded plan carries."""
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
        if info.key in (fixed or {}) or not info.preemptible:
            continue  # holds its usage, but no plan may evict it
        victims.append(VictimData(len(victims), info, leaf_usage))
    data = ModelData(
        snap, tree, [], [], [], victims, leaves, topos, base, {}, [], {}, list(decided)
    )
    chosen = (
        list(free)
        if free is not None
        else [w for w in snap.pending if snap.blocked_reason(w) is None]
    )
    data.unsupported.update(exclude or {})
    for w in sorted(chosen, key=lambda w: w.key):
        if (fixed and w.key in fixed) or w.key in data.unsupported:
            continue
        cq_name = snap.cluster_queue_of(w)
        if cq_name is None or snap.blocked_reason(w) is not None:
            continue
        if snap.replaced_slice(w) is not None:
            data.unsupported[w.key] = SLICE
            continue
        _add_workload(data, w, snap.cluster_queues[cq_name])
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
        serving = cq.serving_groups(requested)
        for g in set(serving.values()):
            gd.serves[g] = frozenset(r for r, h in serving.items() if h == g)
        for r in sorted(requested):
            if r not in serving:
                data.unsupported[w.key] = f"resource {r} unavailable in ClusterQueue"
                data.inadmissible.add(w.key)
                return
            g = serving[r]
            if g in gd.flavors:
                continue
            rg = cq.resource_groups[g]
            eligible = [
                fq.name
                for fq in rg.flavors
                if flavor_rejection(snap, cq, fq.name, members, sorted(gd.serves[g]))
                is None
                and _slices_nest(snap, fq.name, members)
            ]
            if not eligible:
                data.unsupported[w.key] = "no eligible flavor"
                data.inadmissible.add(w.key)
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
            covered = gd.serves[rg]
            out.update((f, r) for f in flavors for r in rs if r in covered)
    return out


def _add_chains(data: ModelData) -> None:
    """StrictFIFO: admitted only if every workload ahead in the queue is."""
    by_cq: dict[str, list[WorkloadData]] = {}
    for wd in data.workloads:
        if wd.cq.queueing_strategy == "StrictFIFO":
            by_cq.setdefault(wd.cq.name, []).append(wd)
    for members in by_cq.values():
        members.sort(key=lambda wd: queue_order(wd.obj))
        data.strict_chains.append([wd.idx for wd in members])
