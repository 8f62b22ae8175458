"""Checking a spec against its base before anything runs.

The shape of a spec is pydantic's job (:mod:`.spec`); whether its names
exist is this module's: the flavor and ClusterQueue an axis edits, the
policy keys (against :class:`placewise.solver.policy.Policy`, so keys other
engineers add there are accepted the day they land), the solvers, the
metrics and the target.  All problems are collected, each located by file
and key path, so one run of ``placewise sweep`` lists them all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placewise.benchmarks.replay.config import SOLVER_NAMES
from placewise.benchmarks.replay.metrics import JOB_KEYS
from placewise.benchmarks.sweep.points import SOLVE_METRICS, Point, expand
from placewise.benchmarks.sweep.spec import SpecError, SweepSpec
from placewise.benchmarks.sweep.variants import VariantError, check_change
from placewise.models.errors import InstanceError
from placewise.models.snapshot import Snapshot

REPLAY_METRICS = (
    *JOB_KEYS,
    "utilization_arrivals_pct",
    "solves",
    "still_waiting",
    "still_running",
    "offered_load",
    "capacity_gpus",
    "simulated_h",
    "cpu_only_skipped",
    "impossible",
)
"""Overall keys of a replay's metrics (per priority: :data:`JOB_KEYS`)."""
TIMING = frozenset({"solver_seconds", "wall_s"})
"""Columns that vary between runs of the same point."""


@dataclass(frozen=True, slots=True)
class Column:
    """One metric column: ``metric`` overall, or of one priority class."""

    label: str
    metric: str
    priority: str | None = None
    """The class name as the replay's ``by_priority`` keys it."""


@dataclass(frozen=True, slots=True)
class Checked:
    """A spec that passed every check, with its points and columns."""

    spec: SweepSpec
    points: list[Point]
    columns: list[Column]
    target: Column | None


def check(spec: SweepSpec, path: str | Path) -> Checked:
    """SpecError listing every problem, or the points ready to run."""
    problems: list[str] = []

    def bad(where: str, message: str) -> None:
        problems.append(f"{path}: {where}: {message}")

    _check_base(spec, bad)
    base_ok = not problems
    _check_settings(spec, bad)
    points = expand(spec)
    base = _base(spec, points[0], bad) if base_ok else None
    if base is not None:
        _check_changes(spec, base, points, bad)
    names = _priority_names(base) if base is not None else {}
    columns = []
    for i, label in enumerate(spec.metric_names):
        col = _column(spec, label, names, f"metrics.{i}", bad)
        if col is not None:
            columns.append(col)
    target = None
    if spec.target is not None:
        t = spec.target
        prio = None if t.priority is None else str(t.priority)
        label = t.metric if prio is None else f"{t.metric}@{prio}"
        target = _column(spec, label, names, "target", bad)
        if target is not None and target.label not in {c.label for c in columns}:
            columns.append(target)
    if problems:
        raise SpecError(problems)
    return Checked(spec, points, columns, target)


def _check_base(spec: SweepSpec, bad: Any) -> None:
    from placewise.benchmarks.harness.matrix import known_families

    if spec.base.family is not None and spec.base.family not in known_families():
        bad(
            "base.family",
            f"unknown family {spec.base.family!r}; known: {_list(known_families())}",
        )
    elif spec.base.family is not None and spec.base.overrides:
        _check_overrides(spec, bad)
    for i, f in enumerate(spec.base.files):
        if not Path(f).is_file():
            bad(f"base.files.{i}", f"no such file: {f}")


def _check_settings(spec: SweepSpec, bad: Any) -> None:
    from placewise.benchmarks.replay.trace import TRACE_FORMATS
    from placewise.solver.policy import Policy

    for i, solver in enumerate(spec.solvers):
        if solver not in SOLVER_NAMES:
            bad(
                f"solvers.{i}",
                f"unknown solver {solver!r}; known: {_list(SOLVER_NAMES)}",
            )
    jobs = spec.jobs
    if spec.kind == "replay":
        if jobs is None:
            bad("jobs", "a replay sweep needs jobs (a trace, or the family's arrivals)")
        elif jobs.trace is None and spec.base.files:
            bad("jobs.trace", "instance files replay a trace; give one")
        elif jobs.trace is not None and jobs.arrivals is not None:
            bad(
                "jobs.arrivals",
                "counts a family's generated arrivals; not with a trace",
            )
        elif jobs.trace is not None and not Path(jobs.trace).is_file():
            bad("jobs.trace", f"no such file: {jobs.trace}")
        elif jobs.trace_format not in TRACE_FORMATS:
            bad("jobs.trace_format", f"unknown format; known: {_list(TRACE_FORMATS)}")
    known = {f.name for f in dataclasses.fields(Policy)}
    for key, values in spec.axes.policy.items():
        if key not in known:
            bad(
                f"axes.policy.{key}",
                f"unknown policy key; known: {_list(sorted(known))}",
            )
            continue
        for i, value in enumerate(values):
            try:
                Policy.from_mapping({key: value})
            except (ValueError, TypeError) as exc:
                bad(f"axes.policy.{key}.{i}", str(exc))
    for i, load in enumerate(spec.axes.load or ()):
        if not load > 0:
            bad(f"axes.load.{i}", f"load must be > 0, got {load:g}")


def _check_overrides(spec: SweepSpec, bad: Any) -> None:
    from placewise.adapters.generate import GeneratorConfig
    from placewise.benchmarks.harness.matrix import CONFIGS

    config = GeneratorConfig.from_file(CONFIGS / f"{spec.base.family}.yaml")
    known = {f.name for f in dataclasses.fields(config)}
    for key in spec.base.overrides:
        if key not in known:
            bad(f"base.overrides.{key}", "unknown generator setting")
    if all(k in known for k in spec.base.overrides):
        try:
            config.with_overrides(**spec.base.overrides)
        except (ValueError, TypeError) as exc:
            bad("base.overrides", str(exc))


def _base(spec: SweepSpec, first: Point, bad: Any) -> Snapshot | None:
    from placewise.benchmarks.replay.jobs import load_cluster

    try:
        return load_cluster(first.replay, first.overrides)
    except InstanceError as exc:
        bad("base", f"the base does not load:\n{exc}")
    except (ValueError, TypeError) as exc:
        bad("base", str(exc))
    return None


def _check_changes(
    spec: SweepSpec, base: Snapshot, points: list[Point], bad: Any
) -> None:
    axis = {"add_hosts": "add_hosts", "quota": "quota", "fair_weight": "fair_weight"}
    seen: set[tuple[str, str]] = set()
    for point in points:
        for change in point.changes:
            try:
                check_change(base, change)
            except VariantError as exc:
                where = f"axes.{axis[change.kind]}.{exc.field}"
                if (where, str(exc)) not in seen:
                    seen.add((where, str(exc)))
                    bad(where, str(exc))


def _priority_names(base: Snapshot) -> dict[str, str]:
    """What a target may call a priority -> the name ``by_priority`` uses."""
    out: dict[str, str] = {}
    for pc in base.objects.priority_classes.values():
        out[pc.name] = pc.name
        out.setdefault(str(pc.value), pc.name)
    if not out:
        out["0"] = "0"  # trace jobs without classes are keyed by their value
    return out


def _column(
    spec: SweepSpec, label: str, names: Mapping[str, str], where: str, bad: Any
) -> Column | None:
    metric, _, prio = label.partition("@")
    known: tuple[str, ...] = REPLAY_METRICS if spec.kind == "replay" else SOLVE_METRICS
    if prio:
        if spec.kind == "solve":
            bad(where, "a solve has no per-priority metrics")
            return None
        known = JOB_KEYS
    key = f"{where}.metric" if where == "target" else where
    if metric not in known:
        bad(key, f"unknown metric {metric!r}; known: {_list(known)}")
        return None
    if not prio:
        return Column(metric, metric)
    if not names:
        return None  # the base did not load: its error says so
    if prio not in names:
        key = f"{where}.priority" if where == "target" else where
        bad(key, f"unknown priority {prio!r}; known: {_list(names)}")
        return None
    return Column(f"{metric}@{names[prio]}", metric, names[prio])


def _list(names: Any) -> str:
    return ", ".join(str(n) for n in names) or "none"
