"""Points of a sweep: what one replay (or solve) of one variant is, and running it.

A point is plain data (it pickles, it goes to a Ray worker, and its JSON
is hashed into the name of its cached result), so the same point gives the
same key on every machine and a rerun can skip what is already done.
:func:`run_point` is the whole work of a point, from loading the base to a
flat metrics record, and imports nothing at module level a worker would
not need.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from placewise.benchmarks.replay.config import ReplayConfig
from placewise.benchmarks.sweep.spec import SweepSpec
from placewise.benchmarks.sweep.variants import Change

Coords = tuple[tuple[str, Any], ...]
"""(axis column, value) of a point, in the table's column order."""


@dataclass(frozen=True, slots=True)
class Point:
    """One replay (``kind: replay``) or one solve (``kind: solve``)."""

    kind: str
    replay: ReplayConfig
    """Base, jobs, seed and solver, as ``placewise simulate`` would take them."""
    overrides: tuple[tuple[str, Any], ...] = ()
    changes: tuple[Change, ...] = ()
    policy: tuple[tuple[str, Any], ...] = ()
    coords: Coords = ()
    inputs: str = ""
    """Digest of the input files' contents (instances, trace, family config):
    an edited file gives new keys, so a rerun does not reuse stale results."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "replay": self.replay.to_dict(),
            "overrides": [list(kv) for kv in self.overrides],
            "changes": [c.to_dict() for c in self.changes],
            "policy": [list(kv) for kv in self.policy],
            "coords": [list(kv) for kv in self.coords],
            "inputs": self.inputs,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Point:
        return cls(
            kind=data["kind"],
            replay=ReplayConfig.from_dict(data["replay"]),
            overrides=tuple((k, v) for k, v in data["overrides"]),
            changes=tuple(Change.from_dict(c) for c in data["changes"]),
            policy=tuple((k, v) for k, v in data["policy"]),
            coords=tuple((k, v) for k, v in data["coords"]),
            inputs=data.get("inputs", ""),
        )

    @property
    def key(self) -> str:
        """Hash of everything that decides the result (not the columns)."""
        data = self.to_dict()
        del data["coords"]
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def axis_columns(spec: SweepSpec) -> list[tuple[str, list[Any]]]:
    """The variant axes as (column, values), in spec order (seed and solver
    are not variants: they come last and are spread over, not chosen)."""
    a = spec.axes
    out: list[tuple[str, list[Any]]] = []
    if a.add_hosts is not None:
        out.append((f"add_hosts:{a.add_hosts.flavor}", list(a.add_hosts.values)))
    if a.quota is not None:
        q = a.quota
        out.append((f"quota:{q.cluster_queue}/{q.resource}", list(q.values)))
    if a.fair_weight is not None:
        out.append((f"fair_weight:{a.fair_weight.cluster_queue}", a.fair_weight.values))
    for key, values in a.policy.items():
        out.append((f"policy.{key}", list(values)))
    if a.load is not None:
        out.append(("load", list(a.load)))
    return out


def expand(spec: SweepSpec) -> list[Point]:
    """Every point: variants in spec order, then solvers, then seeds."""
    axes = axis_columns(spec)
    jobs = spec.jobs
    inputs = inputs_digest(spec)
    out = []
    for combo in itertools.product(*[values for _, values in axes]):
        coords = dict(zip([c for c, _ in axes], combo, strict=True))
        changes = _changes(spec, coords)
        policy = tuple(
            (c.removeprefix("policy."), v)
            for c, v in coords.items()
            if c.startswith("policy.")
        )
        load = coords.get("load", jobs.load if jobs else None)
        for solver in spec.solvers:
            for seed in spec.axes.seed:
                replay = ReplayConfig(
                    instances=tuple(spec.base.files),
                    family=spec.base.family,
                    job_trace=jobs.trace if jobs else None,
                    trace_format=jobs.trace_format if jobs else "helios",
                    arrivals=jobs.arrivals if jobs else None,
                    load=load,
                    hours=jobs.hours if jobs else None,
                    seed=seed,
                    solver=solver,
                    time_limit=spec.time_limit,
                    workers=spec.workers,
                    durations=jobs.durations if jobs else "generated",
                )
                out.append(
                    Point(
                        kind=spec.kind,
                        replay=replay,
                        overrides=tuple(sorted(spec.base.overrides.items())),
                        changes=changes,
                        policy=policy,
                        coords=(
                            *coords.items(),
                            ("solver", solver),
                            ("seed", seed),
                        ),
                        inputs=inputs,
                    )
                )
    return out


def inputs_digest(spec: SweepSpec) -> str:
    """sha256 of every input file a point reads (missing ones count as
    empty: the check reports them before anything runs)."""
    from placewise.benchmarks.harness.matrix import CONFIGS

    files = [Path(f) for f in spec.base.files]
    if spec.base.family is not None:
        files.append(CONFIGS / f"{spec.base.family}.yaml")
    if spec.jobs is not None and spec.jobs.trace is not None:
        files.append(Path(spec.jobs.trace))
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path).encode() + b"\0")
        try:
            with path.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(chunk)
        except OSError:
            pass
    return digest.hexdigest()[:16]


def _changes(spec: SweepSpec, coords: Mapping[str, Any]) -> tuple[Change, ...]:
    a, out = spec.axes, []
    if a.add_hosts is not None:
        value = coords[f"add_hosts:{a.add_hosts.flavor}"]
        if value:
            out.append(
                Change(
                    "add_hosts",
                    value,
                    flavor=a.add_hosts.flavor,
                    grow_quota=a.add_hosts.grow_quota,
                )
            )
    if a.quota is not None:
        q = a.quota
        out.append(
            Change(
                "quota",
                coords[f"quota:{q.cluster_queue}/{q.resource}"],
                flavor=q.flavor,
                cluster_queue=q.cluster_queue,
                resource=q.resource,
            )
        )
    if a.fair_weight is not None:
        cq = a.fair_weight.cluster_queue
        out.append(Change("fair_weight", coords[f"fair_weight:{cq}"], cluster_queue=cq))
    return tuple(out)


# -- running one point ---------------------------------------------------------


def run_point(data: Mapping[str, Any]) -> dict[str, Any]:
    """The record of one point (``Point.to_dict()`` in, plain JSON out):
    ``ok``, ``error``, ``metrics`` (flat), ``by_priority`` and ``wall_s``.

    Loading, editing and replaying all happen here, in the worker, so that
    only this small dict crosses processes (a Snapshot would not pickle
    cheaply, and a Ray cluster's workers load their own copy)."""
    from placewise.benchmarks.replay.jobs import load_cluster
    from placewise.benchmarks.sweep.variants import apply
    from placewise.solver.policy import Policy

    point = Point.from_dict(data)
    wall = time.perf_counter()
    base = load_cluster(point.replay, point.overrides)
    snapshot = apply(base, point.changes)
    policy = Policy.from_mapping(dict(point.policy))
    if point.kind == "solve":
        out = _solve_point(point, snapshot, policy)
    else:
        out = _replay_point(point, base, snapshot, policy)
    out["key"] = point.key
    out["point"] = point.to_dict()
    out["wall_s"] = time.perf_counter() - wall
    return out


def _replay_point(
    point: Point, base: Any, snapshot: Any, policy: Any
) -> dict[str, Any]:
    from placewise.benchmarks.replay.engine import run_workset
    from placewise.benchmarks.replay.jobs import build, offered_load, rescale
    from placewise.solver.metrics import gpus_of, usable

    config = point.replay
    work = build(dataclasses.replace(config, load=None), snapshot)
    if config.load is not None and work.jobs:
        # Against the base's GPUs: every variant gets the same arrivals.
        base_gpus = sum(
            gpus_of(n.allocatable) for n in base.nodes.values() if usable(n)
        )
        work.jobs = rescale(work.jobs, config.load, base_gpus)
        work.offered_load = offered_load(work.jobs, work.capacity_gpus)
    res = run_workset(config, work, policy=policy)
    metrics = res.metrics()
    by_priority = metrics.pop("by_priority")
    values = {r.priority_name: r.priority for r in res.records}
    return {
        "ok": res.ok,
        "error": res.error,
        "metrics": metrics,
        "by_priority": by_priority,
        "priorities": {name: values[name] for name in by_priority},
    }


def _solve_point(point: Point, snapshot: Any, policy: Any) -> dict[str, Any]:
    from placewise.models.validate import validate
    from placewise.solver.metrics import compute
    from placewise.solver.solve import SolveParams, solve

    config = point.replay
    start = time.perf_counter()
    try:
        plan = solve(
            snapshot,
            SolveParams(
                solver=config.solver,
                time_limit=config.time_limit,
                workers=config.workers,
                seed=config.seed,
                policy=policy,
            ),
        )
    except Exception as exc:  # a solver crash is this point's failure
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "metrics": {}}
    seconds = time.perf_counter() - start
    bad = validate(snapshot, plan)
    m = compute(snapshot, plan)
    metrics: dict[str, Any] = {
        f.name: getattr(m, f.name)
        for f in dataclasses.fields(m)
        if isinstance(getattr(m, f.name), int | float | None)
    }
    metrics.update(
        net_gpus=m.net_gpus,
        gpu_alloc_pct=m.gpu_alloc_pct,
        solver_seconds=seconds,
        violations=len(bad),
    )
    error = f"plan fails the validator: {bad[0]}" if bad else None
    return {
        "ok": not bad,
        "error": error,
        "metrics": metrics,
        "by_priority": {},
        "priorities": {},
    }


SOLVE_METRICS = (
    "admitted_workloads",
    "admitted_gpus",
    "preemptions",
    "preempted_gpus",
    "gpus_running_before",
    "gpus_after",
    "gpu_capacity",
    "gpu_in_use",
    "stranded_gpus",
    "topology_gangs",
    "gangs_in_domain",
    "domains_per_gang",
    "partial_gangs",
    "partial_gpus",
    "net_gpus",
    "gpu_alloc_pct",
    "solver_seconds",
    "violations",
)
"""Metric keys of a ``kind: solve`` point (the bench's plan metrics)."""
