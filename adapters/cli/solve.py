"""``placewise solve``: instance files in, a Plan out."""

from __future__ import annotations

import argparse
import logging

from placewise.adapters.cli import multicluster
from placewise.adapters.cli.common import (
    Subparsers,
    load,
    non_negative_int,
    positive_float,
    positive_int,
    read_policy,
    solve_each,
    timestamp,
    with_moves,
)
from placewise.adapters.io import output
from placewise.solver.solve import SOLVERS

log = logging.getLogger("placewise")


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "solve",
        help="decide admissions, flavors, placements and preemptions",
        description=(
            "Load Kubernetes/Kueue objects from INSTANCE files (YAML streams, "
            "kind: List, or JSON; several files merge) and print a Plan."
        ),
    )
    p.add_argument(
        "instances",
        nargs="+",
        metavar="INSTANCE",
        help="instance file(s); '-' reads standard input",
    )
    p.add_argument(
        "--solver",
        choices=SOLVERS,
        default="auto",
        help="cpsat = the joint optimizer (warm-started from greedy, never "
        "worse); greedy = what Kueue itself would decide; auto = cpsat "
        "with greedy as fallback; kube-default, binpack-gang and "
        "kai-consolidation (with --moves) are the "
        "benchmark baselines (default: %(default)s)",
    )
    p.add_argument(
        "--time-limit",
        type=positive_float,
        default=10.0,
        metavar="SEC",
        help="optimizer wall-clock budget (default: %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=0,
        metavar="N",
        help="optimizer search workers; 0 = all cores (default)",
    )
    p.add_argument("--seed", type=int, default=0, help="optimizer random seed")
    p.add_argument(
        "--deterministic-time",
        type=positive_float,
        default=None,
        metavar="UNITS",
        help="deterministic work budget: with fixed --seed and --workers "
        "the plan is reproducible run to run",
    )
    p.add_argument(
        "--policy",
        metavar="FILE",
        help="YAML objective policy (see README, 'Objective')",
    )
    p.add_argument(
        "--moves",
        type=non_negative_int,
        default=None,
        metavar="K",
        help="at most K moves: running workloads labelled "
        'placewise.io/movable: "true" (or movable by the policy) may be '
        "evicted and admitted again elsewhere to let blocked gangs in; "
        "overrides the policy's moves.budget.count (default: the policy's, "
        "else no moves)",
    )
    p.add_argument(
        "--now",
        type=timestamp,
        default=None,
        metavar="TIMESTAMP",
        help="the present, RFC 3339 (e.g. 2026-05-01T12:00:00Z): how long "
        "running work has run, for the price of preempting it (default: the "
        "newest timestamp in the instance)",
    )
    p.add_argument(
        "--cycles",
        type=positive_int,
        default=None,
        metavar="N",
        help="greedy: run N scheduling cycles instead of running to "
        "quiescence (victims preempted in a cycle are gone in the next)",
    )
    p.add_argument(
        "--compare",
        choices=SOLVERS,
        metavar="SOLVER",
        help="also solve with SOLVER (e.g. greedy, what Kueue would do) and "
        "print both plans: side by side with --format table (the default "
        "then), as two YAML documents or a JSON list otherwise",
    )
    p.add_argument(
        "--format",
        choices=output.FORMATS,
        default=None,
        help="output format (default: yaml; table with --compare)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the plan to FILE instead of standard output",
    )
    multicluster.add_option(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        if args.moves is not None:
            log.warning("--moves applies to one cluster; ignored with --cluster")
        return multicluster.run_solve(args)
    policy = read_policy(args.policy)
    snapshot = load(args.instances, args.now)
    policy = with_moves(policy, args.moves, snapshot, args.policy)
    plans = solve_each(snapshot, args, policy)
    if args.compare:
        text = output.render_many(plans, args.format or "table", snapshot)
        output.emit(text, args.output)
    else:
        output.write(plans[-1], args.format or "yaml", args.output, snapshot=snapshot)
    return 0
