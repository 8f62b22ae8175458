"""``../shared``: the folder beside the checkout with Kueue's cases and traces.

CI checks the repository out with ``../shared`` beside it; a fresh clone has
none.  Every test that reads it goes through this module, so that without
it those tests skip with one reason (and the run's summary says how many),
and with it :data:`EXPECTED` notices a moved or emptied folder instead of
letting the tests quietly run over nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
KUEUE_CASES = SHARED / "kueue-cases"
DATA = SHARED / "data"

MISSING = (
    "../shared not found beside the checkout: "
    "Kueue cases and traces are in the CI checkout"
)

EXPECTED: dict[str, int] = {
    "kueue-cases/fairsharing": 45,
    "kueue-cases/flavorassign": 15,
    "kueue-cases/preemption": 24,
    "kueue-cases/schedule": 32,
    "kueue-cases/tas": 85,
}
"""Cases per group (folders with an ``expected.yaml``) when ../shared was last
checked; a group may grow, never shrink unnoticed."""

DATA_FILES = (
    "alibaba-gpu-v2023/openb_node_list_gpu_node.csv",
    "alibaba-gpu-v2023/openb_pod_list_default.csv",
    "fgd-sim-expected-results/analysis_allo_discrete.csv",
)
"""Trace files the benchmark tests read."""


def present() -> bool:
    return SHARED.is_dir()


requires_shared = pytest.mark.skipif(not present(), reason=MISSING)
"""Marker for a test that reads ../shared."""


def skip_if_missing() -> None:
    """For fixtures: skip the requesting test when ../shared is absent."""
    if not present():
        pytest.skip(MISSING)


T = TypeVar("T")


def params(
    items: Sequence[T],
    ids: Callable[[T], str] | None = None,
    marks: Callable[[T], Sequence[pytest.MarkDecorator]] | None = None,
) -> list[Any]:
    """Parametrize values read from ../shared; without it one placeholder that
    skips with :data:`MISSING` (an empty list would skip with pytest's own
    "got empty parameter set", which does not say why)."""
    if not present():
        return [pytest.param(None, id="no-shared", marks=pytest.mark.skip(MISSING))]
    return [
        pytest.param(
            x, id=ids(x) if ids else None, marks=tuple(marks(x)) if marks else ()
        )
        for x in items
    ]


def case_counts() -> dict[str, int]:
    """Cases per ``kueue-cases/<group>`` as found on disk."""
    groups: Iterable[Path] = sorted(p for p in KUEUE_CASES.glob("*") if p.is_dir())
    return {
        f"kueue-cases/{g.name}": sum(1 for _ in g.glob("*/expected.yaml"))
        for g in groups
    }
