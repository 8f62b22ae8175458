"""``placewise bench``: every solver side by side, one report.

A platform team asks "what would placewise buy us over what we run now?";
the answer has to compare real policies on the same instances, check every
plan, and say where the limit is.  This command builds the experiment
matrix (generated families x seeds x solvers, plus the LP bound of each
instance), runs it through the sweep's executors (``--jobs`` local worker
processes, or Ray with ``--ray``/``--ray-address``; each experiment in a
fresh process of its own either way) with a progress bar,
adds the Alibaba GPU trace replay and, with ``--simulate``, a replay of
arrivals over time, and writes ``summary.md``, ``runs.csv`` and PNG plots
to ``--out``.  Exit 0 when the report is written, also when some runs
failed (they are listed in the report); 2 for bad options.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from placewise.adapters.cli.common import Subparsers
from placewise.benchmarks.harness import matrix

if TYPE_CHECKING:
    from placewise.benchmarks.harness.runner import Work
    from placewise.benchmarks.sweep.executors import Executor

QUICK_TIMEOUT = 300.0
FULL_TIMEOUT = 1800.0


def register(subparsers: Subparsers) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "bench",
        help="run the solvers side by side and write a report",
        description=(
            "Run kueue (the Kueue-compatible greedy), kube-default, binpack-gang "
            "and cpsat on generated benchmark families (and the Alibaba GPU "
            "trace), validate every plan, and write summary.md, runs.csv and "
            "PNG plots."
        ),
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="one seed, small families, the default trace only",
    )
    p.add_argument(
        "--families",
        metavar="F[,F...]",
        help="families to run (default: all, or the small ones "
        f"with --quick); known: {', '.join(matrix.known_families())}",
    )
    p.add_argument(
        "--solvers",
        metavar="S[,S...]",
        default=",".join(matrix.SOLVERS),
        help="solvers to compare (default: %(default)s)",
    )
    p.add_argument(
        "--seeds",
        metavar="N|S[,S...]",
        help="N seeds 1..N, or a list (default: 1 with --quick, else 3; "
        "the full bench runs the largest families "
        f"({', '.join(sorted(matrix.ONE_SEED_FAMILIES))}) on seed 1 "
        "unless --seeds is given)",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=10.0,
        metavar="SEC",
        help="cpsat wall budget per instance (default: %(default)s)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="experiments run in parallel processes (default: the "
        "number of cores, %(default)s; with --ray, its CPUs); wall times "
        "are only comparable with --jobs 1",
    )
    p.add_argument(
        "--ray",
        action="store_true",
        help="run the experiments as tasks on a local Ray started with "
        "--jobs CPUs, each still in its own process "
        "(pip install 'placewise[ray]')",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="run the experiments on the Ray cluster at ADDR (HOST:PORT, "
        "ray://HOST:PORT, or auto inside a RayJob)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="CP-SAT search workers per cpsat run, also under --jobs "
        "(default: the number of cores, %(default)s, as placewise "
        "solve uses)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SEC",
        help="give up on one run after SEC seconds "
        f"(default: {QUICK_TIMEOUT:.0f} quick, {FULL_TIMEOUT:.0f} full)",
    )
    p.add_argument(
        "--simulate",
        action="store_true",
        help="also replay arrivals and durations through repeated "
        "solves (kueue vs cpsat)",
    )
    p.add_argument(
        "--trace",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="replay the Alibaba GPU trace with the FGD protocol (default: on; "
        "skipped with one line when its data is not there)",
    )
    p.add_argument(
        "--trace-data",
        metavar="DIR",
        help="the folder holding data/alibaba-gpu-v2023 for the trace "
        "(default: ../shared beside the checkout)",
    )
    p.add_argument(
        "--out",
        default="bench-out",
        metavar="DIR",
        help="report directory (default: %(default)s)",
    )
    p.set_defaults(run=run)


def _seeds(text: str | None, quick: bool) -> list[int]:
    if text is None:
        return [1] if quick else [1, 2, 3]
    parts = [x.strip() for x in text.split(",") if x.strip()]
    if len(parts) == 1 and "," not in text:
        n = int(parts[0])
        if n < 1:
            raise ValueError("--seeds N needs N >= 1")
        return list(range(1, n + 1))
    return [int(x) for x in parts]


def _csv(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def run(args: argparse.Namespace) -> int:
    # The harness (matplotlib, the solvers) loads only when bench runs.
    from placewise.benchmarks.harness.report import ReportInputs, write_report
    from placewise.benchmarks.harness.runner import WORKER_PRELOAD, RunResult
    from placewise.benchmarks.harness.simulate import SimulationReport, sim_jobs
    from placewise.benchmarks.harness.trace import TraceJob, TraceResult
    from placewise.benchmarks.sweep.executors import ExecutorError, make_executor

    console = Console(stderr=True)
    try:
        seeds = _seeds(args.seeds, args.quick)
        families = _csv(args.families) or list(
            matrix.QUICK_FAMILIES if args.quick else matrix.FULL_FAMILIES
        )
        solvers = _csv(args.solvers)
        if args.jobs < 1:
            raise ValueError("--jobs must be at least 1")
        timeout = args.timeout or (QUICK_TIMEOUT if args.quick else FULL_TIMEOUT)
        workers = args.workers
        if workers < 1:
            raise ValueError("--workers must be at least 1")
        one_seed = frozenset() if args.seeds else matrix.ONE_SEED_FAMILIES
        tasks: list[Work] = list(
            matrix.build_tasks(
                families,
                solvers,
                seeds,
                args.time_limit,
                workers,
                timeout,
                one_seed=one_seed,
            )
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    skipped: TraceResult | None = None
    if args.trace:
        job = TraceJob(
            str(Path(args.out) / "trace"),
            args.quick,
            jobs=args.jobs,
            shared=args.trace_data,
        )
        why = job.missing_data()
        if why is None:
            tasks.insert(0, job)
        else:
            console.print(f"trace skipped: {why}")
            skipped = job.skipped(why)
    if args.simulate:
        tasks[0 if skipped is not None or not args.trace else 1 : 0] = sim_jobs(
            quick=args.quick, time_limit=min(args.time_limit, 2.0), workers=workers
        )
    # The sweep's executors: this process (--jobs 1), a local pool or Ray;
    # whichever, each experiment runs in a fresh process of its own.
    executor = make_executor(args.ray, args.ray_address, args.jobs, WORKER_PRELOAD)
    try:
        executor.start()
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    try:
        results = _run_with_progress(console, tasks, args.jobs, executor)
    finally:
        executor.close()
    seconds = time.perf_counter() - start
    settings: dict[str, Any] = {
        "cpsat time limit": f"{args.time_limit:g} s",
        "jobs": args.jobs,
        "cpsat workers per run": workers,
        "cores": os.cpu_count() or 1,
        "code": _revision(),
    }
    if executor.name == "ray":
        settings["executor"] = f"ray ({args.ray_address or 'local'})"
    runs = [r for r in results if isinstance(r, RunResult)]
    trace = next((r for r in results if isinstance(r, TraceResult)), skipped)
    sims = [r for r in results if not isinstance(r, RunResult | TraceResult)]
    inputs = ReportInputs(
        results=runs,
        command=_command(args),
        seconds=seconds,
        settings=settings,
        trace=trace,
        simulation=SimulationReport.of(sims) if sims else None,
    )
    written = write_report(Path(args.out), inputs)
    console.print(
        f"wrote {written['markdown']} ({outcome(runs, trace)}) in {seconds:.0f} s"
    )
    return 0


def outcome(runs: list[Any], trace: Any) -> str:
    """The closing line's count: a failed trace replay is a failure too, a
    skipped one is said to be skipped (never folded into "0 failed")."""
    text = f"{len(runs)} runs, {sum(not r.ok for r in runs)} failed"
    if trace is None:
        return text
    if not trace.available:
        return text + "; trace skipped"
    return text + ("; trace ok" if trace.ok else "; the trace replay FAILED")


def _revision() -> str:
    """The checkout's commit (``-dirty`` with local changes), for the record."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _command(args: argparse.Namespace) -> str:
    parts = ["placewise", "bench"]
    if args.quick:
        parts.append("--quick")
    for flag, value in (
        ("--families", args.families),
        ("--solvers", args.solvers),
        ("--seeds", args.seeds),
        ("--out", args.out),
    ):
        if value:
            parts += [flag, str(value)]
    parts += [
        "--time-limit",
        f"{args.time_limit:g}",
        "--jobs",
        str(args.jobs),
        "--workers",
        str(args.workers),
    ]
    if args.ray_address:
        parts += ["--ray-address", args.ray_address]
    elif args.ray:
        parts.append("--ray")
    if args.simulate:
        parts.append("--simulate")
    if not args.trace:
        parts.append("--no-trace")
    elif args.trace_data:
        parts += ["--trace-data", args.trace_data]
    return " ".join(shlex.quote(p) for p in parts)


def _run_with_progress(
    console: Console, tasks: list[Work], jobs: int, executor: Executor
) -> list[Any]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from placewise.benchmarks.harness.matrix import Task
    from placewise.benchmarks.harness.runner import run_tasks

    columns = (
        TextColumn("[bold]bench"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, console=console, transient=False) as progress:
        bar = progress.add_task("starting", total=len(tasks))

        def done(work: Work, result: Any) -> None:
            if isinstance(work, Task):
                label = f"{work.instance.label} seed {work.instance.seed} {work.solver}"
            else:
                label = work.label
            ok = getattr(result, "ok", True)
            state = "ok" if ok else "FAILED"
            progress.update(bar, advance=1, description=f"{label} {state}")
            if not ok:
                why = getattr(result, "error", "")
                console.print(f"[red]failed[/red] {label}: {why}")
            elif not console.is_terminal:  # a log file: one line per run
                n = int(progress.tasks[0].completed)
                console.print(f"[{n}/{len(tasks)}] {label} ok")

        return run_tasks(tasks, jobs, done, executor)
