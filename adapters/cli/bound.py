"""``placewise bound INSTANCE...``: a proven ceiling on accelerators after any plan.

Benchmarks divide by this number to report an optimality gap, so the command
prints the bound together with how it was obtained (the LP relaxation or the
cheaper capacity/quota ceiling) and the accelerators already running, which
together say how much room the pending work has.  Exit 0 whenever a bound is
printed; unreadable instances exit 2 (formats.md §2).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from placewise.adapters.cli.common import Subparsers, load
from placewise.adapters.cli.status import status
from placewise.models.snapshot import Snapshot
from placewise.solver.bound import ACCELERATORS, BoundResult, lp_bound
from placewise.solver.metrics import busy_gpus, capacity_gpus, plain_gpus


def register(subparsers: Subparsers) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "bound",
        help="upper bound on accelerators running after any feasible plan",
        description=(
            "Print an upper bound on the accelerator units (GPUs) running after "
            "any feasible plan for the instance: the configuration LP of the "
            "optimizer's model (host classes and packing patterns, quota tree, "
            "preemption), or with --mip-seconds a time-limited MIP, and the "
            "cheaper capacity/quota ceiling, which is printed too."
        ),
    )
    p.add_argument(
        "instances",
        nargs="+",
        metavar="INSTANCE",
        help="instance YAML/JSON files (merged into one snapshot)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="output format (default: %(default)s)",
    )
    p.add_argument(
        "--lp-solver",
        choices=("highs", "cbc"),
        default="highs",
        help="LP solver: HiGHS (highspy) or CBC (pulp) (default: %(default)s)",
    )
    p.add_argument(
        "--mip-seconds",
        type=float,
        default=0.0,
        metavar="SEC",
        help="also branch (HiGHS MIP) for up to SEC seconds: a tighter bound "
        "(default: %(default)s, the LP alone)",
    )
    p.add_argument(
        "--accelerators",
        metavar="R[,R...]",
        default=",".join(ACCELERATORS),
        help="resources counted as accelerator units (default: %(default)s)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    snap = load(args.instances)
    accelerators = tuple(r.strip() for r in args.accelerators.split(",") if r.strip())
    with status("bounding (the LP relaxation)"):
        result = lp_bound(snap, args.lp_solver, accelerators, args.mip_seconds)
    if args.format == "json":
        print(json.dumps(_report(result, accelerators, snap), indent=2))
    else:
        print(_text(result, accelerators, snap))
    return 0


def _number(x: float | None) -> float | int | None:
    if x is None:
        return None
    if x == float("inf"):
        return None
    return int(x) if float(x).is_integer() else x


def _report(
    result: BoundResult, accelerators: tuple[str, ...], snap: Snapshot
) -> dict[str, Any]:
    return {
        "busy": _busy(result, accelerators, snap),
        "accelerators": list(accelerators),
        "bound": _number(result.value),
        "method": result.method,
        "lp": _number(result.lp),
        "lpStatus": result.status,
        "capacity": _number(result.aggregate),
        "running": _number(result.running),
        "columns": result.columns,
        "rows": result.rows,
        "seconds": round(result.seconds, 3),
    }


def _busy(
    result: BoundResult, accelerators: tuple[str, ...], snap: Snapshot
) -> dict[str, int | None]:
    """GPUs busy (solver/metrics.py's one total): in Workloads plus in pods
    outside any Workload, now and at most after any plan, of the capacity."""
    bound = _number(result.value)
    return {
        "capacity": capacity_gpus(snap, accelerators),
        "outsideWorkloads": plain_gpus(snap, accelerators),
        "now": busy_gpus(snap, result.running, accelerators),
        "bound": None if bound is None else busy_gpus(snap, bound, accelerators),
    }


def _text(result: BoundResult, accelerators: tuple[str, ...], snap: Snapshot) -> str:
    def show(x: float | None) -> str:
        n = _number(x)
        return "unbounded" if n is None else str(n)

    busy = _busy(result, accelerators, snap)
    cap = busy["capacity"]
    most = "unbounded" if busy["bound"] is None else f"{busy['bound']}/{cap}"
    lp = show(result.lp) if result.lp is not None else f"none ({result.status})"
    return "\n".join(
        [
            f"GPUs busy after any plan ({', '.join(accelerators)}): at most "
            f"{most} ({result.method}, {result.seconds:.2f}s)",
            f"  busy now:                   {busy['now']}/{cap}",
            f"  in pods outside Workloads:  {busy['outsideWorkloads']} "
            "(the same in every plan; left out below)",
            f"  in Workloads, at most:      {show(result.value)}",
            f"  LP relaxation:              {lp}",
            f"  capacity/quota ceiling:     {show(result.aggregate)}",
            f"  in Workloads now:           {show(result.running)}",
        ]
    )
