"""Time simulation: arrivals and durations replayed through repeated solves.

A single snapshot says how good one decision is; a platform team cares what
its users wait for.  This replays a generated instance over time: each
pending workload arrives at its ``creationTimestamp`` (the generator draws
them as a Poisson stream), runs for a seeded duration once admitted, and
leaves.  Whenever something arrives or finishes the solver is called on the
current state (running workloads with their admissions, everything queued)
and its plan is applied: admissions start running, preempted workloads go
back to the queue and start over.  Every plan passes the validator first;
an invalid plan ends that simulation with the failure reported.

Reported per solver: queueing delay (arrival to first admission), job
completion time (arrival to finish), GPU utilisation over time (GPUs bound
to plain pods and running workloads over allocatable), preemptions, and the
solver's time.  Durations are either generated — lognormal, median 30 min,
sigma 0.75, clipped to 5 min .. 4 h — or drawn from the Alibaba openb trace
(``deletion_time - scheduled_time`` of its GPU pods, clipped to 1 min ..
8 h; median about 10 min, with a long tail); workloads already running at
the start get a uniform remaining time of up to an hour.  Plain pods
(inference, notebooks) stay for the whole run: they are the background load.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import Admission, Workload
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.metrics import gpus_of, usable

MEDIAN_S = 1800.0
SIGMA = 0.75
MIN_S, MAX_S = 300.0, 4 * 3600.0
RUNNING_LEFT_S = 3600.0
TICK_S = 30.0
"""Solves happen on this grid: events inside one tick share a solve."""
HORIZON_S = 24 * 3600.0

SIM_SOLVERS = ("kueue", "cpsat")


@dataclass(frozen=True, slots=True)
class SimJob:
    """One solver replaying one instance over time (a pool job)."""

    family: str
    seed: int
    solver: str
    time_limit: float
    workers: int
    pending: int | None = None
    """Override of the family's pending count (more arrivals, longer run)."""
    timing: str = "generated"
    """``generated`` (lognormal) or ``trace`` (openb durations)."""

    @property
    def label(self) -> str:
        return f"simulate {self.family} seed {self.seed} {self.timing} {self.solver}"

    def execute(self) -> SimResult:
        try:
            return simulate(self)
        except Exception as exc:  # reported, never dropped
            return self.failed(f"{type(exc).__name__}: {exc}")

    def failed(self, why: str) -> SimResult:
        return SimResult(
            self.family, self.seed, self.solver, self.timing, ok=False, error=why
        )


def sim_jobs(quick: bool, time_limit: float, workers: int) -> list[SimJob]:
    """The ``default`` family with more arrivals; the full bench also replays
    it with the trace's durations."""
    pending = 60 if quick else 200
    timings = ("generated",) if quick else ("generated", "trace")
    return [
        SimJob("default", 1, s, time_limit, workers, pending, timing)
        for timing in timings
        for s in SIM_SOLVERS
    ]


@dataclass(slots=True)
class SimResult:
    family: str
    seed: int
    solver: str
    timing: str = "generated"
    ok: bool = True
    error: str | None = None
    arrivals: int = 0
    started: int = 0
    finished: int = 0
    queue_delay_s: list[float] = field(default_factory=list)
    delay_by_priority: dict[int, list[float]] = field(default_factory=dict)
    """The same delays split by workload priority."""
    jct_s: list[float] = field(default_factory=list)
    util: list[tuple[float, float]] = field(default_factory=list)
    """(time s, GPU utilisation %) after each solve."""
    preemptions: int = 0
    solves: int = 0
    solve_seconds: float = 0.0
    sim_seconds: float = 0.0
    """Simulated time until the last workload finished (or the horizon)."""
    mean_util_pct: float = 0.0
    """Time-weighted GPU utilisation over the simulated time."""


def durations(
    keys: Sequence[str], rng: np.random.Generator, timing: str = "generated"
) -> dict[str, float]:
    """Seeded run time of each workload (seconds)."""
    if timing == "trace":
        pool = trace_durations()
        raw = rng.choice(pool, size=len(keys))
        return {k: float(d) for k, d in zip(keys, raw, strict=True)}
    if timing != "generated":
        raise ValueError(f"unknown timing {timing!r}; use generated or trace")
    raw = rng.lognormal(math.log(MEDIAN_S), SIGMA, size=len(keys))
    return {k: float(min(MAX_S, max(MIN_S, d))) for k, d in zip(keys, raw, strict=True)}


TRACE_MIN_S, TRACE_MAX_S = 60.0, 8 * 3600.0


def trace_durations(name: str = "default") -> np.ndarray[Any, np.dtype[np.float64]]:
    """Run times of the openb trace's GPU pods (deletion - scheduled), clipped."""
    from placewise.benchmarks.fgd.trace import data_dir

    path = data_dir() / f"openb_pod_list_{name}.csv"
    out: list[float] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["num_gpu"] in ("", "0") or not row["deletion_time"]:
                continue
            if not row["scheduled_time"]:
                continue
            d = float(int(row["deletion_time"]) - int(row["scheduled_time"]))
            out.append(min(TRACE_MAX_S, max(TRACE_MIN_S, d)))
    if not out:
        raise ValueError(f"no GPU pod durations in {path}")
    return np.asarray(out, dtype=np.float64)


def _solve(job: SimJob, snap: Snapshot) -> Plan:
    from placewise.solver.solve import SolveParams, solve

    if job.solver == "kueue":
        return solve(snap, SolveParams(solver="greedy"))
    if job.solver == "cpsat":
        return solve(
            snap,
            SolveParams(
                solver="cpsat",
                time_limit=job.time_limit,
                workers=job.workers,
                seed=job.seed,
            ),
        )
    from placewise.solver.baselines import run_baseline

    return run_baseline(job.solver, snap, seed=job.seed).plan


def simulate(job: SimJob) -> SimResult:
    overrides: tuple[tuple[str, Any], ...] = (
        (("pending", job.pending),) if job.pending is not None else ()
    )
    base = generate_snapshot(Instance(job.family, job.seed, overrides))
    rng = np.random.default_rng(job.seed)
    queued: dict[str, Workload] = {w.key: w for w in base.pending}
    t0 = min(w.creation_timestamp for w in queued.values())
    arrival = {
        k: (w.creation_timestamp - t0).total_seconds() for k, w in queued.items()
    }
    duration = durations(sorted(queued), rng, job.timing)
    running: dict[str, Workload] = {w.key: w for w in base.running}
    ends: dict[str, float] = {
        k: float(rng.uniform(0, RUNNING_LEFT_S)) for k in sorted(running)
    }
    for k, w in running.items():
        # Preempted at the start, a running workload queues again from scratch.
        queued[k] = w.model_copy(
            update={
                "admission": None,
                "quota_reserved": False,
                "quota_reserved_at": None,
            }
        )
        duration[k] = ends[k]
    upcoming = sorted(arrival, key=lambda k: (arrival[k], k))
    waiting: dict[str, Workload] = {}
    res = SimResult(
        job.family, job.seed, job.solver, job.timing, arrivals=len(upcoming)
    )
    capacity = sum(gpus_of(n.allocatable) for n in base.nodes.values() if usable(n))
    background = 0
    for pod in base.pods.values():
        node = base.nodes.get(pod.node_name or "")
        if pod.consumes_node and node is not None and usable(node):
            background += gpus_of(pod.requests)
    first_start: dict[str, float] = {}
    t, last_t, last_util = 0.0, 0.0, 0.0
    area = 0.0
    while upcoming or waiting or running:
        # Events up to t: departures, then arrivals.
        for k in [k for k, e in ends.items() if e <= t]:
            running.pop(k)
            ends.pop(k)
            if k in arrival:
                res.finished += 1
                res.jct_s.append(t - arrival[k])
        while upcoming and arrival[upcoming[0]] <= t:
            k = upcoming.pop(0)
            waiting[k] = queued[k]
        if waiting:
            snap = _state(base, running, waiting)
            start = time.perf_counter()
            plan = _solve(job, snap)
            res.solve_seconds += time.perf_counter() - start
            res.solves += 1
            bad = validate(snap, plan)
            if bad:
                res.ok = False
                res.error = (
                    f"plan at t={t:.0f}s fails the validator "
                    f"({len(bad)} violation(s)); first: {bad[0]}"
                )
                break
            clock = Clock(t0, t)
            _apply(
                plan, clock, running, waiting, ends, duration, first_start, queued, res
            )
        busy = background + _running_gpus(running)
        util = 100.0 * busy / capacity if capacity else 0.0
        area += last_util * (t - last_t)
        last_t, last_util = t, util
        res.util.append((t, util))
        nxt = [e for e in ends.values()] + ([arrival[upcoming[0]]] if upcoming else [])
        if not nxt or t >= HORIZON_S:
            break
        t = max(t + TICK_S, math.ceil(min(nxt) / TICK_S) * TICK_S)
    res.sim_seconds = t
    res.mean_util_pct = area / t if t > 0 else last_util
    arrived = sorted(k for k in first_start if k in arrival)
    res.started = len(arrived)
    res.queue_delay_s = [first_start[k] - arrival[k] for k in arrived]
    for k in arrived:
        res.delay_by_priority.setdefault(queued[k].priority, []).append(
            first_start[k] - arrival[k]
        )
    return res


def _running_gpus(running: Mapping[str, Workload]) -> int:
    total = 0
    for w in running.values():
        for (_, r), v in w.usage().items():
            if r in ACCELERATORS:
                total += v
    return total


def _state(
    base: Snapshot, running: Mapping[str, Workload], waiting: Mapping[str, Workload]
) -> Snapshot:
    """The base cluster with the simulation's running and queued workloads."""
    objects = dataclasses.replace(base.objects, workloads={**running, **waiting})
    return Snapshot(objects)


@dataclass(frozen=True, slots=True)
class Clock:
    start: datetime
    t: float

    @property
    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)


def _apply(
    plan: Plan,
    clock: Clock,
    running: dict[str, Workload],
    waiting: dict[str, Workload],
    ends: dict[str, float],
    duration: Mapping[str, float],
    first_start: dict[str, float],
    queued: Mapping[str, Workload],
    res: SimResult,
) -> None:
    """Preempted workloads queue again (their work is lost); admitted ones run."""
    t = clock.t
    for p in plan.preemptions:
        if running.pop(p.workload, None) is None:
            continue
        ends.pop(p.workload, None)
        res.preemptions += 1
        waiting[p.workload] = queued[p.workload]
    for a in plan.admissions:
        w = waiting.pop(a.workload)
        running[a.workload] = w.model_copy(
            update={
                "admission": Admission(
                    cluster_queue=a.cluster_queue,
                    pod_set_assignments=a.pod_set_assignments,
                ),
                "quota_reserved": True,
                "quota_reserved_at": clock.now,
            }
        )
        ends[a.workload] = t + duration.get(a.workload, MEDIAN_S)
        first_start.setdefault(a.workload, t)


# -- reporting -------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values), q))


@dataclass(slots=True)
class SimulationReport:
    results: list[SimResult]

    @classmethod
    def of(cls, results: Sequence[Any]) -> SimulationReport:
        return cls([r for r in results if isinstance(r, SimResult)])

    def markdown(self) -> list[str]:
        if not self.results:
            return ["No simulation ran."]
        r0 = self.results[0]
        out = [
            f"Instance: `{r0.family}` seed {r0.seed} with {r0.arrivals} arrivals "
            "(Poisson, the generator's creation times). Durations: `generated` = "
            f"lognormal, median {MEDIAN_S / 60:.0f} min; `trace` = run times of "
            "the openb trace's GPU pods. Solves on a "
            f"{TICK_S:.0f} s grid whenever something arrived or finished; every "
            "plan is validated.",
            "",
            "| durations | solver | started | finished | queueing delay p50 / p95 "
            "(min) | JCT p50 / p95 (min) | mean GPU util % | preemptions | solves "
            "| solver time (s) | simulated (h) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sorted(self.results, key=lambda r: (r.timing, r.solver)):
            if not r.ok:
                out.append(f"| {r.timing} | {r.solver} | FAILED: {r.error} ||||||||||")
                continue
            delay, jct = r.queue_delay_s, r.jct_s
            out.append(
                f"| {r.timing} | {r.solver} | {r.started} | {r.finished} | "
                f"{_m(_pct(delay, 50))} / {_m(_pct(delay, 95))} | "
                f"{_m(_pct(jct, 50))} / {_m(_pct(jct, 95))} | "
                f"{r.mean_util_pct:.1f} | {r.preemptions} | {r.solves} | "
                f"{r.solve_seconds:.1f} | {r.sim_seconds / 3600:.1f} |"
            )
        good = [r for r in self.results if r.ok and r.queue_delay_s]
        if good:
            means = [
                f"{r.solver} ({r.timing}) "
                f"{statistics.fmean(r.queue_delay_s) / 60:.1f} min"
                for r in sorted(good, key=lambda r: (r.timing, r.solver))
            ]
            out += ["", "Mean queueing delay: " + ", ".join(means) + "."]
            out += ["", "Mean queueing delay by priority (min; started workloads):", ""]
            prios = sorted({p for r in good for p in r.delay_by_priority}, reverse=True)
            out.append(
                "| durations | solver | "
                + " | ".join(f"priority {p}" for p in prios)
                + " |"
            )
            out.append("|---|---|" + "---|" * len(prios))
            for r in sorted(good, key=lambda r: (r.timing, r.solver)):
                cells = [
                    _m(statistics.fmean(r.delay_by_priority[p]))
                    + f" ({len(r.delay_by_priority[p])})"
                    if r.delay_by_priority.get(p)
                    else "-"
                    for p in prios
                ]
                out.append(f"| {r.timing} | {r.solver} | " + " | ".join(cells) + " |")
        return out

    def plots(self, directory: Path) -> dict[str, Path]:
        """GPU utilisation over time, and the queueing-delay distribution."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from placewise.benchmarks.harness.report import COLORS

        good = sorted(
            (r for r in self.results if r.ok and r.util),
            key=lambda r: (r.timing, r.solver),
        )
        if not good:
            return {}
        dash = {"generated": "-", "trace": ":"}

        def draw(
            name: str,
            size: tuple[float, float],
            xlabel: str,
            ylabel: str,
            series: list[tuple[SimResult, Any, Any]],
        ) -> Path:
            fig, ax = plt.subplots(figsize=size)
            for r, xs, ys in series:
                ax.step(
                    xs,
                    ys,
                    where="post",
                    label=f"{r.solver} ({r.timing})",
                    color=COLORS.get(r.solver),
                    linestyle=dash.get(r.timing, "-"),
                )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            fig.tight_layout()
            path = directory / name
            fig.savefig(path, dpi=110)
            plt.close(fig)
            return path

        util = [
            (r, [t / 3600 for t, _ in r.util], [u for _, u in r.util]) for r in good
        ]
        delay = []
        for r in good:
            if r.queue_delay_s:
                minutes = np.sort(np.asarray(r.queue_delay_s)) / 60
                share = np.arange(1, minutes.size + 1) / minutes.size
                delay.append((r, minutes, share))
        return {
            "sim-util": draw(
                "sim-utilisation.png",
                (7, 3.5),
                "simulated time (h)",
                "GPU utilisation %",
                util,
            ),
            "sim-delay": draw(
                "sim-queueing-delay.png",
                (5, 3.5),
                "queueing delay (min)",
                "share of workloads",
                delay,
            ),
        }


def _m(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"
