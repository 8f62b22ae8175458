"""Showing replays: a table for people, JSON and CSV for tools, plots.

The JSON shape is a contract (``{"runs": [{"solver", "seed", "metrics"}]}``,
see :mod:`.metrics` for the keys); the table converts to the units people
think in (minutes, GPU-hours, %) and puts the solvers side by side.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from placewise.benchmarks.replay.checks import NAMES, judge
from placewise.benchmarks.replay.engine import ReplayResult
from placewise.benchmarks.replay.metrics import JOB_KEYS

IMPOSSIBLE_SHOWN = 20
"""Impossible jobs listed by name in the JSON (all are counted)."""


def to_json(results: Sequence[ReplayResult]) -> dict[str, Any]:
    runs = []
    for r in results:
        runs.append(
            {
                "solver": r.config.solver,
                "seed": r.config.seed,
                "ok": r.ok,
                "error": r.error,
                "config": r.config.to_dict(),
                "impossible_jobs": r.impossible[:IMPOSSIBLE_SHOWN],
                "metrics": r.metrics(),
            }
        )
        if r.afs_usage:  # only with admission fair sharing: other runs unchanged
            runs[-1]["afs_usage"] = [
                {"t_s": t, "usage": usage} for t, usage in r.afs_usage
            ]
    return {"runs": runs}


def json_text(results: Sequence[ReplayResult]) -> str:
    return json.dumps(to_json(results), indent=2, sort_keys=False) + "\n"


def write_csv(path: Path, results: Sequence[ReplayResult]) -> None:
    """One row per run and scope (``all`` or a priority), the metric keys."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["solver", "seed", "ok", "scope", *JOB_KEYS])
        for r in results:
            m = r.metrics()
            scopes = [("all", m), *m["by_priority"].items()]
            for scope, values in scopes:
                out.writerow(
                    [r.config.solver, r.config.seed, r.ok, scope]
                    + [_csv_cell(values.get(k)) for k in JOB_KEYS]
                )


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _minutes(value: Any) -> str:
    return "-" if value is None else f"{value / 60:.1f}"


def _num(value: Any, fmt: str = "{:.1f}") -> str:
    return "-" if value is None else fmt.format(value)


ROWS: tuple[tuple[str, str, Any], ...] = (
    ("jobs (started / finished)", "", None),
    ("queueing delay mean (min)", "mean_delay_s", _minutes),
    ("queueing delay p50 (min)", "p50_delay_s", _minutes),
    ("queueing delay p95 (min)", "p95_delay_s", _minutes),
    ("JCT mean (min)", "mean_jct_s", _minutes),
    ("JCT p95 (min)", "p95_jct_s", _minutes),
    ("slowdown mean / p95", "", None),
    ("GPU utilisation % (replay / arrivals)", "", None),
    ("goodput (GPU-h)", "goodput_gpu_h", _num),
    ("wasted by evictions (GPU-h)", "wasted_gpu_h", _num),
    ("preemptions", "preemptions", lambda v: _num(v, "{:d}")),
    ("solver time (s) / solves", "", None),
    ("largest 10 % jobs: delay mean (min)", "largest_mean_delay_s", _minutes),
    ("largest 10 % jobs: delay p95 (min)", "largest_p95_delay_s", _minutes),
)


def _cell(label: str, key: str, fmt: Any, m: dict[str, Any]) -> str:
    if fmt is not None:
        return str(fmt(m.get(key)))
    if label.startswith("jobs"):
        return f"{m['jobs']} ({m['started']} / {m['finished']})"
    if label.startswith("slowdown"):
        mean, p95 = m["mean_slowdown"], m["p95_slowdown"]
        return f"{_num(mean, '{:.2f}')} / {_num(p95, '{:.2f}')}"
    if label.startswith("GPU utilisation"):
        return (
            f"{_num(m['utilization_pct'])} / {_num(m.get('utilization_arrivals_pct'))}"
        )
    return f"{m['solver_seconds']:.1f} / {m['solves']}"


def print_table(console: Console, results: Sequence[ReplayResult]) -> None:
    """Solvers side by side, then delays per priority."""
    if not results:
        return
    metrics = [r.metrics() for r in results]
    first, m0 = results[0], metrics[0]
    source = first.config.job_trace or f"family {first.config.family} arrivals"
    console.print(
        f"[bold]Replay[/bold] of {source} on {m0['capacity_gpus']} GPUs, seed "
        f"{first.config.seed}: {m0['jobs']} jobs, offered load "
        f"{m0['offered_load']:.2f}, {m0['simulated_h']:.1f} h simulated; "
        f"{m0['cpu_only_skipped']} CPU-only rows skipped, {m0['impossible']} "
        "impossible jobs left out."
    )
    table = Table(title="placewise simulate")
    table.add_column("metric")
    for r in results:
        table.add_column(r.config.solver, justify="right")
    for label, key, fmt in ROWS:
        table.add_row(label, *[_cell(label, key, fmt, m) for m in metrics])
    console.print(table)
    for r in results:
        if not r.ok:
            console.print(f"[red]{r.config.solver} FAILED[/red]: {r.error}")
    prios = list(dict.fromkeys(p for m in metrics for p in m["by_priority"]))
    if not prios:
        return
    by = Table(title="queueing delay by priority (min): mean / p95 (jobs)")
    by.add_column("priority")
    for r in results:
        by.add_column(r.config.solver, justify="right")
    for p in prios:
        cells = []
        for m in metrics:
            g = m["by_priority"].get(p)
            cells.append(
                "-"
                if g is None
                else f"{_minutes(g['mean_delay_s'])} / {_minutes(g['p95_delay_s'])} "
                f"({g['jobs']})"
            )
        by.add_row(p, *cells)
    console.print(by)
    print_checks(console, results, metrics)
    print_afs_table(console, results)


def print_checks(
    console: Console,
    results: Sequence[ReplayResult],
    metrics: Sequence[dict[str, Any]],
) -> None:
    """Two solvers: the second judged against the first by issue 19's
    per-run checks (on the table's ``metrics``, one per result), with the
    caveat the recorded noise runs call for."""
    if len(results) != 2 or not all(r.ok for r in results):
        return
    base, cand = results
    c = judge(metrics[0], metrics[1])
    marks = ", ".join(
        f"{name} {'yes' if ok else 'NO'}"
        for name, ok in zip(NAMES, c.passed, strict=True)
    )
    them = base.config.solver
    console.print(
        f"{cand.config.solver} against {them} (each at most {them}'s): {marks}; "
        f"mean delay {100 * c.gain:+.1f} %, utilisation "
        f"{c.utilization:+.2f} points. One replay decides a check little: Kueue "
        "against itself, its solve grid shifted a few seconds, passed all four on "
        "12 of 90 runs (benchmarks/README, stop 38)."
    )


def print_afs_table(console: Console, results: Sequence[ReplayResult]) -> None:
    """Final admission-fair-sharing usage per LocalQueue (when AFS is on)."""
    finals = [r.afs_usage[-1][1] if r.afs_usage else {} for r in results]
    queues = sorted({q for f in finals for q in f})
    if not queues:
        return
    table = Table(title="admission fair sharing: final usage per LocalQueue")
    table.add_column("LocalQueue")
    for r in results:
        table.add_column(r.config.solver, justify="right")
    for q in queues:
        table.add_row(q, *[_num(f.get(q), "{:.2f}") for f in finals])
    console.print(table)


def write_outputs(directory: Path, results: Sequence[ReplayResult]) -> list[Path]:
    """``simulate.json``, ``simulate.csv`` and the plots into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "simulate.json", directory / "simulate.csv"]
    paths[0].write_text(json_text(results), encoding="utf-8")
    write_csv(paths[1], results)
    from placewise.benchmarks.replay.plots import plot_delay_cdf, plot_timeline

    paths.append(plot_timeline(directory / "simulate-timeline.png", results))
    paths.append(plot_delay_cdf(directory / "simulate-delay-cdf.png", results))
    if any(r.afs_usage for r in results):
        from placewise.benchmarks.replay.plots import plot_afs_usage

        paths.append(plot_afs_usage(directory / "simulate-afs-usage.png", results))
    return paths
