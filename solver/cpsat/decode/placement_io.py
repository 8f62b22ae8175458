"""Between plans and the aggregated placement: hints in, leaves out.

:func:`placement_values` reads a plan's topology assignments as the model's
counts (units per domain, patterns per class) so the plan can hint the
search; :func:`decode` turns counts back into leaves: patterns go to member
leaves in order, then every pod set's units take slots inside its domain,
deepest domains first, which never fails when the Hall rows hold (a tree is
a laminar family).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping

from placewise.models.plan import Plan
from placewise.solver.cpsat.model.placement import Placement

log = logging.getLogger("placewise.cpsat")

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
    on_leaf: dict[tuple[int, tuple[str, ...], int], int] = defaultdict(int)
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
                on_leaf[(spec_i, path, leaf)] += units
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
    for spot, a in pl.foreign.assign.items():
        out[a.index] = on_leaf.get(spot, 0)
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

    Units the values assign to a victim's leaf (:mod:`.foreign`) go there
    first; the rest take the other slots inside their domains, deepest
    domains first, which never fails when the Hall rows hold (a tree is a
    laminar family, and the assigned slots are carved out of its rows)."""
    spots = {k: n for k, a in pl.foreign.assign.items() if (n := values[a.index])}
    placed = _greedy(pl, values, spots)
    if placed is None and spots:  # never expected: decode as before the rows
        log.warning("decode: units stranded beside the assigned slots")
        placed = _greedy(pl, values, {})
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
    pl: Placement, values: Values, spots: Mapping[tuple[int, tuple[str, ...], int], int]
) -> dict[tuple[int, str], dict[int, int]] | None:
    """Assigned units first, then deepest domains first; None if units are left."""
    layout = pl.layout
    slots = _slots(pl, values)
    by_path = _by_path(pl)
    out: dict[tuple[int, str], dict[int, int]] = defaultdict(dict)
    left_of = {key: values[x.index] for key, x in pl.x.items()}
    for (i, path, leaf), n in sorted(spots.items()):
        spec = layout.specs[i]
        if slots.get(leaf, {}).get(spec.shape, 0) < n or left_of[(i, path)] < n:
            return None
        slots[leaf][spec.shape] -= n
        left_of[(i, path)] -= n
        placed = out[(spec.pod_set, spec.flavor)]
        placed[leaf] = placed.get(leaf, 0) + n * spec.unit
    demands = sorted(
        (-len(path), i, path, n) for (i, path), n in left_of.items() if n > 0
    )
    evicted = _evicted_queues(pl, values)
    queue_of = pl.foreign.queue_of_spec
    for _depth, i, path, units in demands:
        spec = layout.specs[i]
        placed = out[(spec.pod_set, spec.flavor)]
        cq = queue_of[i] if queue_of else _queue(pl, i)
        candidates = sorted(
            (leaf for leaf in by_path[(spec.flavor, path)] if leaf in slots),
            key=lambda leaf: (
                bool(evicted.get(leaf, set()) - {cq}),
                leaf not in placed,
                -slots[leaf].get(spec.shape, 0),
                leaf,
            ),
        )
        left = units
        for leaf in candidates:
            take = min(left, slots[leaf].get(spec.shape, 0))
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


def _queue(pl: Placement, spec: int) -> str:
    data = pl.data
    return data.workloads[data.pod_sets[pl.layout.specs[spec].pod_set].wl].cq.name
