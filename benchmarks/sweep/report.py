"""A sweep's answers: the table per point, the spread over seeds, the target.

Rows follow the spec's order (variants as listed, then solvers, then
seeds), so "the first variant that meets the target" is the cheapest one
when the spec lists its values cheapest first, which is how a capacity
question is asked ("0, 8, 16 more hosts").  Timing columns are kept apart
from the others so that the rest of the table is comparable across
executors and machines.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placewise.benchmarks.sweep.check import Checked, Column

Record = Mapping[str, Any]
NOT_VARIANT = ("solver", "seed")


def value(rec: Record, col: Column) -> float | None:
    """The column's figure in one point's record (None: not measured)."""
    if col.priority is None:
        v = rec.get("metrics", {}).get(col.metric)
    else:
        v = rec.get("by_priority", {}).get(col.priority, {}).get(col.metric)
    return None if v is None else float(v)


def coords(rec: Record) -> dict[str, Any]:
    return {k: v for k, v in rec["point"]["coords"]}


def axis_names(checked: Checked) -> list[str]:
    return [k for k, _ in checked.points[0].coords] if checked.points else []


def rows(checked: Checked, records: Mapping[str, Record]) -> list[dict[str, Any]]:
    """One row per point, spec order: axes, ok, metric columns, wall time."""
    out = []
    for p in checked.points:
        rec = records.get(
            p.key, {"point": p.to_dict(), "ok": False, "error": "not run"}
        )
        row: dict[str, Any] = dict(p.coords)
        row["ok"] = bool(rec.get("ok"))
        for col in checked.columns:
            row[col.label] = value(rec, col)
        row["wall_s"] = rec.get("wall_s")
        row["key"] = p.key
        out.append(row)
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write_csv(path: Path, table: Sequence[Mapping[str, Any]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        header = list(table[0]) if table else []
        out.writerow(header)
        for row in table:
            out.writerow([_cell(row[h]) for h in header])


def markdown(table: Sequence[Mapping[str, Any]], answer: str | None) -> str:
    if not table:
        return "(no points)\n"
    header = list(table[0])
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    for row in table:
        lines.append("| " + " | ".join(_cell(row[h]) for h in header) + " |")
    text = "\n".join(lines) + "\n"
    if answer:
        text = f"**Target:** {answer}\n\n" + text
    return text


# -- the spread over seeds, and the target --------------------------------------


@dataclass(frozen=True, slots=True)
class Spread:
    """min / median / max of one column over a variant's seeds."""

    low: float | None
    median: float | None
    high: float | None
    values: tuple[float | None, ...]


def spread(values: Sequence[float | None]) -> Spread:
    got = [v for v in values if v is not None]
    if not got:
        return Spread(None, None, None, tuple(values))
    return Spread(min(got), statistics.median(got), max(got), tuple(values))


def groups(
    table: Sequence[Mapping[str, Any]], axes: Sequence[str]
) -> dict[tuple[Any, ...], list[Mapping[str, Any]]]:
    """Rows by (variant coords..., solver), seeds together, in spec order."""
    keyed = [a for a in axes if a != "seed"]
    out: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in table:
        out.setdefault(tuple(row[a] for a in keyed), []).append(row)
    return out


@dataclass(frozen=True, slots=True)
class Answer:
    """Per solver: the first variant meeting the target, or None."""

    text: str
    found: dict[str, dict[str, Any] | None]
    figures: dict[str, float | None]


def left_out(records: Mapping[str, Record]) -> dict[str, int]:
    """Point key -> jobs its replay left out as never admittable."""
    return {
        k: int(r.get("metrics", {}).get("impossible") or 0) for k, r in records.items()
    }


def answer(
    checked: Checked,
    table: Sequence[Mapping[str, Any]],
    dropped: Mapping[str, int] | None = None,
) -> Answer | None:
    """Per solver, the first variant meeting the target on its seeds.

    ``dropped`` (point key -> jobs left out as never admittable): a seed
    whose variant leaves out more jobs than another variant of the same seed
    and solver meets nothing.  A replay measures only the jobs it keeps, so
    a cluster too small for some jobs would otherwise read as one where
    nobody waits long."""
    spec, col = checked.spec, checked.target
    if spec.target is None or col is None:
        return None
    t = spec.target
    axes = axis_names(checked)
    variant_axes = [a for a in axes if a not in NOT_VARIANT]
    found: dict[str, dict[str, Any] | None] = {s: None for s in spec.solvers}
    figures: dict[str, float | None] = {s: None for s in spec.solvers}
    n_out = {r["key"]: (dropped or {}).get(r["key"], 0) for r in table}
    fewest: dict[tuple[Any, Any], int] = {}
    for r in table:
        k = (r.get("seed"), r["solver"])
        fewest[k] = min(fewest.get(k, n_out[r["key"]]), n_out[r["key"]])

    def kept_all(r: Mapping[str, Any]) -> bool:
        return n_out[r["key"]] <= fewest[(r.get("seed"), r["solver"])]

    for key, members in groups(table, axes).items():
        named = dict(zip([a for a in axes if a != "seed"], key, strict=True))
        solver = named["solver"]
        if found[solver] is not None:
            continue
        vals = [r[col.label] if r["ok"] and kept_all(r) else None for r in members]
        got = [float(v) for v in vals if v is not None]
        if len(got) < len(vals):
            continue  # a failed or unmeasured seed meets nothing
        if t.over_seeds == "median":
            figure = statistics.median(got)
        else:
            figure = max(got) if t.at_most is not None else min(got)
        ok = (
            figure <= t.at_most
            if t.at_most is not None
            else figure >= (t.at_least or 0)
        )
        if ok:
            found[solver] = {a: named[a] for a in variant_axes}
            figures[solver] = figure
    bound = f"<= {t.at_most:g}" if t.at_most is not None else f">= {t.at_least:g}"
    seeds = len(spec.axes.seed)
    how = f"worst of {seeds} seeds" if t.over_seeds == "worst" else "median seed"
    parts = []
    for solver in spec.solvers:
        hit = found[solver]
        if hit is None:
            parts.append(f"{solver}: no variant meets it")
        else:
            where = ", ".join(f"{k}={v}" for k, v in hit.items()) or "the base"
            parts.append(f"{solver}: {where} ({col.label} = {figures[solver]:.6g})")
    text = f"first variant where {col.label} {bound} ({how}): " + "; ".join(parts)
    return Answer(text, found, figures)


def write_outputs(
    directory: Path,
    checked: Checked,
    records: Mapping[str, Record],
) -> tuple[list[Path], Answer | None]:
    """``sweep.csv``, ``sweep.md``, ``sweep.json`` and a plot per axis."""
    from placewise.benchmarks.sweep.plots import plot_axes

    table = rows(checked, records)
    target = answer(checked, table, left_out(records))
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / "sweep.csv", directory / "sweep.md", directory / "sweep.json"]
    write_csv(paths[0], table)
    paths[1].write_text(markdown(table, target.text if target else None), "utf-8")
    data = {
        "spec": checked.spec.model_dump(mode="json"),
        "columns": [c.label for c in checked.columns],
        "target": None
        if target is None
        else {"answer": target.text, "found": target.found, "figures": target.figures},
        "points": [records.get(p.key) for p in checked.points],
    }
    paths[2].write_text(json.dumps(data, indent=1, default=str) + "\n", "utf-8")
    paths += plot_axes(directory, checked, table)
    return paths, target


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")
