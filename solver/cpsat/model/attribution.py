"""Cross-tier evictions priced in the tier that gains from them.

The objective is lexicographic, one stage per priority tier from the
highest down.  A victim's lost work is priced in its own tier's stage
(:mod:`placewise.solver.lost_work`), which chooses *among* the victim sets
a higher tier left open but never weighs the higher tier's gain against
the work it throws away: replayed over hours, nearly all the wasted
GPU-hours were a higher tier evicting a lower one (issue 19, measured in
benchmarks/README).  Kueue lets a higher priority preempt; it does not
oblige it to, and not preempting is always allowed, so pricing such an
eviction in the gaining tier stays inside Kueue's rules.

Which tier gains is not a variable of the model: a victim needs *some*
admitted preemptor its queue policy allows (the preemption links of
:mod:`placewise.solver.cpsat.model.constraints`), and several tiers may
hold one.  So each victim gets an attribution ``Y[v, t]`` per higher tier
``t`` it is linked to, allowed only while the plan admits a workload of
tier ``t`` that may evict it (a member of one of its preemption links),
and the eviction must be attributed to one of them -- or go free (priced
in the victim's own stage alone, as before) when the plan admits *no*
such higher workload and a link of its own tier or lower holds.  (Admitted
members, not the links themselves: a link's indicator is only held from
above, so the model could switch a higher one off to go free.)  Tier ``t``'s stage pays
``cross_tier_price`` GPUs of tier ``t`` per GPU-hour the victim loses for
each ``Y[v, t]`` set.  The stages run top-down, so an eviction is charged
to the lowest higher tier that could have made it: a tier pays only for
evictions no lower one accounts for, and a tier's hold never forbids a
lower tier's own evictions (it would if the price sat in every higher
stage).  A same-tier link does not excuse a higher tier: the replays
showed the model admitting a same-tier job beside a 128-GPU eviction
that served a higher one, which would make the price moot.  The cost:
in a solve that admits a higher workload able to evict a victim, evicting
it for its own tier is charged to the higher tier too.

A plan names one preemptor per victim, not the model's attribution, so
:func:`placewise.solver.cpsat.model.objective.priced_vector` applies the
same rule to a plan from its admissions: charged to the lowest higher
tier one of whose linked workloads the plan admits (``members``).

Only plain linear rows (the hint checks a plan row by row), and every
plan the model had before keeps a completion (:func:`_attributed`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placewise.solver.cpsat.model.constraints import Constraints
from placewise.solver.cpsat.model.variables import Derive, Variables
from placewise.solver.lost_work import LostWork
from placewise.solver.policy import Policy
from placewise.solver.problem.data import ModelData


@dataclass(frozen=True, slots=True)
class Attributed:
    """One victim's eviction, if charged to one higher tier."""

    key: str
    gpu_seconds: int
    """What evicting it throws away (:class:`LostWork`)."""
    charged: cp_model.IntVar
    """1 when the eviction is attributed to this tier."""
    members: frozenset[str]
    """Workloads of this tier that may evict it (its links' members)."""
    between: frozenset[str]
    """Those of the higher tiers below this one: any of them admitted
    takes the charge first."""


def attribute(
    model: cp_model.CpModel,
    data: ModelData,
    v: Variables,
    c: Constraints,
    lost: LostWork,
    pol: Policy,
) -> dict[int, list[Attributed]]:
    """Tier -> the lower-tier victims it may be charged for.  Empty with a
    zero ``cross_tier_price`` or nothing priced (no clock): the model is
    then the one before this rule."""
    out: dict[int, list[Attributed]] = defaultdict(list)
    if pol.cross_tier_price <= 0 or not lost.gpu_seconds:
        return out
    admitted: dict[tuple[int, ...], cp_model.IntVar] = {}

    def any_admitted(members: tuple[int, ...]) -> cp_model.IntVar:
        """1 when a member is admitted (held from below; one per class)."""
        if members not in admitted:
            m = model.new_bool_var(f"M{len(admitted)}")
            admits = [v.workloads[w].admit for w in members]
            for a in admits:
                model.add(m >= a)
            v.derive(m, _any(admits))
            admitted[members] = m
        return admitted[members]

    for vd, x in zip(data.victims, v.victims, strict=True):
        gpu_seconds = lost.gpu_seconds.get(vd.info.key, 0)
        if gpu_seconds <= 0:
            continue
        own: list[cp_model.IntVar] = []
        higher: dict[int, list[cp_model.IntVar]] = defaultdict(list)
        keys: dict[int, set[str]] = defaultdict(set)
        for pair in data.pairs.get(vd.idx, []):
            if not pair.members:
                continue
            tier = data.workloads[pair.members[0]].info.priority
            if tier > vd.info.priority:
                higher[tier].append(any_admitted(pair.members))
                keys[tier].update(data.workloads[m].key for m in pair.members)
            else:
                own.append(c._link(pair, vd.info.cq))
        if not higher:
            continue  # only its own tier or lower may evict it: priced there
        every = sorted({a for ms in higher.values() for a in ms}, key=_index)
        charged: list[cp_model.IntVar] = []
        below: list[cp_model.IntVar] = []
        between: set[str] = set()
        for tier in sorted(higher):
            ms = sorted(set(higher[tier]), key=_index)
            y = model.new_bool_var(f"Y{vd.idx}_{tier}")
            model.add(y <= sum(ms))
            v.derive(y, _attributed(x, below, ms))
            charged.append(y)
            out[tier].append(
                Attributed(
                    vd.info.key,
                    gpu_seconds,
                    y,
                    frozenset(keys[tier]),
                    frozenset(between),
                )
            )
            below = below + ms
            between |= keys[tier]
        if own:
            free = model.new_bool_var(f"Y{vd.idx}_own")
            model.add(free <= sum(own))
            for a in every:
                model.add(free + a <= 1)
            v.derive(free, _free(x, own, every))
            charged.append(free)
        model.add(x <= sum(charged))
    return out


def _index(a: cp_model.IntVar) -> int:
    return int(a.index)


def _any(xs: list[cp_model.IntVar]) -> Derive:
    return lambda val: int(any(val[x.index] for x in xs))


def _attributed(
    x: cp_model.IntVar, below: list[cp_model.IntVar], links: list[cp_model.IntVar]
) -> Derive:
    """A plan's attribution: to the lowest higher tier that admits a
    workload which may evict it."""

    def value(val: dict[int, int]) -> int:
        if not val[x.index] or any(val[a.index] for a in below):
            return 0
        return int(any(val[a.index] for a in links))

    return value


def _free(
    x: cp_model.IntVar, own: list[cp_model.IntVar], higher: list[cp_model.IntVar]
) -> Derive:
    """Free when evicted, no higher tier admits one that may evict it, and
    a link of its own tier or lower holds."""

    def value(val: dict[int, int]) -> int:
        if not val[x.index] or any(val[a.index] for a in higher):
            return 0
        return int(any(val[a.index] for a in own))

    return value
