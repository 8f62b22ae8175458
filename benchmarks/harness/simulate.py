"""Time simulation for ``placewise bench --simulate``, on the replay engine.

A single snapshot says how good one decision is; a platform team cares what
its users wait for.  The bench replays a generated family's arrivals (its
pending workloads at their creation times) through ``kueue`` and ``cpsat``
with :func:`placewise.benchmarks.replay.run_replay` — the engine behind
``placewise simulate`` — and reports the runs in its summary.  Durations are
either generated (lognormal, median 30 min, sigma 0.75, clipped to 5 min ..
4 h) or drawn from the Alibaba openb trace (``timing="trace"``); queueing
delay counts every wait of a job, also after an eviction.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from placewise.benchmarks.replay.config import TICK_S
from placewise.benchmarks.replay.jobs import MEDIAN_S

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


def simulate(job: SimJob) -> SimResult:
    """One bench replay through the replay engine, in the bench's terms."""
    from placewise.benchmarks.replay import ReplayConfig, run_replay

    res = run_replay(
        ReplayConfig(
            family=job.family,
            arrivals=job.pending,
            seed=job.seed,
            solver=job.solver,
            time_limit=job.time_limit,
            workers=job.workers,
            durations="openb" if job.timing == "trace" else "generated",
        )
    )
    jobs = [r for r in res.records if r.counted and r.arrival_s <= res.end_s]
    out = SimResult(
        job.family,
        job.seed,
        job.solver,
        job.timing,
        ok=res.ok,
        error=res.error,
        arrivals=len([r for r in res.records if r.counted]),
        started=sum(r.first_start_s is not None for r in jobs),
        finished=sum(r.finish_s is not None for r in jobs),
        queue_delay_s=[r.waited_s for r in jobs],
        jct_s=[r.finish_s - r.arrival_s for r in jobs if r.finish_s is not None],
        util=[
            (t, 100.0 * busy / res.capacity_gpus if res.capacity_gpus else 0.0)
            for t, busy, _ in res.samples
        ],
        preemptions=res.preemptions,
        solves=res.solves,
        solve_seconds=res.solver_seconds,
        sim_seconds=res.end_s,
    )
    for r in jobs:
        out.delay_by_priority.setdefault(r.priority, []).append(r.waited_s)
    util = res.metrics()["utilization_pct"]
    out.mean_util_pct = float(util) if util is not None else 0.0
    return out


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
            f"{TICK_S:.0f} s grid whenever something changed; every plan is "
            "validated. Queueing delay: every wait of every arrived job (after "
            "an eviction too; still queued at the end: its wait so far).",
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
            out += ["", "Mean queueing delay by priority (min; arrived jobs):", ""]
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
