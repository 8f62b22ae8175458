"""The independent plan validator: is a Plan feasible for a Snapshot?

It is written apart from the solvers on purpose — it shares only the data
model with them and checks the *final* state in the linear form of
kueue-semantics §9 instead of replaying their incremental bookkeeping — so
that the test suite can hold every solver's output against a second,
simpler implementation.  It reports every violation, not just the first,
each with a stable rule id (see the family modules for the ids).
"""

from __future__ import annotations

from collections.abc import Callable

from models.plan import Plan
from models.snapshot import Snapshot
from models.validate import (
    bookkeeping,
    capacity,
    eligibility,
    podsets,
    preemption,
    quota,
    topology,
)
from models.validate.context import Context, Violation

__all__ = ["RULE_FAMILIES", "Violation", "validate"]

RULE_FAMILIES: tuple[tuple[str, Callable[[Context], list[Violation]]], ...] = (
    ("bookkeeping", bookkeeping.check),
    ("podsets", podsets.check),
    ("eligibility", eligibility.check),
    ("quota", quota.check),
    ("topology", topology.check),
    ("capacity", capacity.check),
    ("preemption", preemption.check),
)
"""Rule families in report order: structure first, then resources, then policy."""


def validate(snapshot: Snapshot, plan: Plan) -> list[Violation]:
    """Every way ``plan`` is infeasible for ``snapshot``; empty when feasible."""
    ctx = Context(snapshot, plan)
    out: list[Violation] = []
    for _, check in RULE_FAMILIES:
        out += check(ctx)
    return out
