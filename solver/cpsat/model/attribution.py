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
admitted preemptor its queue policy allows, and the room it frees may serve
its own queue, its preemptor's or a queue entitled to evict it (the
validator's ``preemption.room-elsewhere``) -- possibly a higher tier's
workload that is no member of the victim's own preemption links.  The
replays showed both loopholes of a finer attribution: charged to the tier
of a link that holds, the model admitted a same-tier job beside a 128-GPU
eviction that served a higher tier, or evicted "for" a priority-100
reclaim while the room went to a priority-10000 gang (multi-team seed 1,
seven evictions in one solve).  So the rule is coarse and safe: each victim
gets an attribution ``Y[v, t]`` per higher tier ``t`` that has pending
work, allowed only when the plan admits some work of tier ``t``; the
eviction is attributed to one of them, or goes free (priced in the
victim's own stage alone, as before) only when the plan admits *no*
higher-tier work and a preemption link of its own tier or lower holds.
Tier ``t``'s stage pays ``cross_tier_price`` GPUs of tier ``t`` per
GPU-hour the victim loses for its ``Y[v, t]``.  The stages run top-down,
so an eviction is charged to the lowest higher tier the plan admits work
of: a tier's hold never forbids a lower tier's own evictions in a solve
where the tiers above admit nothing.  The cost: in a solve that admits
higher work, a lower tier's own eviction is charged to it too, and waits
(not preempting is always allowed) unless the higher tier's gain pays.

A plan names one preemptor per victim, not the model's attribution, so
:func:`placewise.solver.cpsat.model.objective.priced_vector` applies the
same rule to a plan from its admissions (``members``, ``between``).

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
    """This tier's pending workloads: one admitted takes the charge."""
    between: frozenset[str]
    """Those of the higher tiers below this one, which take it first."""


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
    tiers: dict[int, list[cp_model.IntVar]] = defaultdict(list)
    keys: dict[int, set[str]] = defaultdict(set)
    for wd in data.workloads:
        tiers[wd.info.priority].append(v.workloads[wd.idx].admit)
        keys[wd.info.priority].add(wd.key)
    members = {t: frozenset(ks) for t, ks in keys.items()}
    admits: dict[int, cp_model.IntVar] = {}
    for tier in sorted(tiers):
        h = model.new_bool_var(f"H{tier}")
        for a in tiers[tier]:
            model.add(h >= a)
        v.derive(h, _any(tiers[tier]))
        admits[tier] = h
    for vd, x in zip(data.victims, v.victims, strict=True):
        gpu_seconds = lost.gpu_seconds.get(vd.info.key, 0)
        higher = [t for t in sorted(admits) if t > vd.info.priority]
        if gpu_seconds <= 0 or not higher:
            continue
        charged: list[cp_model.IntVar] = []
        below: list[cp_model.IntVar] = []
        between: frozenset[str] = frozenset()
        for tier in higher:
            y = model.new_bool_var(f"Y{vd.idx}_{tier}")
            model.add(y <= admits[tier])
            v.derive(y, _attributed(x, list(below), admits[tier]))
            charged.append(y)
            out[tier].append(
                Attributed(vd.info.key, gpu_seconds, y, members[tier], between)
            )
            below.append(admits[tier])
            between = between | members[tier]
        own = [
            c._link(pair, vd.info.cq)
            for pair in data.pairs.get(vd.idx, [])
            if pair.members
            and data.workloads[pair.members[0]].info.priority <= vd.info.priority
        ]
        if own:
            free = model.new_bool_var(f"Y{vd.idx}_own")
            model.add(free <= sum(own))
            for tier in higher:
                model.add(free + admits[tier] <= 1)
            v.derive(free, _free(x, own, [admits[t] for t in higher]))
            charged.append(free)
        model.add(x <= sum(charged))
    return out


def _index(a: cp_model.IntVar) -> int:
    return int(a.index)


def _any(xs: list[cp_model.IntVar]) -> Derive:
    return lambda val: int(any(val[x.index] for x in xs))


def _attributed(
    x: cp_model.IntVar, below: list[cp_model.IntVar], admits: cp_model.IntVar
) -> Derive:
    """A plan's attribution: to the lowest higher tier that admits work."""

    def value(val: dict[int, int]) -> int:
        if not val[x.index] or any(val[a.index] for a in below):
            return 0
        return val[admits.index]

    return value


def _free(
    x: cp_model.IntVar, own: list[cp_model.IntVar], higher: list[cp_model.IntVar]
) -> Derive:
    """Free when evicted, no higher tier admits work, and a link of its own
    tier or lower holds."""

    def value(val: dict[int, int]) -> int:
        if not val[x.index] or any(val[a.index] for a in higher):
            return 0
        return int(any(val[a.index] for a in own))

    return value
