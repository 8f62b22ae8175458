"""Issue 19's per-run checks of a replay against Kueue's, in one place.

A run *holds* when the candidate's mean JCT, the p95 delay of the run's
highest priority, the largest jobs' p95 delay are each at most the
baseline's, and its wasted GPU-hours at most the baseline's plus
``WASTE_SLACK`` of the baseline's goodput.  Over many runs the issue asks
for the median of the mean-delay gain and of the utilisation difference.
The metrics dicts are :func:`placewise.benchmarks.replay.metrics.compute`'s
(or their JSON), so recorded runs can be judged again without replaying.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WASTE_SLACK = 0.005
"""Share of the baseline's goodput the candidate may waste beyond it."""
NAMES = ("JCT", "top p95", "largest p95", "wasted")
"""The four checks, in the order of :attr:`Checks.passed`."""

Metrics = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Checks:
    """One run of a candidate judged against a baseline (Kueue)."""

    passed: tuple[bool, bool, bool, bool]
    """Mean JCT, top-priority p95 delay, largest jobs' p95 delay, wasted work."""
    gain: float
    """(baseline - candidate) / baseline mean queueing delay; 0 if none waited."""
    utilization: float
    """Candidate minus baseline utilisation, in percentage points."""

    @property
    def all_four(self) -> bool:
        return all(self.passed)

    @property
    def marks(self) -> str:
        """``YYnY``: one letter per check, as the recorded tables write it."""
        return "".join("Y" if ok else "n" for ok in self.passed)


def _at_most(mine: float | None, theirs: float | None) -> bool:
    """None is a figure a run does not have (no job finished): it holds
    only against another None."""
    if mine is None or theirs is None:
        return mine is None and theirs is None
    return mine <= theirs + 1e-9


def judge(base: Metrics, cand: Metrics) -> Checks:
    """``cand`` against ``base``.  The highest priority is the first of the
    baseline's ``by_priority`` (highest first), as the issue reads it."""
    top = next(iter(base["by_priority"]), None)

    def top_p95(m: Metrics) -> float | None:
        row = m["by_priority"].get(top) if top is not None else None
        return None if row is None else row["p95_delay_s"]

    slack = WASTE_SLACK * (base["goodput_gpu_h"] or 0.0)
    passed = (
        _at_most(cand["mean_jct_s"], base["mean_jct_s"]),
        _at_most(top_p95(cand), top_p95(base)),
        _at_most(cand["largest_p95_delay_s"], base["largest_p95_delay_s"]),
        cand["wasted_gpu_h"] <= base["wasted_gpu_h"] + slack + 1e-9,
    )
    waited = base["mean_delay_s"] or 0.0
    gain = (waited - (cand["mean_delay_s"] or 0.0)) / waited if waited > 0 else 0.0
    util = (cand["utilization_pct"] or 0.0) - (base["utilization_pct"] or 0.0)
    return Checks(passed, gain, util)


@dataclass(frozen=True, slots=True)
class Summary:
    """Many runs judged: what the issue's "Done when" reads."""

    runs: int
    all_four: int
    fails: tuple[int, int, int, int]
    """Runs failing each check, in :data:`NAMES` order."""
    median_gain: float
    min_gain: float
    max_gain: float
    median_utilization: float

    def line(self) -> str:
        fails = " / ".join(str(n) for n in self.fails)
        return (
            f"all four on {self.all_four} of {self.runs}; fails "
            f"({' / '.join(NAMES)}) {fails}; median gain "
            f"{100 * self.median_gain:+.1f} % ({100 * self.min_gain:+.1f} to "
            f"{100 * self.max_gain:+.1f}); median utilisation "
            f"{self.median_utilization:+.2f} points"
        )


def summarize(checks: Sequence[Checks]) -> Summary:
    if not checks:
        raise ValueError("no runs to summarize")
    gains = [c.gain for c in checks]
    fails = tuple(sum(not c.passed[i] for c in checks) for i in range(4))
    return Summary(
        runs=len(checks),
        all_four=sum(c.all_four for c in checks),
        fails=(fails[0], fails[1], fails[2], fails[3]),
        median_gain=statistics.median(gains),
        min_gain=min(gains),
        max_gain=max(gains),
        median_utilization=statistics.median(c.utilization for c in checks),
    )
