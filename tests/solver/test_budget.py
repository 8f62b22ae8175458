"""The solve's time budget (solver/budget.py): one deadline, shared down.

The clock is replaced by a counter the test moves, so that every figure is
exact and no assertion depends on the machine's speed."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from placewise.solver import budget as budget_module
from placewise.solver.budget import MARGIN, Budget


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(budget_module.time, "monotonic", c)
    return c


def test_a_budget_counts_down_from_its_duration(clock: Clock) -> None:
    b = Budget.of(10.0)
    assert (b.start, b.deadline, b.seconds) == (100.0, 110.0, 10.0)
    clock.now = 104.0
    assert b.remaining() == 6.0 and b.spent() == 4.0
    clock.now = 111.0
    assert b.remaining() == 0.0  # never negative once past


def test_a_share_is_of_what_is_left_from_now(clock: Clock) -> None:
    b = Budget.of(10.0)
    clock.now = 102.0
    half = b.share(0.5)
    assert (half.start, half.deadline) == (102.0, 106.0)
    clock.now = 107.0  # the first step overran its share: the next gets the rest
    assert b.share(1.0).deadline == 110.0 and b.share(0.5).seconds == 1.5
    clock.now = 120.0
    assert b.share(0.5).seconds == 0.0


def test_the_margin_is_written_once_and_bounded_by_a_share_of_the_limit(
    clock: Clock,
) -> None:
    assert Budget.of(10.0).less_margin().deadline == 110.0 - MARGIN
    assert Budget.of(1.0).less_margin().deadline == pytest.approx(100.9)
    kept = Budget.of(10.0).short_of(2.0)
    assert (kept.start, kept.deadline) == (100.0, 108.0)


def test_or_later_keeps_the_later_deadline(clock: Clock) -> None:
    short, long = Budget.of(1.0), Budget.of(30.0)
    assert short.or_later(long) is long and long.or_later(short) is long


def test_a_budget_is_frozen() -> None:
    b = Budget.of(1.0)
    with pytest.raises(FrozenInstanceError):
        b.deadline = 0.0  # type: ignore[misc]
