"""How far one replay decides issue 19's per-run checks: a solver against itself.

A replay is a chaotic system: one different decision early (a job placed
on another host, one eviction more) changes which jobs run when every
later high-priority job arrives, and so whom it evicts and how long
everyone waits.  This benchmark measures that sensitivity without any
change of scheduler: it replays the same jobs through the same solver with
the solve grid (``tick_s``, 30 s) shifted by a second or a few, and judges
each shifted run against the unshifted one with the issue's four checks
(:mod:`placewise.benchmarks.replay.checks`).  Where Kueue does not pass
them against itself, a failed check on one run says little about a
scheduler; the medians over many runs are what carry.

    python -m placewise.benchmarks.replay_noise [--solver greedy]
        [--ticks 25,29,31,32,35] [--families default,multi-team,preemption-heavy]
        [--seeds 1,2,3] [--durations generated,openb] [--deterministic-time 0.5]

The runs are the issue's generated protocol: 100 arrivals on ``default``
with generated durations, 60 everywhere else, one CP-SAT worker.  Measured
figures are in benchmarks/README ("Kueue against itself").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from placewise.benchmarks.replay import ReplayConfig, run_replay
from placewise.benchmarks.replay.checks import Checks, judge, summarize
from placewise.benchmarks.replay.config import TICK_S

FAMILIES = ("default", "multi-team", "preemption-heavy")
DURATIONS = ("generated", "openb")


@dataclass(frozen=True, slots=True)
class Shifted:
    """One run replayed at one shifted tick, judged against the base tick."""

    run: str
    tick_s: float
    checks: Checks


def arrivals(fam: str, durations: str) -> int:
    """The issue's protocol: ``default`` with generated durations replays
    100 arrivals (its 60 first leave the cluster idle), the rest 60."""
    return 100 if fam == "default" and durations == "generated" else 60


def configs(
    solver: str,
    families: Sequence[str],
    seeds: Sequence[int],
    durations: Sequence[str],
    deterministic_time: float,
) -> list[ReplayConfig]:
    return [
        ReplayConfig(
            family=fam,
            arrivals=arrivals(fam, dur),
            seed=seed,
            durations=dur,
            solver=solver,
            workers=1,
            time_limit=30.0,
            deterministic_time=deterministic_time,
        )
        for fam in families
        for seed in seeds
        for dur in durations
    ]


def _metrics(config: ReplayConfig) -> dict[str, object]:
    res = run_replay(config)
    if not res.ok:
        raise RuntimeError(f"{name(config)}: {res.error}")
    return res.metrics()


def name(config: ReplayConfig) -> str:
    return f"{config.family}-{config.seed}-{config.durations}-{config.arrivals}"


def shifted(config: ReplayConfig, ticks: Sequence[float]) -> list[Shifted]:
    """``config`` at the base tick and at each of ``ticks``, judged."""
    base = _metrics(config)
    return [
        Shifted(name(config), t, judge(base, _metrics(replace(config, tick_s=t))))
        for t in ticks
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", default="greedy")
    parser.add_argument("--ticks", default="25,29,31,32,35")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--durations", default=",".join(DURATIONS))
    parser.add_argument("--deterministic-time", type=float, default=0.5)
    args = parser.parse_args(argv)
    ticks = [float(t) for t in args.ticks.split(",") if t]
    if any(t <= 0 or t == TICK_S for t in ticks):
        parser.error(f"--ticks: positive seconds other than the base {TICK_S:g}")
    runs = configs(
        args.solver,
        [f for f in args.families.split(",") if f],
        [int(s) for s in args.seeds.split(",") if s],
        [d for d in args.durations.split(",") if d],
        args.deterministic_time,
    )
    began = time.perf_counter()
    results: list[Shifted] = []
    for config in runs:
        got = shifted(config, ticks)
        results += got
        marks = " ".join(f"{s.tick_s:g}s:{s.checks.marks}" for s in got)
        print(f"{name(config)}: {marks}", flush=True)
    for t in ticks:
        line = summarize([s.checks for s in results if s.tick_s == t]).line()
        print(f"{args.solver} at tick {t:g} s against {TICK_S:g} s: {line}")
    took = time.perf_counter() - began
    print(f"{len(runs)} runs x {len(ticks) + 1} ticks in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
