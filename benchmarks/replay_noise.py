"""How far one replay decides issue 19's per-run checks: a solver against itself.

A replay is a chaotic system: one different decision early (a job placed
on another host, one eviction more) changes which jobs run when every
later high-priority job arrives, and so whom it evicts and how long
everyone waits.  This benchmark measures that sensitivity without any
change of scheduler: it replays the same jobs through the same solver with
the solve grid (every ``tick_s``, 30 s) shifted by a few seconds against
the arrivals (``tick_phase_s``), and judges each shifted run against the
unshifted one with the issue's four checks
(:mod:`placewise.benchmarks.replay.checks`).  The phase moves, the cadence
stays: a longer or shorter tick would also lengthen or shorten every
one-tick wait, and where the top priority's p95 delay is one tick (it is on
most runs) that alone would decide the check.  Where Kueue does not pass
them against itself, a failed check on one run says little about a
scheduler; the medians over many runs are what carry.

    python -m placewise.benchmarks.replay_noise [--solver greedy]
        [--phases 1,5,10,15,20] [--families default,multi-team,preemption-heavy]
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
from placewise.benchmarks.replay.config import DURATIONS, TICK_S

FAMILIES = ("default", "multi-team", "preemption-heavy")


@dataclass(frozen=True, slots=True)
class Shifted:
    """One run replayed on a shifted grid, judged against the unshifted."""

    run: str
    phase_s: float
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


def shifted(config: ReplayConfig, phases: Sequence[float]) -> list[Shifted]:
    """``config`` as given and with the grid at each of ``phases``, judged."""
    base = _metrics(config)
    return [
        Shifted(name(config), p, judge(base, _metrics(replace(config, tick_phase_s=p))))
        for p in phases
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", default="greedy")
    parser.add_argument("--phases", default="1,5,10,15,20")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--durations", default=",".join(DURATIONS))
    parser.add_argument("--deterministic-time", type=float, default=0.5)
    args = parser.parse_args(argv)
    phases = [float(p) for p in args.phases.split(",") if p]
    if not phases or any(not 0 < p < TICK_S for p in phases):
        parser.error(f"--phases: seconds in (0, {TICK_S:g})")
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
        got = shifted(config, phases)
        results += got
        marks = " ".join(f"+{s.phase_s:g}s:{s.checks.marks}" for s in got)
        print(f"{name(config)}: {marks}", flush=True)
    for p in phases:
        line = summarize([s.checks for s in results if s.phase_s == p]).line()
        print(f"{args.solver}, grid shifted {p:g} s: {line}")
    line = summarize([s.checks for s in results]).line()
    print(f"{args.solver}, every shift: {line}")
    took = time.perf_counter() - began
    print(f"{len(runs)} runs x {len(phases) + 1} grids in {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
