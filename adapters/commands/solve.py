"""``placewise solve``: instance files in, a Plan out."""

from __future__ import annotations

import argparse
import logging

from adapters import output
from adapters.commands.common import load, spinner
from solver.solve import SOLVERS, SolveParams, solve

log = logging.getLogger("placewise")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "solve",
        help="decide admissions, flavors, placements and preemptions",
        description=(
            "Load Kubernetes/Kueue objects from INSTANCE files (YAML streams, "
            "kind: List, or JSON; several files merge) and print a Plan."
        ),
    )
    p.add_argument("instances", nargs="+", metavar="INSTANCE",
                   help="instance file(s); '-' reads standard input")
    p.add_argument("--solver", choices=SOLVERS, default=SOLVERS[0],
                   help="greedy = what Kueue itself would decide (default: %(default)s)")
    p.add_argument("--cycles", type=positive_int, default=None, metavar="N",
                   help="greedy: run N scheduling cycles instead of running to "
                        "quiescence (victims preempted in a cycle are gone in the next)")
    p.add_argument("--format", choices=output.FORMATS, default="yaml",
                   help="output format (default: %(default)s)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the plan to FILE instead of standard output")
    p.set_defaults(run=run)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    snapshot = load(args.instances)
    with spinner(f"solving with {args.solver}"):
        plan = solve(snapshot, SolveParams(solver=args.solver, cycles=args.cycles))
    log.info("%s: %d admitted, %d preempted, %d pending in %.3fs", plan.solver.name,
             len(plan.admissions), len(plan.preemptions), len(plan.pending),
             plan.solver.wall_seconds)
    output.write(plan, args.format, args.output)
    return 0
