"""Ordered preference types of Kueue's flavor assigner.

Preference is written as ordered enums and one comparator, as Kueue does
(``FlavorAssignmentMode``, ``granularMode``, ``isPreferred``), so the
fungibility rules read the same here as in Kueue's source.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from placewise.models.cluster import FlavorFungibility


class Mode(IntEnum):
    """Whole-assignment mode, lowest to highest preference."""

    NO_FIT = 0
    PREEMPT = 1
    DEFERRED_FIT = 2
    FIT = 3


class PreemptionMode(IntEnum):
    """Per flavor-resource outcome, lowest to highest preference."""

    NO_FIT = 0
    NO_CANDIDATES = 1
    PREEMPT = 2
    RECLAIM = 3
    FIT = 4

    @property
    def assignment_mode(self) -> Mode:
        if self is PreemptionMode.NO_FIT:
            return Mode.NO_FIT
        if self is PreemptionMode.FIT:
            return Mode.FIT
        return Mode.PREEMPT

    @property
    def is_preempt(self) -> bool:
        return self in (PreemptionMode.PREEMPT, PreemptionMode.RECLAIM)


BORROW_WORST = 1 << 30


@dataclass(frozen=True, slots=True)
class GranularMode:
    """(preemption mode, borrowing level); a lower level is better."""

    mode: PreemptionMode
    borrow: int

    @staticmethod
    def worst() -> GranularMode:
        return GranularMode(PreemptionMode.NO_FIT, BORROW_WORST)

    @staticmethod
    def best() -> GranularMode:
        return GranularMode(PreemptionMode.FIT, 0)


def is_preferred(a: GranularMode, b: GranularMode, ff: FlavorFungibility) -> bool:
    """Kueue's ``isPreferred``: is ``a`` strictly better than ``b``."""
    if a.mode is PreemptionMode.NO_FIT:
        return False
    if b.mode is PreemptionMode.NO_FIT:
        return True
    a_none = a.mode is PreemptionMode.NO_CANDIDATES
    b_none = b.mode is PreemptionMode.NO_CANDIDATES
    if a_none != b_none:
        return not a_none
    if ff.preference == "PreemptionOverBorrowing":
        if a.borrow != b.borrow:
            return a.borrow < b.borrow
        return a.mode > b.mode
    if a.mode != b.mode:
        return a.mode > b.mode
    return a.borrow < b.borrow


def should_try_next(m: GranularMode, ff: FlavorFungibility) -> bool:
    """Kueue's ``shouldTryNextFlavor`` stop rule."""
    if m.mode in (PreemptionMode.NO_FIT, PreemptionMode.NO_CANDIDATES):
        return True
    if m.mode.is_preempt and ff.when_can_preempt == "TryNextFlavor":
        return True
    return m.borrow > 0 and ff.when_can_borrow == "TryNextFlavor"
