"""``placewise simulate``: replay a trace or a family's arrivals through solvers.

One decision says little about what users wait for; a replay over hours
does.  This command builds a :class:`ReplayConfig` per solver (``--solver``
and, with ``--compare``, a second one on the same jobs), runs each through
:func:`run_replay`, and prints a table (or the JSON contract); ``-o DIR``
also writes ``simulate.json``, ``simulate.csv`` and plots.  Exit 0 when
every replay completed, 1 when one failed (a solver error or a plan the
validator rejects: reported, never applied), 2 for bad input with the file,
line and column named.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from rich.console import Console

from placewise.adapters.cli.common import Subparsers, read_policy
from placewise.benchmarks.replay.config import DURATIONS, SOLVER_NAMES, ReplayConfig
from placewise.benchmarks.replay.trace import TRACE_FORMATS

log = logging.getLogger("placewise")
WARNED_JOBS = 10
"""Impossible jobs named one by one on stderr (all are counted)."""


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="replay arrivals and run times through a solver over time",
        description=(
            "Replay jobs over time through one solver (or two side by side with "
            "--compare), applying each validated plan as Kueue would: admitted "
            "work runs for its run time, preempted work requeues and restarts. "
            "The cluster is INSTANCE files or --family's generated instance; the "
            "jobs a --job-trace or the family's pending workloads."
        ),
    )
    p.add_argument(
        "instances",
        nargs="*",
        metavar="INSTANCE",
        help="the cluster: instance file(s), as placewise solve reads them "
        "(not with --family)",
    )
    p.add_argument("--job-trace", metavar="FILE", help="jobs from a trace CSV")
    p.add_argument(
        "--trace-format",
        choices=TRACE_FORMATS,
        default="helios",
        help="columns of --job-trace (default: %(default)s)",
    )
    p.add_argument(
        "--family",
        metavar="F",
        help="a generated benchmark family (benchmarks/configs/F.yaml) as the "
        "cluster; without --job-trace its pending workloads are the arrivals",
    )
    p.add_argument(
        "--arrivals",
        type=int,
        metavar="N",
        help="with --family and no trace: generate N arrivals",
    )
    p.add_argument(
        "--load",
        type=float,
        metavar="X",
        help="rescale arrival times to an offered load of X "
        "(Σ GPUs x run time / (cluster GPUs x arrival span))",
    )
    p.add_argument(
        "--hours", type=float, metavar="H", help="keep the first H hours of arrivals"
    )
    p.add_argument("--seed", type=int, default=1, help="seed (default: %(default)s)")
    p.add_argument(
        "--solver",
        choices=list(SOLVER_NAMES),
        default="greedy",
        help="greedy (= kueue, the Kueue-faithful greedy), cpsat, auto, "
        "kube-default, binpack-gang (default: %(default)s)",
    )
    p.add_argument(
        "--compare",
        choices=list(SOLVER_NAMES),
        metavar="S2",
        help="also replay the same jobs through S2, side by side",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=10.0,
        metavar="SEC",
        help="cpsat wall budget per solve (default: %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="cpsat search workers; 0 = all cores (default)",
    )
    p.add_argument(
        "--deterministic-time",
        type=float,
        default=None,
        metavar="T",
        help="cpsat's deterministic work budget per solve (CP-SAT units, about "
        "seconds on an idle core); with --workers 1 the replay is reproducible "
        "whatever the machine's load (--time-limit stays the wall cap)",
    )
    p.add_argument(
        "--durations",
        choices=DURATIONS,
        default="generated",
        help="run times of generated arrivals: lognormal, or the openb "
        "trace's (default: %(default)s)",
    )
    p.add_argument(
        "--admission-fair-sharing",
        action="store_true",
        help="turn on Kueue's admission fair sharing for every ClusterQueue "
        "(half-life 1h, sampling 5m, GPUs weighted 1, cpu and memory 0) and "
        "report each LocalQueue's usage over time",
    )
    p.add_argument(
        "--policy",
        metavar="FILE",
        help="YAML objective policy for the optimizer, as placewise solve "
        "reads it (see README, 'Objective'); every solve of the replay uses it",
    )
    p.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="standard output (default: %(default)s)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="also write simulate.json, simulate.csv and PNG plots to DIR",
    )
    p.set_defaults(run=run)


def configs_of(args: argparse.Namespace) -> list[ReplayConfig]:
    """One config per solver; ValueError names what is wrong."""
    solvers = [args.solver] + ([args.compare] if args.compare else [])
    out = [
        ReplayConfig(
            instances=tuple(args.instances),
            family=args.family,
            job_trace=args.job_trace,
            trace_format=args.trace_format,
            arrivals=args.arrivals,
            load=args.load,
            hours=args.hours,
            seed=args.seed,
            solver=s,
            time_limit=args.time_limit,
            workers=args.workers,
            deterministic_time=args.deterministic_time,
            durations=args.durations,
            admission_fair_sharing=args.admission_fair_sharing,
            policy=args.policy,
        )
        for s in solvers
    ]
    for c in out:
        c.check()
    return out


def run(args: argparse.Namespace) -> int:
    from placewise.benchmarks.replay.engine import run_replay
    from placewise.benchmarks.replay.report import (
        json_text,
        print_table,
        write_outputs,
    )

    console = Console(stderr=True)
    try:
        configs = configs_of(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    read_policy(args.policy)  # a bad file: exit 2 naming it, before any replay
    results = []
    for i, config in enumerate(configs):
        try:
            res = _with_progress(console, config, run_replay)
        except ValueError as exc:  # bad settings found on loading (family, ...)
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if i == 0:
            for warning in res.warnings:
                log.warning("%s", warning)
            _warn(res.impossible)
            if not any(r.counted for r in res.records):
                log.warning(
                    "no jobs to replay: the trace window has no GPU job, or the "
                    "family has no pending work (give --job-trace or --arrivals)"
                )
        results.append(res)
    if args.format == "json":
        sys.stdout.write(json_text(results))
    else:
        print_table(Console(), results)
    if args.output:
        for path in write_outputs(Path(args.output), results):
            console.print(f"wrote {path}")
    return 0 if all(r.ok for r in results) else 1


def _warn(impossible: list[str]) -> None:
    for why in impossible[:WARNED_JOBS]:
        log.warning("no plan can ever admit %s; left out", why)
    if len(impossible) > WARNED_JOBS:
        log.warning(
            "... and %d more jobs no plan can admit", len(impossible) - WARNED_JOBS
        )


def _with_progress(console: Console, config: ReplayConfig, replay):  # type: ignore[no-untyped-def]
    """Run ``replay(config)`` with a progress bar on a terminal only."""
    if not console.is_terminal:
        return replay(config)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"[bold]simulate {config.solver}"),
        BarColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        bar = progress.add_task("", total=1.0)

        def tick(t: float, horizon: float) -> None:
            progress.update(
                bar,
                completed=min(1.0, t / horizon) if horizon > 0 else 1.0,
                description=f"{t / 3600:.1f} h simulated",
            )

        return replay(config, tick)
