"""The report's plots: per-family bars, GPUs per priority tier, the scale
sweep, fair shares.

Kept apart from ``report.py`` (which writes the text and calls these) so
each module stays readable; every plot reads the same aggregated cells.

The per-family bars show GPUs added, where the optimizer can look worse than
the baselines while it wins on what it maximises first: GPUs per priority
tier, highest first, compared lexicographically (on ``multi-team`` it
preempts low-priority work to admit high-priority gangs).  So each family
also gets a figure of GPUs per priority tier, titled with the tier ranking,
beside what the plans preempt.  The scale figure says how many sizes of the
sweep it holds: ``--quick`` runs two.  Families run with Kueue's fair
sharing also get the weighted share of every queue after each plan.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from placewise.benchmarks.harness.matrix import LIMIT, SCALE_FAMILIES
from placewise.benchmarks.harness.runner import RunResult

COLORS = {
    "kueue": "#4c72b0",
    "kube-default": "#dd8452",
    "binpack-gang": "#55a868",
    "cpsat": "#c44e52",
    LIMIT: "#333333",
}

PLOTTED_SHARES = ("kueue", "cpsat")
"""Solvers whose fair shares are plotted: Kueue's greedy against the optimizer."""


@dataclass(slots=True)
class Cell:
    """Medians over seeds of one (family, solver)."""

    runs: int = 0
    failed: int = 0
    values: dict[str, float | None] = field(default_factory=dict)
    tiers: dict[int, tuple[tuple[int, int], ...]] = field(default_factory=dict)
    """seed -> tier-demand vector."""


PLOT_METRICS: tuple[tuple[str, str], ...] = (
    ("net_gpus", "GPUs added"),
    ("gpu_alloc_pct", "GPU allocation %"),
    ("stranded_gpus", "stranded GPUs"),
    ("domains_per_gang", "domains per gang"),
    ("wall_s", "wall time (s)"),
)


def plot_family(
    path: Path, family: str, cells: Mapping[str, Cell], solvers: Sequence[str]
) -> None:
    n = len(PLOT_METRICS)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 3.2))
    names = [s for s in solvers if s in cells]
    for ax, (key, title) in zip(axes, PLOT_METRICS, strict=True):
        vals = [cells[s].values.get(key) for s in names]
        ax.bar(
            range(len(names)),
            [v or 0 for v in vals],
            color=[COLORS.get(s, "#888") for s in names],
        )
        for i, v in enumerate(vals):
            if v is None:
                ax.text(i, 0, "n/a", ha="center", va="bottom", fontsize=7)
        if key == "net_gpus" and LIMIT in cells:
            lim = cells[LIMIT].values.get("limit_net")
            if lim is not None:
                ax.axhline(
                    lim, color=COLORS[LIMIT], linestyle="--", linewidth=1, label="limit"
                )
                ax.legend(fontsize=7)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.suptitle(family, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tier_medians(tiers: Mapping[int, Sequence[tuple[int, int]]]) -> dict[int, float]:
    """Per priority, the median over seeds of GPUs admitted minus preempted."""
    per: dict[int, list[int]] = {}
    for vector in tiers.values():
        for prio, value in vector:
            per.setdefault(prio, []).append(value)
    return {p: float(statistics.median(v)) for p, v in per.items()}


def plot_priority(
    path: Path,
    family: str,
    cells: Mapping[str, Cell],
    solvers: Sequence[str],
    rank: str,
) -> bool:
    """GPUs per priority tier (grouped by solver) and preemptions per solver."""
    names = [s for s in solvers if s in cells and cells[s].tiers]
    if not names:
        return False
    medians = {s: tier_medians(cells[s].tiers) for s in names}
    prios = sorted({p for m in medians.values() for p in m}, reverse=True)
    fig, (tiers_ax, pre_ax) = plt.subplots(
        1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [2, 1]}
    )
    width = 0.8 / len(names)
    for i, s in enumerate(names):
        xs = [k + (i - (len(names) - 1) / 2) * width for k in range(len(prios))]
        ys = [medians[s].get(p, 0.0) for p in prios]
        tiers_ax.bar(xs, ys, width, label=s, color=COLORS.get(s, "#888"))
    tiers_ax.axhline(0, color="#333", linewidth=0.6)
    tiers_ax.set_xticks(range(len(prios)))
    tiers_ax.set_xticklabels([f"priority {p}" for p in prios], fontsize=8)
    tiers_ax.set_ylabel("GPUs admitted - preempted")
    tiers_ax.set_title(f"by priority, best first: {rank or 'n/a'}", fontsize=9)
    tiers_ax.legend(fontsize=7)
    counts = [cells[s].values.get("preemptions") or 0 for s in names]
    gpus = [cells[s].values.get("preempted_gpus") or 0 for s in names]
    pre_ax.bar(range(len(names)), counts, color=[COLORS.get(s, "#888") for s in names])
    for i, g in enumerate(gpus):
        pre_ax.text(
            i, counts[i], f"{g:,.0f} GPUs", ha="center", va="bottom", fontsize=7
        )
    pre_ax.set_xticks(range(len(names)))
    pre_ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    pre_ax.set_title("workloads preempted (their GPUs)", fontsize=9)
    fig.suptitle(f"{family}: median over seeds", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def scale_title(families: Sequence[str]) -> str:
    """A full sweep is a sweep; fewer sizes (``--quick``) say so."""
    if len(families) == len(SCALE_FAMILIES):
        return "scale sweep (median over seeds)"
    return (
        f"wall time at {len(families)} of {len(SCALE_FAMILIES)} sweep sizes "
        "(the full bench runs all)"
    )


def plot_scale(
    path: Path,
    agg: Mapping[str, Mapping[str, Cell]],
    hosts: Mapping[str, int],
    solvers: Sequence[str],
) -> bool:
    fams = [f for f in SCALE_FAMILIES if f in agg]
    if len(fams) < 2:
        return False
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for s in [*solvers, LIMIT]:
        pts = [(hosts[f], agg[f][s].values.get("wall_s")) for f in fams if s in agg[f]]
        xy = [(x, y) for x, y in pts if y is not None and y > 0]
        if xy:
            ax.plot(
                *zip(*xy, strict=True), marker="o", label=s, color=COLORS.get(s, "#888")
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("hosts")
    ax.set_ylabel("wall time (s)")
    ax.set_title(scale_title(fams), fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_shares(
    path: Path, results: Sequence[RunResult], family: str, colors: dict[str, str]
) -> bool:
    """Median weighted share of each queue over seeds, one bar per solver."""
    by_solver: dict[str, dict[str, list[float]]] = {}
    for r in results:
        f = r.metrics.fairness if r.ok and r.metrics is not None else None
        if r.family != family or f is None or r.solver not in PLOTTED_SHARES:
            continue
        for q, v in f.shares:
            by_solver.setdefault(r.solver, {}).setdefault(q, []).append(v)
    if not by_solver:
        return False
    queues = sorted({q for per in by_solver.values() for q in per})
    solvers = [s for s in PLOTTED_SHARES if s in by_solver]
    width = 0.8 / len(solvers)
    fig, ax = plt.subplots(figsize=(1.2 * len(queues) + 2, 3.6))
    for i, s in enumerate(solvers):
        vals = [statistics.median(by_solver[s].get(q, [0.0])) for q in queues]
        xs = [j + (i - (len(solvers) - 1) / 2) * width for j in range(len(queues))]
        finite = [0.0 if math.isinf(v) else v for v in vals]
        ax.bar(xs, finite, width, label=s, color=colors.get(s, "#888"))
    ax.set_xticks(range(len(queues)))
    ax.set_xticklabels(queues, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("weighted share after the plan (per mille)")
    ax.set_title(f"{family}: fair shares per queue (median over seeds)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
