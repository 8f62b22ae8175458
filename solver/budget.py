"""The time budget of a solve: one deadline, passed down.

A solve splits ``--time-limit`` among its steps (the warm start, the model,
each stage, the provers and the rack search beside it, the relaxed model's
bounds).  Each step receives a :class:`Budget` — a point in time on the
monotonic clock — and gives its own steps a :meth:`Budget.share` of what is
left, so that time a step did not use passes to the next one and no step
converts between durations and points in time on its own.  Seconds are read
(:meth:`Budget.remaining`) only where the time leaves Python: a CP-SAT
parameter, the HiGHS child's payload, a thread's wait.

The margin kept under the caller's limit (:meth:`Budget.less_margin`) is
written here once: the optimizer (:mod:`placewise.solver.cpsat.solve`) and
the multi-cluster dispatch (:mod:`placewise.solver.multicluster`) both use it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

MARGIN = 0.5
"""Seconds kept under the caller's limit for CP-SAT's overshoot (it stops a
little after its own limit) and the read-back of the plan."""
MARGIN_SHARE = 0.1
"""The margin is at most this share of the limit (short limits in tests)."""


@dataclass(frozen=True, slots=True)
class Budget:
    """From ``start`` until ``deadline`` (``time.monotonic()`` seconds)."""

    start: float
    deadline: float

    @classmethod
    def of(cls, seconds: float) -> Budget:
        """``seconds`` from now."""
        now = time.monotonic()
        return cls(now, now + seconds)

    @property
    def seconds(self) -> float:
        """The whole budget, as given (spent or not)."""
        return self.deadline - self.start

    def remaining(self) -> float:
        """Seconds left until the deadline (0 once past it)."""
        return max(0.0, self.deadline - time.monotonic())

    def spent(self) -> float:
        """Seconds since the budget began."""
        return time.monotonic() - self.start

    def share(self, weight: float) -> Budget:
        """``weight`` (0..1) of what is left, from now: a step's part, the
        rest staying for the steps after it."""
        now = time.monotonic()
        return Budget(now, now + max(0.0, self.deadline - now) * weight)

    def short_of(self, seconds: float) -> Budget:
        """The same budget ending ``seconds`` earlier (kept for a later step)."""
        return Budget(self.start, self.deadline - seconds)

    def less_margin(self) -> Budget:
        """The caller's limit less the margin for overshoot and read-back."""
        return self.short_of(min(MARGIN, MARGIN_SHARE * self.seconds))

    def or_later(self, other: Budget) -> Budget:
        """The later of the two deadlines (a prover allowed past its stage)."""
        return other if other.deadline > self.deadline else self
