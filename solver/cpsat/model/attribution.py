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
``t`` it is linked to, allowed only while a link of tier ``t`` holds, and
the eviction must be attributed to one of them or to a link of its own
tier or lower (free: that case is priced in the victim's own stage, as
before).  Tier ``t``'s stage pays ``cross_tier_price`` GPUs of tier ``t``
per GPU-hour the victim loses for each ``Y[v, t]`` set.  The stages run
top-down, so an eviction is charged to the lowest tier that could have
made it: a tier pays only for evictions no lower tier accounts for, and a
tier's hold never forbids a lower tier's own evictions (it would if the
price sat in every higher stage).

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
    for vd, x in zip(data.victims, v.victims, strict=True):
        gpu_seconds = lost.gpu_seconds.get(vd.info.key, 0)
        if gpu_seconds <= 0:
            continue
        free: list[cp_model.IntVar] = []
        higher: dict[int, list[cp_model.IntVar]] = defaultdict(list)
        for pair in data.pairs.get(vd.idx, []):
            if not pair.members:
                continue
            tier = data.workloads[pair.members[0]].info.priority
            link = c._link(pair, vd.info.cq)
            (higher[tier] if tier > vd.info.priority else free).append(link)
        if not higher:
            continue  # only its own tier or lower may evict it: priced there
        charged: list[cp_model.IntVar] = []
        lower: list[cp_model.IntVar] = list(free)
        for tier in sorted(higher):
            links = sorted(set(higher[tier]), key=lambda a: a.index)
            y = model.new_bool_var(f"Y{vd.idx}_{tier}")
            model.add(y <= sum(links))
            v.derive(y, _attributed(x, lower, links))
            charged.append(y)
            lower = lower + links
            out[tier].append(Attributed(vd.info.key, gpu_seconds, y))
        model.add(x <= sum(charged) + sum(free))
    return out


def _attributed(
    x: cp_model.IntVar, lower: list[cp_model.IntVar], links: list[cp_model.IntVar]
) -> Derive:
    """A plan's attribution: to the lowest tier with a link that holds,
    free when one of its own tier or lower does."""

    def value(val: dict[int, int]) -> int:
        if not val[x.index] or any(val[a.index] for a in lower):
            return 0
        return int(any(val[a.index] for a in links))

    return value
