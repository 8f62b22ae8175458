"""``placewise sweep SPEC.yaml``: capacity planning and what-if sweeps.

A spec names a base cluster, a job source and axes of variants (hosts added
or removed, a queue's quota, fair-sharing weights, policy keys, load,
seeds, solvers); every combination is one replay (or one solve), run in a
local process pool or on Ray, cached per point in ``-o DIR`` so that a
rerun resumes.  Exit 0 when every point ran, 1 when one failed (a solver
error, an invalid plan), 2 for a bad spec or an executor that cannot start
— always before any point runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from placewise.adapters.cli.common import Subparsers


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="capacity planning: replay variants of a cluster, locally or on Ray",
        description=(
            "Run every variant of a spec's axes (hosts added or removed, quota, "
            "fair-sharing weights, policy keys, load, seeds, solvers) through a "
            "replay or a solve; write a table (CSV, Markdown), plots of each "
            "metric against each axis with the spread over seeds, and the "
            "answer to the spec's target. Points are cached in -o DIR: a "
            "rerun computes only the missing ones."
        ),
    )
    p.add_argument("spec", metavar="SPEC.yaml", help="the sweep spec (see README)")
    p.add_argument(
        "--ray",
        action="store_true",
        help="run points on a local Ray started with --jobs CPUs "
        "(pip install 'placewise[ray]')",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="run points on the Ray cluster at ADDR (HOST:PORT, ray://HOST:PORT, "
        "or auto inside a RayJob)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="points at a time (local pool, or --ray's CPUs; default: all cores)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="results and the per-point cache (default: sweep-<spec name>)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from placewise.benchmarks.sweep.check import check
    from placewise.benchmarks.sweep.executors import ExecutorError, make_executor
    from placewise.benchmarks.sweep.report import write_outputs
    from placewise.benchmarks.sweep.run import run_sweep
    from placewise.benchmarks.sweep.spec import SpecError, load_spec, resolve

    err = Console(stderr=True)
    if args.jobs < 1:
        print("error: --jobs must be >= 1", file=sys.stderr)
        return 2
    try:
        checked = check(resolve(load_spec(args.spec), args.spec), args.spec)
    except SpecError as exc:
        for line in exc.problems:
            print(f"error: {line}", file=sys.stderr)
        return 2
    out = Path(args.output or f"sweep-{Path(args.spec).stem}")
    executor = make_executor(args.ray, args.ray_address, args.jobs)
    try:
        with _Progress(err) as tick:
            outcome = run_sweep(checked, out, executor, tick)
    except ExecutorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            f"interrupted: the points done are cached in {out}/points; "
            "rerun the same command to resume",
            file=sys.stderr,
        )
        return 130
    err.print(
        f"{len(checked.points)} points: {len(outcome.computed)} computed "
        f"({executor.name}), {len(outcome.cached)} cached, "
        f"{len(outcome.failed)} failed"
    )
    for key in outcome.failed:
        rec = outcome.records[key]
        where = ", ".join(f"{k}={v}" for k, v in rec["point"]["coords"])
        err.print(f"[red]FAILED[/red] {where}: {rec.get('error')}")
    paths, target = write_outputs(out, checked, outcome.records)
    sys.stdout.write((out / "sweep.md").read_text(encoding="utf-8"))
    for path in paths:
        err.print(f"wrote {path}")
    if target is not None:
        print(f"\ntarget: {target.text}")
    return 1 if outcome.failed else 0


class _Progress:
    """A progress bar on a terminal only; elsewhere a no-op callback."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._bar: object | None = None

    def __enter__(self) -> Callable[[int, int], None] | None:
        if not self.console.is_terminal:
            return None
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        bar = Progress(
            TextColumn("[bold]sweep"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        bar.start()
        task = bar.add_task("", total=None)
        self._bar = bar

        def tick(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return tick

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()  # type: ignore[attr-defined]
