"""Plots of a sweep: each metric against each variant axis, seeds as a band.

One seed is an anecdote; the band (min to max over seeds, the line through
the median) shows whether a difference between variants is larger than
the difference between seeds, which is what a capacity decision needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from placewise.benchmarks.sweep.check import Checked
from placewise.benchmarks.sweep.report import NOT_VARIANT, axis_names, slug, spread

COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_axes(
    directory: Path, checked: Checked, table: Sequence[Mapping[str, Any]]
) -> list[Path]:
    """``sweep-<axis>.png`` per variant axis with two or more values."""
    axes = axis_names(checked)
    variants = [a for a in axes if a not in NOT_VARIANT]
    out = []
    for axis in variants:
        xs = list(dict.fromkeys(row[axis] for row in table))
        if len(xs) < 2:
            continue
        out.append(_plot_axis(directory, checked, table, axis, xs, variants))
    return out


def _plot_axis(
    directory: Path,
    checked: Checked,
    table: Sequence[Mapping[str, Any]],
    axis: str,
    xs: list[Any],
    variants: list[str],
) -> Path:
    plt = _pyplot()
    cols = checked.columns
    fig, subplots = plt.subplots(
        len(cols), 1, figsize=(7, 2.6 * len(cols)), sharex=True, squeeze=False
    )
    numeric = all(isinstance(x, int | float) and not isinstance(x, bool) for x in xs)
    pos = {x: (float(x) if numeric else float(i)) for i, x in enumerate(xs)}
    others = [a for a in variants if a != axis]
    lines: dict[tuple[Any, ...], dict[Any, list[Mapping[str, Any]]]] = {}
    for row in table:
        key = (row["solver"], *[row[a] for a in others])
        lines.setdefault(key, {}).setdefault(row[axis], []).append(row)
    target = checked.target
    for ax, col in zip(subplots[:, 0], cols, strict=True):
        for i, (key, by_x) in enumerate(lines.items()):
            color = COLORS[i % len(COLORS)]
            label = " ".join(
                [
                    str(key[0]),
                    *[f"{a}={v}" for a, v in zip(others, key[1:], strict=True)],
                ]
            )
            pts = []
            for x in xs:
                s = spread([r[col.label] if r["ok"] else None for r in by_x.get(x, [])])
                if s.median is not None:
                    pts.append((pos[x], s.low, s.median, s.high))
            if not pts:
                continue
            px = [p[0] for p in pts]
            ax.plot(px, [p[2] for p in pts], "o-", color=color, label=label)
            ax.fill_between(
                px, [p[1] for p in pts], [p[3] for p in pts], color=color, alpha=0.2
            )
        if target is not None and col.label == target.label and checked.spec.target:
            t = checked.spec.target
            bound = t.at_most if t.at_most is not None else t.at_least
            ax.axhline(
                bound, color="black", linestyle="--", linewidth=1, label="target"
            )
        if col.metric.endswith("_s") and _spans_decades(table, col.label):
            # Waits span seconds to days: on a linear axis the target's
            # region (minutes) is a flat line at the bottom.
            ax.set_yscale("symlog", linthresh=60)
            ax.set_ylim(bottom=0)
        ax.set_ylabel(col.label, fontsize=8)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    last = subplots[-1, 0]
    last.set_xlabel(f"{axis} (line: median over seeds, band: min-max)")
    if not numeric:
        last.set_xticks([pos[x] for x in xs], [str(x) for x in xs])
    fig.tight_layout()
    path = directory / f"sweep-{slug(axis)}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _spans_decades(table: Sequence[Mapping[str, Any]], label: str) -> bool:
    got = [float(r[label]) for r in table if r["ok"] and r[label] is not None]
    return bool(got) and max(got) > 100 * max(min(got), 60.0)
