"""Plots of replays: both solvers on one figure, so differences show."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from placewise.benchmarks.replay.engine import ReplayResult

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red")
STYLES = ("-", "--", ":", "-.")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_timeline(path: Path, results: Sequence[ReplayResult]) -> Path:
    """GPU utilisation and queued jobs over simulated time."""
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    for i, r in enumerate(results):
        if not r.samples:
            continue
        t = np.asarray([s[0] for s in r.samples]) / 3600
        cap = max(r.capacity_gpus, 1)
        util = np.asarray([100.0 * s[1] / cap for s in r.samples])
        queue = np.asarray([s[2] for s in r.samples])
        color = COLORS[i % len(COLORS)]
        top.step(t, util, where="post", color=color, label=r.config.solver)
        bottom.step(t, queue, where="post", color=color, label=r.config.solver)
    top.set_ylabel("GPU utilisation %")
    bottom.set_ylabel("queued jobs")
    bottom.set_xlabel("simulated time (h)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_delay_cdf(path: Path, results: Sequence[ReplayResult]) -> Path:
    """Share of jobs waiting at most x minutes, per priority and solver."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    prios = sorted(
        {(r.priority, r.priority_name) for res in results for r in res.records},
        reverse=True,
    )
    for i, res in enumerate(results):
        for j, (_, name) in enumerate(prios):
            waits = [
                r.waited_s
                for r in res.records
                if r.counted and r.priority_name == name and r.arrival_s <= res.end_s
            ]
            if not waits:
                continue
            minutes = np.sort(np.asarray(waits)) / 60
            share = np.arange(1, minutes.size + 1) / minutes.size
            ax.step(
                minutes,
                share,
                where="post",
                color=COLORS[i % len(COLORS)],
                linestyle=STYLES[j % len(STYLES)],
                label=f"{res.config.solver} {name}",
            )
    ax.set_xlabel("queueing delay (min, all waits of a job)")
    ax.set_ylabel("share of jobs")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_afs_usage(path: Path, results: Sequence[ReplayResult]) -> Path:
    """Admission-fair-sharing usage per LocalQueue over time, one panel per
    solver (shared axes), so how each solver spreads admissions shows."""
    plt = _pyplot()
    shown = [r for r in results if r.afs_usage]
    fig, axes = plt.subplots(
        len(shown),
        1,
        figsize=(8, 2.6 * len(shown) + 0.6),
        sharex=True,
        sharey=True,
        squeeze=False,
    )
    for ax, r in zip(axes[:, 0], shown, strict=True):
        t = np.asarray([s[0] for s in r.afs_usage]) / 3600
        queues = sorted({q for _, usage in r.afs_usage for q in usage})
        for q in queues:
            ax.step(
                t,
                [usage.get(q, 0.0) for _, usage in r.afs_usage],
                where="post",
                label=q,
            )
        ax.set_title(r.config.solver, fontsize=9)
        ax.set_ylabel("usage / weight")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    axes[-1, 0].set_xlabel("simulated time (h)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
