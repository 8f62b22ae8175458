"""The Alibaba GPU trace (openb, FGD protocol) inside the bench report.

The replay itself — Best-Fit and FGD reproduced against the published
simulator, placewise's policies, the all-arrivals-known LP bound — belongs to
:mod:`placewise.benchmarks.fgd`; the bench only calls its entry point
(``placewise.benchmarks.fgd.cli.main(argv)``) in a worker process with ``--out`` under
the report directory, reads back the per-run summaries it writes
(:func:`placewise.benchmarks.fgd.report.collect`) and embeds its figure (our curves
over the published Best-Fit and FGD curves).  When the entry point is
missing from the build or fails, the report says so and still shows the
published reference (``shared/data/fgd-sim-expected-results``).
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REFERENCE_POLICIES = {"bestfit": "05-BestFit", "fgd": "06-FGD"}
"""Published curves shown beside ours (the best greedy and FGD), by the
replay's policy name and the simulator's label."""
FULL_SEEDS = "42..51"
"""The simulator's ten seeds (performance-anchors §1.2)."""

Curve = dict[int, float]
"""arrived GPU demand (% of capacity) -> GPU allocation (% of capacity)."""


def _mean(curves: list[Curve]) -> Curve:
    keys = set.intersection(*(set(c) for c in curves))
    return {k: statistics.fmean(c[k] for c in curves) for k in sorted(keys)}


def published_curves(trace: str) -> dict[str, Curve]:
    """The published Best-Fit and FGD curves of one trace, mean over seeds."""
    from placewise.benchmarks.fgd.published import load_published

    out: dict[str, Curve] = {}
    for policy, label in REFERENCE_POLICIES.items():
        try:
            per_seed = load_published(policy, trace)
        except OSError:
            return {}
        if per_seed:
            out[label] = _mean(list(per_seed.values()))
    return out


@dataclass(slots=True)
class TraceRow:
    """One policy of the replay, mean over its seeds."""

    policy: str
    seeds: int
    alloc_100: float
    alloc_130: float
    published_130: float | None
    dropped: float
    wall_s: float


@dataclass(slots=True)
class TraceResult:
    trace: str
    ok: bool = True
    available: bool = True
    error: str | None = None
    seconds: float = 0.0
    argv: list[str] = field(default_factory=list)
    rows: list[TraceRow] = field(default_factory=list)
    curves: dict[str, Curve] = field(default_factory=dict)
    """Our mean curve per policy."""
    published: dict[str, Curve] = field(default_factory=dict)
    lp_bound_pct: float | None = None
    figures: list[str] = field(default_factory=list)
    """The replay's own figures, relative to the report directory."""
    log_tail: list[str] = field(default_factory=list)

    def markdown(self) -> list[str]:
        cmd = "python -m placewise.benchmarks.fgd.cli " + " ".join(self.argv)
        if not self.available:
            out = [f"Not run: {self.error}."]
        elif not self.ok:
            out = [f"**Failed** after {self.seconds:.0f} s (`{cmd}`): {self.error}"]
        else:
            out = [f"`{cmd}` ({self.seconds:.0f} s)."]
        out.append("")
        out += [
            f"GPU allocation (% of the 6,212 GPUs) on the `{self.trace}` trace when "
            "arrived GPU demand reaches 100 % and 130 % of capacity (FGD protocol):",
            "",
            "| policy | seeds | at 100 % | at 130 % | published at 130 % | "
            "dropped pods | wall s |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            pub = "-" if r.published_130 is None else f"{r.published_130:.2f}"
            out.append(
                f"| {r.policy} | {r.seeds} | {r.alloc_100:.2f} | {r.alloc_130:.2f} | "
                f"{pub} | {r.dropped:.0f} | {r.wall_s:.0f} |"
            )
        for label, curve in sorted(self.published.items()):
            out.append(
                f"| {label} (published, 10 seeds) | 10 | {_at(curve, 100)} | "
                f"{_at(curve, 130)} | | | |"
            )
        if self.lp_bound_pct is not None:
            out += [
                "",
                f"LP bound with every arrival known in advance: "
                f"{self.lp_bound_pct:.2f} %.",
            ]
        for fig in self.figures:
            out += ["", f"![{Path(fig).stem}]({fig})"]
        if not self.ok and self.log_tail:
            out += ["", "```", *self.log_tail, "```"]
        return out

    def plots(self, directory: Path) -> dict[str, Path]:
        """Our own curve plot, only when the replay drew none."""
        if self.figures or not (self.published or self.curves):
            return {}
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for label, curve in sorted(self.published.items()):
            ax.plot(
                list(curve),
                list(curve.values()),
                linestyle="--",
                label=f"{label} (published)",
            )
        for policy, curve in sorted(self.curves.items()):
            ax.plot(
                list(curve),
                list(curve.values()),
                linewidth=1.6,
                label=f"{policy} (this run)",
            )
        ax.set_xlabel("arrived GPU demand (% of capacity)")
        ax.set_ylabel("GPU allocation (% of capacity)")
        ax.set_title(f"openb {self.trace} trace, FGD protocol")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
        fig.tight_layout()
        path = directory / "trace-allocation.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return {"trace": path}


def _at(curve: Mapping[int, float], k: int) -> str:
    return f"{curve[k]:.2f}" if k in curve else "-"


@dataclass(frozen=True, slots=True)
class TraceJob:
    """The trace replay as one pool job (it runs its own ``--jobs`` inside)."""

    out_dir: str
    quick: bool
    jobs: int = 1
    trace: str = "default"
    shared: str | None = None
    """The folder holding ``data/alibaba-gpu-v2023`` (None: ../shared)."""

    @property
    def label(self) -> str:
        return f"trace {self.trace}"

    def argv(self) -> list[str]:
        data = [] if self.shared is None else ["--shared", self.shared]
        if self.quick:
            # seed 42, default trace, bestfit + fgd + window, with the LP bound
            return ["--quick", "--jobs", str(self.jobs), "--out", self.out_dir, *data]
        return [
            *data,
            "--trace",
            self.trace,
            "--seeds",
            FULL_SEEDS,
            "--bound",
            "--jobs",
            str(self.jobs),
            "--out",
            self.out_dir,
        ]

    def missing_data(self) -> str | None:
        """Why the replay cannot run here (its data is not there), or None.

        Decided before the replay starts: a replay that fails on a missing
        file would be reported as a failed replay with the wrong reason."""
        from placewise.benchmarks.fgd.trace import trace_files

        shared = None if self.shared is None else Path(self.shared)
        missing = [p for p in trace_files(self.trace, shared) if not p.is_file()]
        if not missing:
            return None
        return (
            f"the trace data is not in {missing[0].parent} "
            f"({', '.join(p.name for p in missing)} missing)"
        )

    def skipped(self, why: str) -> TraceResult:
        """The report's entry for a replay that was not run (not a failure)."""
        return TraceResult(self.trace, available=False, error=why, argv=self.argv())

    def failed(self, why: str) -> TraceResult:
        return TraceResult(
            self.trace,
            ok=False,
            error=why,
            argv=self.argv(),
            published=published_curves(self.trace),
        )

    def execute(self) -> TraceResult:
        result = TraceResult(
            self.trace, argv=self.argv(), published=published_curves(self.trace)
        )
        try:
            from placewise.benchmarks.fgd import cli, report
        except ImportError as exc:
            result.ok = result.available = False
            result.error = f"the trace replay entry point is not in this build ({exc})"
            return result
        out = Path(self.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        log = io.StringIO()
        start = time.perf_counter()
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                code = cli.main(self.argv())
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception as exc:  # reported, never dropped
            code = 1
            log.write(f"{type(exc).__name__}: {exc}\n")
        result.seconds = time.perf_counter() - start
        (out / "replay.log").write_text(log.getvalue(), encoding="utf-8")
        result.log_tail = log.getvalue().strip().splitlines()[-15:]
        if code not in (0, None):
            result.ok = False
            result.error = (
                f"exit code {code} (1 = a baseline missed the published value "
                "by more than 0.5 points; see trace/replay.log)"
            )
        _, runs = report.collect(out)
        _summarize(result, runs)
        result.figures = sorted(
            str(p.relative_to(out.parent)) for p in out.glob("*.png")
        )
        return result


def _summarize(result: TraceResult, runs: list[Any]) -> None:
    """Mean rows and curves per policy from the replay's run summaries."""
    by_policy: dict[str, list[Any]] = {}
    for r in runs:
        if r.trace == result.trace:
            by_policy.setdefault(r.policy, []).append(r)
    bounds = [r.extra["lp_bound_pct"] for r in runs if "lp_bound_pct" in r.extra]
    result.lp_bound_pct = min(bounds) if bounds else None
    for policy, rs in sorted(by_policy.items()):
        pub = [r.published_130 for r in rs if r.published_130 is not None]
        result.rows.append(
            TraceRow(
                policy=policy,
                seeds=len(rs),
                alloc_100=statistics.fmean(r.alloc_100 for r in rs),
                alloc_130=statistics.fmean(r.alloc_130 for r in rs),
                published_130=statistics.fmean(pub) if len(pub) == len(rs) else None,
                dropped=statistics.fmean(r.dropped for r in rs),
                wall_s=statistics.median(r.wall_s for r in rs),
            )
        )
        result.curves[policy] = _mean([dict(r.curve) for r in rs])
