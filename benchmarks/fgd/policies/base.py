"""The surface every replayed policy offers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState

__all__ = ["Policy"]


class Policy(Protocol):
    """Decides where a window of arrivals goes, given the current state.

    ``window`` is how many consecutive arrivals the replay hands over at once;
    decisions must be feasible *in order* (each on the state left by the
    previous ones) because the replay applies them one by one.
    """

    name: str
    window: int

    def decide(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        """One decision per pod; None means the pod is dropped for good."""
        ...


def first_cards(row: Iterable[int], num: int, milli: int) -> tuple[int, ...]:
    """The first ``num`` cards by index with ``milli`` left (Open-Gpu-Share's
    exclusive allocation; for whole-GPU pods these are the first free cards)."""
    out: list[int] = []
    for c, left in enumerate(row):
        if left >= milli:
            out.append(c)
            if len(out) == num:
                return tuple(out)
    raise ValueError("not enough cards; the node should have been filtered out")


def tightest_card(row: Iterable[int], milli: int) -> int:
    """The card with the least milli left that still fits; lowest index on ties."""
    best, best_left = -1, 1 << 62
    for c, left in enumerate(row):
        if milli <= left < best_left:
            best, best_left = c, int(left)
    if best < 0:
        raise ValueError("no card fits; the node should have been filtered out")
    return best
