"""Fair-sharing figures of the report, as text.

For families run with Kueue's fair sharing on, the report adds a table of
each plan's fairness (Jain's index over the weighted shares, max/min ratio,
the shares themselves); the bar chart of the shares is in :mod:`.plots`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from placewise.benchmarks.harness.runner import RunResult
from placewise.solver.metrics import Fairness


def _fair(r: RunResult) -> Fairness | None:
    return r.metrics.fairness if r.ok and r.metrics is not None else None


def has_fairness(results: Sequence[RunResult], family: str) -> bool:
    return any(_fair(r) for r in results if r.family == family)


def _num(x: float, digits: int) -> str:
    return "inf" if math.isinf(x) else f"{x:.{digits}f}"


def shares_text(f: Fairness) -> str:
    return " ".join(f"{q}={_num(v, 1)}" for q, v in f.shares)


def fair_table(results: Sequence[RunResult], family: str) -> list[str]:
    """One row per (solver, seed): Jain's index, max/min, the shares."""
    rows = sorted(
        (r for r in results if r.family == family and _fair(r)),
        key=lambda r: (r.solver, r.seed),
    )
    lines = [
        "| solver | seed | Jain (weighted shares) | max/min | share per queue |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        f = _fair(r)
        assert f is not None
        lines.append(
            f"| {r.solver} | {r.seed} | {f.jain:.3f} | {_num(f.max_min, 2)} | "
            f"{shares_text(f)} |"
        )
    return lines
