"""Room an eviction frees serves only queues entitled to it (the model's side).

The validator's ``preemption.room-elsewhere`` (formats.md) lets the capacity
a victim frees on a leaf serve its own ClusterQueue, its preemptor's, or a
queue Kueue's cohort rules would let evict it directly -- never another.
The aggregated placement counts *slots of a shape* on a leaf, not whose pods
fill them, so without this family the search lets one queue's gang take the
room an in-queue eviction of another queue freed; the settling pass then
undoes that plan and the warm start is returned (fragmented-running: every
searched plan had as many such victims as unneeded ones).

On a *gated* leaf (one with a victim whose queue is not the only one that
could place pods there), variables ``A{spec}_{leaf}`` say how many units of
each pod set land there, and ``F{leaf}_{shape}_{queue}`` sum them per queue.
Rows:

* the queues' units are the leaf's slots, and a pod set's units on gated
  leaves are some of its units in the domain that holds them;
* per victim and resource: the units of queues not entitled to it fit the
  leaf's free capacity plus what the *other* victims there free (its own
  room stays with who may take it); without the eviction the leaf's own
  capacity row already implies it, so an indicator is needed only to waive
  it for a queue whose entitlement depends on the plan;
* Hall's rows over the other slots, per shape and domain holding a gated
  leaf: the units not assigned to gated leaves fit the slots left.  The
  other slots serve any pod set of their domain, so these rows are exact
  and decoding (:func:`placewise.solver.cpsat.decode.placement_io.decode`)
  never strands a unit.

A queue is entitled to a victim when it is the victim's own, or when one of
its workloads could be the victim's preemptor in the plan: the indicator of
a preemption link (:mod:`placewise.solver.problem.pairs`) whose members are
in the queue.  The validator entitles the credited preemptor's queue and
every queue one of whose admissions may evict the victim, both of which
make such a link hold, so every plan it accepts stays a plan of the model.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

if TYPE_CHECKING:
    from placewise.solver.cpsat.model.placement import Placement

LinearTerms = list[tuple[int, cp_model.IntVar]]
Key = tuple[int, int, str]
"""(leaf, shape, queue)."""

CELL_LIMIT = 200_000
"""Most ``F`` variables plus Hall terms this family may add; above it the
model goes without (the decoder and the settling pass still hold the rule)."""


Links = Callable[[int, str], list[cp_model.IntVar]]
"""(victim, queue) -> indicators, any of which entitles the queue to the
victim's room; empty: never entitled."""


@dataclass(slots=True)
class ForeignRoom:
    """The ``F`` and ``A`` variables, read by the decoder and the hint."""

    units: dict[Key, cp_model.IntVar] = field(default_factory=dict)
    assign: dict[tuple[int, tuple[str, ...], int], cp_model.IntVar] = field(
        default_factory=dict
    )
    """(spec, its domain path, gated leaf) -> units of the spec on the leaf."""
    queue_of_spec: list[str] = field(default_factory=list)


def build(pl: Placement, links: Links) -> ForeignRoom:
    """Add the family to ``pl``'s model; returns its variables (none when the
    instance evicts nothing on a TAS leaf, or the family would be too big)."""
    data, layout = pl.data, pl.layout
    room = ForeignRoom(
        queue_of_spec=[
            data.workloads[data.pod_sets[s.pod_set].wl].cq.name for s in layout.specs
        ]
    )
    if not layout.victims_on:
        return room
    own = [vd.info.cq for vd in data.victims]
    queues_of_shape: dict[int, set[str]] = defaultdict(set)
    for i, spec in enumerate(layout.specs):
        queues_of_shape[spec.shape].add(room.queue_of_spec[i])
    plan: list[tuple[int, int, int, str]] = []
    for cls in layout.classes:
        if not cls.linear or cls.leaves[0] not in layout.victims_on:
            continue
        leaf = cls.leaves[0]
        on = layout.victims_on[leaf]
        for s in cls.shapes:
            if pl.v.get((cls.idx, s)) is None:
                continue
            if any(q != own[vi] for q in queues_of_shape[s] for vi, _ in on):
                plan.extend((cls.idx, leaf, s, q) for q in sorted(queues_of_shape[s]))
    if not plan:
        return room
    reach = _reachers(pl, {(leaf, s) for _c, leaf, s, _q in plan})
    if len(plan) + sum(len(r) for r in reach.values()) > CELL_LIMIT:
        return room
    model = pl.model
    for c, leaf, s, q in plan:
        slot = pl.v[(c, s)]
        room.units[(leaf, s, q)] = model.new_int_var(0, _ub(slot), f"F{leaf}_{s}_{q}")
    _every_slot_has_a_queue(pl, room)
    _victim_rows(pl, room, own, links)
    _assign(pl, room, reach)
    _carved_hall(pl, room)
    return room


def _reachers(
    pl: Placement, gated: set[tuple[int, int]]
) -> dict[tuple[int, int], list[tuple[int, tuple[str, ...]]]]:
    """(gated leaf, shape) -> the (spec, domain path) units that may land there."""
    layout = pl.layout
    class_of = {c.leaves[0]: c for c in layout.classes if c.linear}
    by_prefix: dict[tuple[int, tuple[str, ...]], list[tuple[int, tuple[str, ...]]]]
    by_prefix = defaultdict(list)
    for i, path in pl.x:
        by_prefix[(layout.specs[i].shape, path)].append((i, path))
    out: dict[tuple[int, int], list[tuple[int, tuple[str, ...]]]] = {}
    for leaf, s in sorted(gated):
        path = class_of[leaf].paths[layout.shapes[s].flavor]
        prefixes = [path[:k] for k in range(len(path) + 1)]
        out[(leaf, s)] = [key for p in prefixes for key in by_prefix.get((s, p), [])]
    return out


def _every_slot_has_a_queue(pl: Placement, room: ForeignRoom) -> None:
    """A gated leaf's slots of a shape are the queues' units there, so a slot
    no queue may fill is no slot (the aggregate Hall rows would count it)."""
    by_slot: dict[tuple[int, int], list[cp_model.IntVar]] = defaultdict(list)
    for (leaf, s, _q), f in room.units.items():
        by_slot[(leaf, s)].append(f)
    class_of = {c.leaves[0]: c.idx for c in pl.layout.classes if c.linear}
    for (leaf, s), fs in sorted(by_slot.items()):
        pl.model.add(sum(fs) == pl.v[(class_of[leaf], s)])


def _victim_rows(
    pl: Placement, room: ForeignRoom, own: list[str], links: Links
) -> None:
    """Per victim and resource: the units of queues not entitled to it fit
    without its room.  A queue entitled only if a link holds is waived by
    an indicator of those links (one per victim and queue), with a big-M
    term.  One row for all queues lets the room one waived queue may take
    cover another queue's units (a Helios replay's searched plans put a
    borrowing queue's gang on room a reclaim freed for another queue, and
    settling withdrew them), so the queues of the victim's own cohort also
    get a row of their own, each linked one through its excess
    (:func:`_excess`).  Across cohorts a reclaim can hang on a cohort in
    between borrowing through the plan's admissions, which the links do
    not see (the validator does): there the shared row stays the rule,
    else valid plans of Kueue's (multi-team) would not be the model's."""
    layout = pl.layout
    tree = pl.data.tree

    def beside(q: str, victim_queue: str) -> bool:
        """Both queues in one cohort: the links say all there is to know."""
        return tree.node(q).parent is tree.node(victim_queue).parent

    free_of = {c.leaves[0]: c.free for c in layout.classes if c.linear}
    per_leaf: dict[int, list[tuple[int, str, cp_model.IntVar]]] = defaultdict(list)
    for (leaf, s, q), f in room.units.items():
        per_leaf[leaf].append((s, q, f))
    for leaf, fs in sorted(per_leaf.items()):
        on = layout.victims_on[leaf]
        free = free_of[leaf]
        for vi, _ in on:
            by_queue: dict[str, dict[str, LinearTerms]] = defaultdict(
                lambda: defaultdict(list)
            )
            for s, q, f in fs:
                if q == own[vi]:
                    continue
                for r, need in layout.shapes[s].request:
                    by_queue[q][r].append((need, f))
            waive: dict[str, cp_model.IntVar] = {}
            for q in sorted(by_queue):
                ors = links(vi, q)
                if ors:
                    waive[q] = _any_of(pl, ors, f"W{vi}_{q}")
            resources = sorted({r for per in by_queue.values() for r in per})
            for r in resources:
                cap = free.get(r, 0)
                if cap >= 1 << 61:
                    continue
                others = [
                    (-u.get(r, 0), pl.victims[vj])
                    for vj, u in on
                    if vj != vi and u.get(r, 0)
                ]
                queues = [q for q in sorted(by_queue) if by_queue[q][r]]
                relief = [
                    (-sum(c * _ub(x) for c, x in by_queue[q][r]), waive[q])
                    for q in queues
                    if q in waive
                ]
                every = [t for q in queues for t in by_queue[q][r]]
                pl.model.add(sum(c * x for c, x in every + relief + others) <= cap)
                near = [q for q in queues if beside(q, own[vi])]
                if len(near) < 2 or not any(q in waive for q in near):
                    continue
                mine: LinearTerms = []
                for q in near:
                    if q in waive:
                        g = _excess(pl, by_queue[q][r], waive[q], f"G{vi}_{q}_{r}")
                        mine.append((1, g))
                    else:
                        mine += by_queue[q][r]
                pl.model.add(sum(c * x for c, x in mine + others) <= cap)


def _excess(
    pl: Placement, mine: LinearTerms, waived: cp_model.IntVar, name: str
) -> cp_model.IntVar:
    """A queue's units on the leaf (in one resource) unless ``waived``:
    ``g >= sum(mine) - M * waived``, ``g >= 0``; the victim's row keeps it
    as small as that allows."""
    top = sum(c * _ub(x) for c, x in mine)
    g = pl.model.new_int_var(0, top, name)
    pl.model.add(g >= sum(c * x for c, x in mine) - top * waived)
    pl.derive(
        g,
        lambda val: 0 if val[waived.index] else sum(c * val[x.index] for c, x in mine),
    )
    return g


def _any_of(pl: Placement, ors: list[cp_model.IntVar], name: str) -> cp_model.IntVar:
    if len(ors) == 1:
        return ors[0]
    w = pl.model.new_bool_var(name)
    pl.model.add(w <= sum(ors))
    pl.derive(w, lambda val: int(any(val[x.index] for x in ors)))
    return w


def _assign(
    pl: Placement,
    room: ForeignRoom,
    reach: dict[tuple[int, int], list[tuple[int, tuple[str, ...]]]],
) -> None:
    """Whose units fill a gated leaf, pod set by pod set: ``A`` variables
    tie each queue's ``F`` to its pod sets' units in the domains around it."""
    model = pl.model
    queues_at: dict[tuple[int, int], list[str]] = defaultdict(list)
    for leaf, s, q in room.units:
        queues_at[(leaf, s)].append(q)
    per_x: dict[tuple[int, tuple[str, ...]], list[cp_model.IntVar]] = defaultdict(list)
    for (leaf, s), keys in sorted(reach.items()):
        by_queue: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        for i, path in keys:
            x = pl.x[(i, path)]
            a = model.new_int_var(0, _ub(x), f"A{i}_{leaf}")
            room.assign[(i, path, leaf)] = a
            per_x[(i, path)].append(a)
            by_queue[room.queue_of_spec[i]].append(a)
        for q, f_key in ((q, (leaf, s, q)) for q in sorted(by_queue)):
            f = room.units.get(f_key)
            if f is not None:
                model.add(f == sum(by_queue[q]))
        for q in queues_at[(leaf, s)]:
            if q not in by_queue:
                model.add(room.units[(leaf, s, q)] == 0)
    for key, a_s in sorted(per_x.items()):
        model.add(sum(a_s) <= pl.x[key])


def _carved_hall(pl: Placement, room: ForeignRoom) -> None:
    """Hall's rows over the ungated slots: per shape and domain holding a
    gated leaf, the units not assigned to gated leaves fit the slots of the
    other classes.  With gated slots assigned explicitly and the rest one
    commodity on a tree, the rows are exact (the decoder never strands)."""
    layout = pl.layout
    gated = {(leaf, s) for leaf, s, _q in room.units}
    doms: set[tuple[int, tuple[str, ...]]] = set()
    for c in layout.classes:
        for s in c.shapes:
            if c.linear and (c.leaves[0], s) in gated:
                path = c.paths[layout.shapes[s].flavor]
                doms.update((s, path[:k]) for k in range(len(path) + 1))
    assigned: dict[tuple[int, tuple[str, ...]], list[cp_model.IntVar]] = defaultdict(
        list
    )
    for (i, path, _leaf), a in room.assign.items():
        assigned[(i, path)].append(a)
    demand: dict[tuple[int, tuple[str, ...]], LinearTerms] = defaultdict(list)
    for (i, path), x in pl.x.items():
        s = layout.specs[i].shape
        rest = [(1, x)] + [(-1, a) for a in assigned.get((i, path), [])]
        for k in range(len(path) + 1):
            if (s, path[:k]) in doms:
                demand[(s, path[:k])] += rest
    supply: dict[tuple[int, tuple[str, ...]], LinearTerms] = defaultdict(list)
    for c in layout.classes:
        for s in c.shapes:
            if c.linear and (c.leaves[0], s) in gated:
                continue
            path = c.paths[layout.shapes[s].flavor]
            for k in range(len(path) + 1):
                if (s, path[:k]) in demand:
                    supply[(s, path[:k])] += pl.supply(c, s)
    for key, terms in sorted(demand.items(), key=lambda kv: kv[0]):
        have = supply.get(key, [])
        pl.model.add(sum(c * x for c, x in terms) <= sum(c * x for c, x in have))


def _ub(x: cp_model.IntVar) -> int:
    return int(list(x.proto.domain)[-1])
