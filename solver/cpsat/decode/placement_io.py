"""Between plans and the aggregated placement: hints in, leaves out.

:func:`placement_values` reads a plan's topology assignments as the model's
counts (units per domain, patterns per class) so the plan can hint the
search; :func:`decode` turns counts back into leaves: patterns go to member
leaves in order, then every pod set's units take slots inside its domain,
deepest domains first, which never fails when the Hall rows hold (a tree is
a laminar family).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from ortools.graph.python import max_flow

from placewise.models.plan import Plan
from placewise.solver.cpsat.model.placement import Placement

Values = Mapping[int, int]


def _class_of(pl: Placement) -> dict[int, int]:
    return {leaf: c.idx for c in pl.layout.classes for leaf in c.leaves}


def placement_values(pl: Placement, plan: Plan) -> dict[int, int] | None:
    """Proto index -> value of every placement variable for ``plan``'s TAS
    assignments; None when the plan uses something the model cannot express."""
    data, layout = pl.data, pl.layout
    out: dict[int, int] = {}
    for var in pl.x.values():
        out[var.index] = 0
    units_on: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    by_queue: dict[tuple[int, int, str], int] = defaultdict(int)
    admitted = {a.workload: a for a in plan.admissions}
    for wd in data.workloads:
        adm = admitted.get(wd.key)
        if adm is None:
            continue
        psas = {p.name: p for p in adm.pod_set_assignments}
        for p in wd.pod_sets:
            pd = data.pod_sets[p]
            psa = psas.get(pd.ps.name)
            if not pd.tas or psa is None or psa.topology_assignment is None:
                continue
            flavor = next((f for f in psa.flavors.values() if f in data.topos), None)
            spec_i = next((i for i, s in pl.specs_of(p) if s.flavor == flavor), None)
            if flavor is None or spec_i is None:
                return None
            spec = layout.specs[spec_i]
            topo = data.topos[flavor]
            for d in psa.topology_assignment.domains:
                leaf = topo.by_value.get(tuple(d.values))
                if leaf is None or d.count % spec.unit:
                    return None
                units = d.count // spec.unit
                path = topo.paths[leaf][: spec.depth + 1]
                x = pl.x.get((spec_i, path))
                if x is None:
                    return None
                out[x.index] += units
                units_on[leaf][spec.shape] += units
                by_queue[(leaf, spec.shape, wd.cq.name)] += units
    class_of = _class_of(pl)
    if any(leaf not in class_of for leaf in units_on):
        return None
    for cls in layout.classes:
        if cls.linear:
            leaf = cls.leaves[0]
            for s in cls.shapes:
                slot = pl.v.get((cls.idx, s))
                got = units_on.get(leaf, {}).get(s, 0)
                if slot is None and got:
                    return None
                if slot is not None:
                    out[slot.index] = got
            if any(s not in cls.shapes for s in units_on.get(leaf, {})):
                return None
            continue
        counts = [0] * len(cls.patterns)
        empty = 0
        for leaf in cls.leaves:
            have = units_on.get(leaf, {})
            if any(s not in cls.shapes for s in have):
                return None
            vec = [have.get(s, 0) for s in cls.shapes]
            if not any(vec):
                empty += 1
                continue
            k = next(
                (
                    k
                    for k, p in enumerate(cls.patterns)
                    if all(a >= b for a, b in zip(p, vec, strict=True))
                ),
                None,
            )
            if k is None:
                return None
            counts[k] += 1
        for k, n in enumerate(counts):
            out[pl.y[(cls.idx, k)].index] = n
        out[pl.empty[cls.idx].index] = empty
    for key, f in pl.foreign.units.items():
        out[f.index] = by_queue.get(key, 0)
    _derived(pl, out)
    return out


def _derived(pl: Placement, out: dict[int, int]) -> None:
    """Required domains, slices and preferred domains follow from the units."""
    per_dom: dict[tuple[int, int, tuple[str, ...]], int] = defaultdict(int)
    for (i, path), x in pl.x.items():
        n = out[x.index]
        for level in range(len(path) + 1):
            per_dom[(i, level, path[:level])] += n
    members: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for i, spec in enumerate(pl.layout.specs):
        members[(spec.group, pl.data.pod_sets[spec.pod_set].wl, spec.flavor)].append(i)
    for (group, wl, f, dom), z in pl.z.items():
        used = any(per_dom.get((i, len(dom), dom), 0) for i in members[(group, wl, f)])
        out[z.index] = int(used)
    for (i, dom), k in pl.slices.items():
        size = next(sz for lv, sz in pl.layout.specs[i].slices if lv + 1 == len(dom))
        out[k.index] = per_dom.get((i, len(dom), dom), 0) // size
    for (i, dom), q in pl.preferred.items():
        out[q.index] = int(per_dom.get((i, len(dom), dom), 0) > 0)


def _evicted_queues(pl: Placement, values: Values) -> dict[int, set[str]]:
    """leaf -> the ClusterQueues whose workloads the values evict there."""
    out: dict[int, set[str]] = {}
    for leaf, on in pl.layout.victims_on.items():
        for vi, _ in on:
            if values[pl.victims[vi].index]:
                out.setdefault(leaf, set()).add(pl.data.victims[vi].info.cq)
    return out


def decode(pl: Placement, values: Values) -> dict[tuple[int, str], dict[int, int]]:
    """(pod set, flavor) -> leaf -> pods, for every pod set the values place.

    A queue takes a victim's leaf only as far as :mod:`.foreign`'s counts
    allow.  Those rows are Hall's per queue, necessary but not sufficient
    across queues, so when the greedy order leaves units without a slot a
    max-flow places them exactly; should even that fail, the counts are
    dropped and the settling pass judges the result."""
    allow = {key: values[f.index] for key, f in pl.foreign.units.items()}
    placed = _greedy(pl, values, dict(allow) if allow else None)
    if placed is None and allow:
        placed = _flow(pl, values, allow)
    if placed is None and allow:
        placed = _greedy(pl, values, None)
    if placed is None:
        raise AssertionError("decode: units without a slot (Hall rows violated?)")
    return placed


Slots = dict[int, dict[int, int]]
"""leaf -> shape -> units the values give it."""


def _slots(pl: Placement, values: Values) -> Slots:
    slots: Slots = {}
    for cls in pl.layout.classes:
        if cls.linear:
            leaf = cls.leaves[0]
            slots[leaf] = {
                s: values[var.index]
                for s in cls.shapes
                if (var := pl.v.get((cls.idx, s))) is not None
            }
            continue
        leaves = list(cls.leaves)
        for k, pattern in enumerate(cls.patterns):
            for _ in range(values[pl.y[(cls.idx, k)].index]):
                leaf = leaves.pop(0)
                slots[leaf] = dict(zip(cls.shapes, pattern, strict=True))
    return slots


def _by_path(pl: Placement) -> dict[tuple[str, tuple[str, ...]], list[int]]:
    by_path: dict[tuple[str, tuple[str, ...]], list[int]] = defaultdict(list)
    for cls in pl.layout.classes:
        for f, path in cls.paths.items():
            for level in range(len(path) + 1):
                by_path[(f, path[:level])].extend(cls.leaves)
    return by_path


def _greedy(
    pl: Placement, values: Values, allow: dict[tuple[int, int, str], int] | None
) -> dict[tuple[int, str], dict[int, int]] | None:
    """Deepest domains first, gated units first; None if units are left."""
    layout = pl.layout
    slots = _slots(pl, values)
    by_path = _by_path(pl)
    queue_of = pl.foreign.queue_of_spec
    gated = {(s, q) for _leaf, s, q in allow or {}}
    demands = sorted(
        (
            (-len(path), (layout.specs[i].shape, queue_of[i]) not in gated, i, path, n)
            for (i, path), x in pl.x.items()
            if (n := values[x.index]) > 0
        ),
    )
    evicted = _evicted_queues(pl, values)
    out: dict[tuple[int, str], dict[int, int]] = defaultdict(dict)
    for _depth, _free, i, path, units in demands:
        spec = layout.specs[i]
        placed = out[(spec.pod_set, spec.flavor)]
        cq = queue_of[i]
        candidates = sorted(
            (leaf for leaf in by_path[(spec.flavor, path)] if leaf in slots),
            key=lambda leaf: (
                # Slots the counts give this queue are its own: take them first.
                not (allow and allow.get((leaf, spec.shape, cq), 0) > 0),
                bool(evicted.get(leaf, set()) - {cq}),
                leaf not in placed,
                -slots[leaf].get(spec.shape, 0),
                leaf,
            ),
        )
        left = units
        for leaf in candidates:
            take = min(left, slots[leaf].get(spec.shape, 0))
            gate = (leaf, spec.shape, cq)
            if allow is not None and gate in allow:
                take = min(take, allow[gate])
                allow[gate] -= max(take, 0)
            if take <= 0:
                continue
            slots[leaf][spec.shape] -= take
            placed[leaf] = placed.get(leaf, 0) + take * spec.unit
            left -= take
            if left == 0:
                break
        if left:
            return None
    return dict(out)


def _flow(
    pl: Placement, values: Values, allow: dict[tuple[int, int, str], int]
) -> dict[tuple[int, str], dict[int, int]] | None:
    """Every shape as one max-flow: units -> (gate of a queue on a victim's
    leaf) -> leaf -> sink; None if some units find no slot."""
    layout = pl.layout
    slots = _slots(pl, values)
    by_path = _by_path(pl)
    out: dict[tuple[int, str], dict[int, int]] = defaultdict(dict)
    by_shape: dict[int, list[tuple[int, tuple[str, ...], int]]] = defaultdict(list)
    for (i, path), x in sorted(pl.x.items()):
        if values[x.index] > 0:
            by_shape[layout.specs[i].shape].append((i, path, values[x.index]))
    for s, demands in sorted(by_shape.items()):
        got = _shape_flow(pl, s, demands, slots, by_path, allow)
        if got is None:
            return None
        for i, leaf, units in got:
            spec = layout.specs[i]
            placed = out[(spec.pod_set, spec.flavor)]
            placed[leaf] = placed.get(leaf, 0) + units * spec.unit
    return dict(out)


def _shape_flow(
    pl: Placement,
    s: int,
    demands: list[tuple[int, tuple[str, ...], int]],
    slots: Slots,
    by_path: dict[tuple[str, tuple[str, ...]], list[int]],
    allow: dict[tuple[int, int, str], int],
) -> list[tuple[int, int, int]] | None:
    """(spec, leaf, units) for one shape's demands, or None if short."""
    layout, queue_of = pl.layout, pl.foreign.queue_of_spec
    flow = max_flow.SimpleMaxFlow()
    nodes: dict[tuple[object, ...], int] = {("source",): 0, ("sink",): 1}

    def node(key: tuple[object, ...]) -> int:
        return nodes.setdefault(key, len(nodes))

    leaf_arcs: dict[int, tuple[int, int]] = {}
    """arc -> (spec, leaf) for every arc whose flow lands units on a leaf."""
    gates: dict[tuple[int, int, str], int] = {}
    total = 0
    for d, (i, path, units) in enumerate(demands):
        total += units
        flow.add_arc_with_capacity(0, node(("d", d)), units)
        for leaf in by_path[(layout.specs[i].flavor, path)]:
            if not slots.get(leaf, {}).get(s, 0):
                continue
            gate = (leaf, s, queue_of[i])
            if gate in allow:
                head = gates.setdefault(gate, node(("g", *gate)))
            else:
                head = node(("l", leaf))
            leaf_arcs[flow.add_arc_with_capacity(node(("d", d)), head, units)] = (
                i,
                leaf,
            )
    for gate, n in gates.items():
        flow.add_arc_with_capacity(n, node(("l", gate[0])), allow[gate])
    for key, n in list(nodes.items()):
        if key[0] == "l":
            leaf = int(str(key[1]))
            flow.add_arc_with_capacity(n, 1, slots[leaf][s])
    if flow.solve(0, 1) != flow.OPTIMAL or flow.optimal_flow() < total:
        return None
    got = {arc: flow.flow(arc) for arc in leaf_arcs}
    return [(i, leaf, got[arc]) for arc, (i, leaf) in leaf_arcs.items() if got[arc]]
