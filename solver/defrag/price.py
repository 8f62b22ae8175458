"""What a move costs and what a gang admitted through moves gains.

Issue 19 prices a preemption: the GPUs it adds to the victim's tier must
outweigh ``preemption_price`` x the GPU-hours it throws away, plus
``reversal_gpus`` for reversing a decision already acted on.  A move is a
preemption whose victim runs again, so it loses the same work; but the gang
it admits is usually in a higher tier than its victims, where the tiers
alone would take any move.  Hence the move's own rule: a gang admitted
through moves must gain more GPUs (its own) than its moves cost at that
price — the GPUs it gains must run an hour to repay each GPU-hour lost at
price 1.  Without it the tiers bought 32-GPU gangs with 50-70 GPU-hours of
old work per move (issue 20's bench, benchmarks/README.md).

Units are 1/UNITS GPU (GPU-minutes of lost work at price 1), exact
integers; lost work is rounded up, as :func:`placewise.solver.lost_work.
price_units` does for preemptions.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

from placewise.models.snapshot import Snapshot
from placewise.solver.lost_work import price_units
from placewise.solver.policy import Policy

UNITS = 60
"""A GPU is 60 units: a GPU-hour of lost work at price 1 is 60 units, one
GPU-minute one unit."""


def _timed(snapshot: Snapshot) -> bool:
    return any(rt.elapsed is not None for rt in snapshot.run_times.values())


def move_cost(
    snapshot: Snapshot, policy: Policy, lost_seconds: int, victim_gpus: int
) -> int:
    """A move's cost in units: its lost work at the move price, plus
    ``reversal_gpus`` (at most the victim's GPUs, and only with a clock);
    0 when moves are not priced."""
    price = policy.move_rules.price
    if not price:
        return 0
    at = replace(policy, preemption_price=price)
    lost = price_units(lost_seconds, UNITS, at) if lost_seconds > 0 else 0
    if policy.reversal_gpus <= 0 or victim_gpus <= 0 or not _timed(snapshot):
        return lost
    reversal = Fraction(min(policy.reversal_gpus, victim_gpus)).limit_denominator(10**6)
    return lost - ((-UNITS * reversal) // 1)


def gain(gpus: int) -> int:
    """What admitting a gang of ``gpus`` GPUs is worth, in units."""
    return gpus * UNITS
