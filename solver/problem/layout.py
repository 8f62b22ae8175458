"""The aggregated placement: unit shapes, host classes, packing patterns, domains.

Pods of a pod set are identical, and so are many hosts: the same free
capacity, the same position in the topology down to the deepest level any
pod set cares about, the same eligibility.  The model therefore decides
*counts* (Gilmore-Gomory's configuration view of bin packing):

* a **unit** is what must land on one leaf together: one pod, a slice of
  ``size`` pods when a slice layer sits at the leaf level, or the whole pod
  set when its required level is the leaf level;
* a **shape** is a unit's request vector (``pods`` included) for one TAS
  flavor and one eligibility signature (node selector, affinity,
  tolerations): units of one shape are interchangeable;
* a **host class** is a set of leaves with the same free capacity, the same
  domain path down to the deepest constrained level of each flavor, the same
  eligibility and the same "empty" flag; its **patterns** are the maximal
  numbers of units per shape that fit one leaf, so "hosts of the class using
  pattern k" is an integer and the LP relaxation is the configuration LP;
* leaves that hold running work a preemption could release, and classes whose
  patterns would be too many, are **linear**: one leaf each, with capacity
  rows over its free capacity plus what evicted victims give back (exact for
  one leaf);
* each pod set decides units per **domain at its own level** — the deepest
  level it constrains (required, preferred or a slice above the leaf) or the
  whole flavor when it constrains none.

Supply and demand meet per shape and domain: the units that must land inside
a domain never exceed the slots its classes provide.  On a tree (a laminar
family) these Hall conditions are also sufficient, so every solution can be
decoded leaf by leaf (deepest demands first), and the model stays exact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from placewise.models.cluster import PODS
from placewise.models.plan import PlanAdmission
from placewise.models.quantity import UNLIMITED
from placewise.models.scheduling import PodPlacement, untolerated
from placewise.solver.problem.data import ModelData, PodSetData

IntArray = npt.NDArray[np.int64]
CLIP = 1 << 62
PATTERN_CAP = 48
"""Maximal patterns per class above which its leaves become linear; generated
GPU families need at most a dozen (5 shapes on an 8-GPU host)."""
Paths = dict[str, tuple[str, ...]]
Domain = tuple[str, tuple[str, ...]]
Eligibility = tuple[PodPlacement, bool]
"""A pod's node eligibility and whether a reservation shuts it out: one
mask (a shape signature) per distinct pair."""
"""(flavor, path from the top level down); the flavor's root is (f, ())."""


@dataclass(frozen=True, slots=True)
class Shape:
    idx: int
    flavor: str
    signature: int
    """Eligibility signature index: which leaves the units may use."""
    request: tuple[tuple[str, int], ...]
    """Per unit, ``pods`` included, resources with a positive request."""

    def need(self, resource: str) -> int:
        return dict(self.request).get(resource, 0)


@dataclass(slots=True)
class Spec:
    """One TAS pod set on one of its TAS flavors."""

    pod_set: int
    flavor: str
    shape: int
    unit: int
    """Pods per unit."""
    depth: int
    """Index of the pod set's own level in the flavor's levels; -1: the root."""
    required: int | None
    preferred: int | None
    slices: tuple[tuple[int, int], ...]
    """(level index, size in units) of slice layers above the leaf level."""
    group: str
    """Pod sets that share a required domain (podSetGroupName) share this."""
    domains: dict[tuple[str, ...], int] = field(default_factory=dict)
    """Candidate domain path at ``depth`` -> most units it could hold.
    Shared by alike specs: replace it, never change it in place."""


@dataclass(slots=True)
class HostClass:
    idx: int
    leaves: tuple[int, ...]
    free: dict[str, int]
    paths: dict[str, tuple[str, ...]]
    """flavor -> domain path down to that flavor's class depth."""
    shapes: tuple[int, ...]
    patterns: tuple[tuple[int, ...], ...] = ()
    """Maximal patterns (units per shape, aligned with ``shapes``); empty for
    linear classes."""
    linear: bool = False
    empty: bool = False


@dataclass(slots=True)
class Layout:
    shapes: list[Shape]
    specs: list[Spec]
    classes: list[HostClass]
    depth: dict[str, int]
    """flavor -> deepest level index any of its pod sets constrains (-1: none)."""
    release: dict[int, dict[int, dict[str, int]]]
    """victim index -> leaf -> usage it gives back when evicted."""
    released: dict[int, dict[str, int]] = field(default_factory=dict)
    """leaf -> everything victims there could give back together."""
    victims_on: dict[int, list[tuple[int, dict[str, int]]]] = field(
        default_factory=dict
    )
    """leaf -> (victim, usage there), victims in index order."""
    by_pod_set: dict[int, list[int]] = field(default_factory=dict)
    """pod set -> its specs (one per TAS flavor)."""
    unsupported: dict[int, str] = field(default_factory=dict)
    """pod set -> why the aggregated placement cannot express it."""
    masks: dict[str, list[IntArray]] = field(default_factory=dict)
    """flavor -> per eligibility signature, 1 where a leaf (in the flavor's
    leaf order) may take units of that signature."""

    def units_cap(self, spec: Spec) -> int:
        return max(spec.domains.values(), default=0)

    @property
    def cells(self) -> int:
        """Candidate (pod set, domain) cells: the model's size driver, which
        decides how much of it the solver and the bound can afford."""
        return sum(len(s.domains) for s in self.specs)


def _unlimited(x: int) -> bool:
    return x >= UNLIMITED // 2


def _unit_and_depth(
    pd: PodSetData, levels: tuple[str, ...], group_level: str | None
) -> tuple[int, int, int | None, int | None, tuple[tuple[int, int], ...]] | str:
    """(unit, depth, required, preferred, slices) or why it is not expressible.

    ``group_level``: the required level of the pod set's podSetGroupName
    group, which binds every member (a leader often states none itself)."""
    t = pd.ps.topology
    leaf = len(levels) - 1
    wanted = t.required or group_level
    required = levels.index(wanted) if wanted in levels else None
    preferred = levels.index(t.preferred) if t.preferred in levels else None
    unit = 1
    slices: list[tuple[int, int]] = []
    for layer in t.slices:
        if layer.level not in levels:
            return "slice level not in the topology"
        li = levels.index(layer.level)
        if li == leaf:
            unit = layer.size
        else:
            slices.append((li, layer.size))
    if required == leaf and not group_level:
        # One leaf for the whole pod set: one unit (a group keeps the leaf
        # as its required domain instead, shared by its members).
        if pd.min_count < pd.count:
            return "minCount with a leaf-level required topology"
        unit = pd.count
        required = None
    if unit < 1 or pd.count % unit or pd.min_count % unit:
        return "slice size does not divide the pod counts"
    if preferred == leaf:
        preferred = None  # one leaf per unit is all a leaf-level preference can ask
    cared = [x for x in (required, preferred) if x is not None]
    cared += [li for li, _ in slices]
    depth = max(cared, default=-1)
    units_slices = []
    for li, size in slices:
        if size % unit:
            return "slice sizes do not nest"
        units_slices.append((li, size // unit))
    return unit, depth, required, preferred, tuple(units_slices)


def _signature_masks(
    data: ModelData, flavor: str, placements: list[Eligibility]
) -> list[IntArray]:
    """Per placement, which leaves of ``flavor`` it may use (1) or not (0):
    its node eligibility, and for work a reservation shuts out, none of the
    reserved hosts."""
    topo = data.topos[flavor]
    fl = data.snapshot.flavors[flavor]
    closed = data.closed_leaves()
    out = []
    for placement, shut in placements:
        tolerations = placement.tolerations + fl.tolerations
        ok = []
        for leaf in topo.leaves:
            lf = data.leaves[leaf]
            if shut and leaf in closed:
                ok.append(0)
                continue
            if not topo.hostname or lf.node is None:
                ok.append(1)
                continue
            node = data.snapshot.nodes[lf.node]
            ok.append(
                int(
                    not untolerated(node.taints, tolerations)
                    and placement.matches_node(node.labels, node.name)
                )
            )
        out.append(np.asarray(ok, dtype=np.int64))
    return out


def build_layout(data: ModelData) -> Layout:
    """Shapes, specs, host classes and patterns of a compiled problem."""
    release = _releases(data)
    shapes: list[Shape] = []
    shape_of: dict[tuple[str, int, tuple[tuple[str, int], ...]], int] = {}
    specs: list[Spec] = []
    layout = Layout(shapes, specs, [], {}, release)
    placements: dict[str, list[Eligibility]] = defaultdict(list)
    group_level: dict[tuple[int, str], str] = {}
    for pd in data.pod_sets:
        t = pd.ps.topology
        if t.group and t.required:
            group_level.setdefault((pd.wl, t.group), t.required)
    for pd in data.pod_sets:
        if not pd.tas:
            continue
        flavors = sorted(
            {f for fl in data.groups[pd.group].flavors.values() for f in fl}
            & set(data.topos)
        )
        for f in flavors:
            levels = data.topos[f].levels
            group = pd.ps.topology.group
            got = _unit_and_depth(
                pd, levels, group_level.get((pd.wl, group)) if group else None
            )
            if isinstance(got, str):
                layout.unsupported[pd.idx] = got
                break
            unit, depth, required, preferred, slices = got
            eligible = (pd.ps.placement, data.shut_out(pd.wl))
            if eligible not in placements[f]:
                placements[f].append(eligible)
            sig = placements[f].index(eligible)
            request = {r: q * unit for r, q in pd.ps.requests.items() if q > 0}
            request[PODS] = unit
            key = (f, sig, tuple(sorted(request.items())))
            if key not in shape_of:
                shape_of[key] = len(shapes)
                shapes.append(Shape(len(shapes), f, sig, key[2]))
            spec = Spec(
                pd.idx,
                f,
                shape_of[key],
                unit,
                depth,
                required,
                preferred,
                slices,
                pd.ps.topology.group or f"#{pd.idx}",
            )
            layout.by_pod_set.setdefault(pd.idx, []).append(len(specs))
            specs.append(spec)
    for f in data.topos:
        layout.depth[f] = max((s.depth for s in specs if s.flavor == f), default=-1)
    for vi, usage in sorted(release.items()):
        for leaf, amounts in usage.items():
            layout.victims_on.setdefault(leaf, []).append((vi, amounts))
            acc = layout.released.setdefault(leaf, {})
            for r, q in amounts.items():
                acc[r] = acc.get(r, 0) + q
    masks = {f: _signature_masks(data, f, placements[f]) for f in placements}
    layout.masks = masks
    _make_classes(data, layout, masks)
    _candidate_domains(data, layout)
    return layout


def _releases(data: ModelData) -> dict[int, dict[int, dict[str, int]]]:
    return {
        v.idx: v.leaf_usage
        for v in data.victims
        if v.idx in data.pairs and v.leaf_usage
    }


def _fits(free: dict[str, int], shape: Shape) -> int:
    """Units of ``shape`` that fit in ``free`` alone."""
    best = 1 << 30
    for r, q in shape.request:
        have = free.get(r, 0)
        if _unlimited(have):
            continue
        best = min(best, max(have, 0) // q)
    return best


def _make_classes(
    data: ModelData, layout: Layout, masks: dict[str, list[IntArray]]
) -> None:
    """Group leaves into classes; linear singletons where victims or too many
    patterns would make a class inexact."""
    relevant = sorted({r for s in layout.shapes for r, _ in s.request})
    on_victims = {leaf for usage in layout.release.values() for leaf in usage}
    flavors_of: dict[int, list[str]] = defaultdict(list)
    for f, topo in sorted(data.topos.items()):
        if f not in masks:
            continue
        for leaf in topo.leaves:
            flavors_of[leaf].append(f)
    allowed_of = _allowed_shapes(data, layout, masks, relevant, on_victims)
    groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
    info: dict[tuple[object, ...], tuple[dict[str, int], Paths, tuple[int, ...]]] = {}
    for leaf in sorted(flavors_of):
        allowed = allowed_of.get(leaf, ())
        if not allowed:
            continue
        lf = data.leaves[leaf]
        # Bound pods beyond int64 leave hugely negative room: no unit fits
        # below -CLIP either, and the model's coefficients stay in int64.
        free = {r: max(-CLIP, lf.free.get(r, 0)) for r in relevant}
        paths = {
            f: data.topos[f].paths[leaf][: layout.depth[f] + 1]
            for f in flavors_of[leaf]
        }
        node = data.snapshot.nodes.get(lf.node or "")
        empty = node is not None and lf.free.get(PODS, 0) >= node.allocatable.get(
            PODS, 0
        )
        if leaf in on_victims:
            key: tuple[object, ...] = ("leaf", leaf)
        else:
            key = (tuple(sorted(free.items())), tuple(sorted(paths.items())), allowed)
            key += (empty,)
        groups[key].append(leaf)
        info[key] = (free, paths, allowed)
    classes: list[HostClass] = []
    memo: dict[tuple[object, ...], tuple[tuple[int, ...], ...] | None] = {}
    for key, leaves in sorted(groups.items(), key=lambda kv: kv[1][0]):
        free, paths, allowed = info[key]
        linear = key[0] == "leaf"
        patterns: tuple[tuple[int, ...], ...] = ()
        if not linear:
            mkey = (tuple(sorted(free.items())), allowed)
            if mkey not in memo:
                memo[mkey] = _patterns(free, [layout.shapes[s] for s in allowed])
            found = memo[mkey]
            if found is None:
                linear = True
            else:
                patterns = found
        empty = bool(key[-1]) if not linear else False
        members = [(lf,) for lf in leaves] if linear else [tuple(leaves)]
        for group in members:
            classes.append(
                HostClass(
                    len(classes), group, free, paths, allowed, patterns, linear, empty
                )
            )
    layout.classes = classes


def _allowed_shapes(
    data: ModelData,
    layout: Layout,
    masks: dict[str, list[IntArray]],
    relevant: list[str],
    on_victims: set[int],
) -> dict[int, tuple[int, ...]]:
    """Per leaf, the shapes its eligibility allows and one unit of which fits
    its free capacity (or could, on leaves where victims may leave): one
    vectorised pass per shape over the flavor's leaves."""
    per_leaf: dict[int, list[int]] = defaultdict(list)
    for shape in layout.shapes:
        topo = data.topos[shape.flavor]
        leaves = np.asarray(topo.leaves, dtype=np.int64)
        ok = masks[shape.flavor][shape.signature].astype(bool)
        fits = np.ones(len(leaves), dtype=bool)
        for r, q in shape.request:
            have = np.asarray(
                [data.leaves[leaf].free.get(r, 0) for leaf in topo.leaves],
                dtype=object,
            )
            fits &= np.asarray([h >= q for h in have], dtype=bool)
        victims = np.asarray([leaf in on_victims for leaf in topo.leaves], dtype=bool)
        for i in np.nonzero(ok & (fits | victims))[0]:
            per_leaf[int(leaves[i])].append(shape.idx)
    return {leaf: tuple(sorted(s)) for leaf, s in per_leaf.items()}


def _patterns(
    free: dict[str, int], shapes: list[Shape]
) -> tuple[tuple[int, ...], ...] | None:
    """Maximal unit counts per shape that fit ``free``; None above the cap."""
    resources = sorted({r for s in shapes for r, _ in s.request})
    cap = [free.get(r, 0) for r in resources]
    bounded = [not _unlimited(c) for c in cap]
    need = [[s.need(r) for r in resources] for s in shapes]
    n = len(shapes)
    out: list[tuple[int, ...]] = []

    def room(left: list[int], i: int) -> int:
        best = 1 << 30
        for j, q in enumerate(need[i]):
            if q and bounded[j]:
                best = min(best, max(left[j], 0) // q)
        return best

    def walk(i: int, left: list[int], counts: list[int]) -> bool:
        if len(out) > PATTERN_CAP:
            return False
        if i == n:
            if all(room(left, j) == 0 for j in range(n)):
                out.append(tuple(counts))
            return True
        most = room(left, i)
        for k in range(most, -1, -1):
            nxt = [c - k * q for c, q in zip(left, need[i], strict=True)]
            counts.append(k)
            ok = walk(i + 1, nxt, counts)
            counts.pop()
            if not ok:
                return False
        return True

    if not walk(0, cap, []) or len(out) > PATTERN_CAP:
        return None
    return tuple(p for p in out if any(p))


def leaf_units(layout: Layout, cls: HostClass, shape: int) -> int:
    """Most units of ``shape`` one leaf of ``cls`` holds with its free capacity
    (patterns) — linear leaves report the same with nothing released."""
    if cls.linear:
        return _fits(cls.free, layout.shapes[shape])
    i = cls.shapes.index(shape)
    return max((p[i] for p in cls.patterns), default=0)


def linear_cap(data: ModelData, layout: Layout, cls: HostClass, shape: int) -> int:
    """Units of ``shape`` a linear leaf could hold if every victim there left."""
    extra = layout.released.get(cls.leaves[0], {})
    free = {r: q + extra.get(r, 0) for r, q in cls.free.items()}
    return _fits(free, layout.shapes[shape])


def _candidate_domains(data: ModelData, layout: Layout) -> None:
    """Per spec, the domains at its level where units fit, with their capacity."""
    per_domain: dict[tuple[int, int], dict[tuple[str, ...], int]] = defaultdict(
        lambda: defaultdict(int)
    )
    for cls in layout.classes:
        for s in cls.shapes:
            per_leaf = (
                linear_cap(data, layout, cls, s)
                if cls.linear
                else leaf_units(layout, cls, s)
            )
            if per_leaf <= 0:
                continue
            path = cls.paths[layout.shapes[s].flavor]
            for d in range(-1, len(path)):
                per_domain[(s, d)][path[: d + 1]] += per_leaf * len(cls.leaves)
    # Specs alike in shape, level and counts share one (read-only) dict: at
    # 50,000 hosts 10,000 pod sets x 3,000 racks would be 30 million entries.
    shared: dict[tuple[int, int, bool, int, int], dict[tuple[str, ...], int]] = {}
    for spec in layout.specs:
        pd = data.pod_sets[spec.pod_set]
        units = pd.count // spec.unit
        need = pd.min_count // spec.unit
        whole = spec.required is not None and spec.required == spec.depth
        key = (spec.shape, spec.depth, whole, need, units)
        if key not in shared:
            shared[key] = {
                path: min(cap, units)
                for path, cap in per_domain[(spec.shape, spec.depth)].items()
                # a required domain that cannot hold even minCount is no candidate
                if not whole or cap >= need
            }
        spec.domains = shared[key]


def restrict(
    data: ModelData, layout: Layout, keep: dict[int, set[tuple[str, ...]]], k: int
) -> None:
    """Keep at most ``k`` candidate domains per spec (the roomiest), plus the
    ones in ``keep`` (a warm start's): the model of a large instance stays
    buildable within the budget.  The restricted model is no longer a
    relaxation, so its stage bounds are not reported as proven."""
    for i, spec in enumerate(layout.specs):
        if len(spec.domains) <= k:
            continue
        chosen = sorted(spec.domains.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
        wanted = dict(chosen)
        for path in keep.get(i, set()):
            if path in spec.domains:
                wanted[path] = spec.domains[path]
        spec.domains = dict(sorted(wanted.items()))


def plan_domains(
    data: ModelData, layout: Layout, admissions: Iterable[PlanAdmission]
) -> dict[int, set[tuple[str, ...]]]:
    """spec -> the domains (at its level) a plan's admissions put units in."""
    out: dict[int, set[tuple[str, ...]]] = defaultdict(set)
    by_key = {wd.key: wd for wd in data.workloads}
    for adm in admissions:
        wd = by_key.get(adm.workload)
        if wd is None:
            continue
        psas = {p.name: p for p in adm.pod_set_assignments}
        for p in wd.pod_sets:
            psa = psas.get(data.pod_sets[p].ps.name)
            if psa is None or psa.topology_assignment is None:
                continue
            for i in layout.by_pod_set.get(p, []):
                spec = layout.specs[i]
                if spec.flavor not in psa.flavors.values():
                    continue
                topo = data.topos[spec.flavor]
                for d in psa.topology_assignment.domains:
                    leaf = topo.by_value.get(tuple(d.values))
                    if leaf is not None:
                        out[i].add(topo.paths[leaf][: spec.depth + 1])
    return out
