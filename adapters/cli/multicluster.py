"""``solve``/``validate`` with ``--cluster NAME=FILE[,FILE...]`` (formats.md §3).

The positional files are the MultiKueue manager, each ``--cluster`` one
worker.  ``solve`` solves the combined snapshot and prints the plan in the
workers' own names with ``cluster:`` on every admission and preemption;
``validate`` checks a plan per worker and across workers.
"""

from __future__ import annotations

import argparse
import logging

from placewise.adapters.cli.common import solve_each
from placewise.adapters.cli.status import status
from placewise.adapters.io import output
from placewise.adapters.io.documents import load_one
from placewise.adapters.multicluster import (
    ClusterCosts,
    Federation,
    load_federation,
    parse_workers,
    user_plan,
    validate_clusters,
)
from placewise.adapters.multicluster.load import split_policy
from placewise.models.errors import InstanceError, Location, Problem
from placewise.models.plan import Plan
from placewise.models.validate import Violation
from placewise.solver.policy import Policy

log = logging.getLogger("placewise")
UNSUPPORTED = ("kube-default", "binpack-gang")
"""Single-cluster baselines: they know nothing of dispatch."""
CLUSTER_HELP = (
    "a MultiKueue worker cluster: its name (as its MultiKueueCluster) and its "
    "dump's files; repeat for each worker; the positional files are then the "
    "manager cluster (formats.md §3)"
)


def add_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cluster",
        action="append",
        metavar="NAME=FILE[,FILE...]",
        help=CLUSTER_HELP,
    )


def load(args: argparse.Namespace, costs: ClusterCosts | None = None) -> Federation:
    workers = parse_workers(args.cluster)
    with status(f"loading the manager and {len(workers)} worker(s)"):
        fed = load_federation(args.instances, workers, costs)
    for w in fed.warnings:
        log.warning("%s", w)
    return fed


def run_solve(args: argparse.Namespace) -> int:
    bad = [s for s in (args.solver, args.compare) if s in UNSUPPORTED]
    if bad:
        raise InstanceError(
            [
                Problem(
                    Location(field="--solver"),
                    f"{bad[0]} is a single-cluster baseline; with --cluster choose "
                    "auto, cpsat, greedy or multikueue-allatonce/incremental",
                )
            ]
        )
    policy, costs = Policy(), ClusterCosts()
    if args.policy:
        raw, costs = split_policy(load_one(args.policy, "Policy"), args.policy)
        try:
            policy = Policy.from_mapping(raw)
        except ValueError as exc:
            where = Location(file=args.policy, kind="Policy")
            raise InstanceError([Problem(where, str(exc))]) from None
    fed = load(args, costs)
    unknown = sorted(set(costs.per_gpu) - set(fed.workers))
    if unknown:
        log.warning("%s: clusterCosts names unknown clusters %s", args.policy, unknown)
    # Kueue's greedy over several clusters is MultiKueue's race.
    plans = solve_each(
        fed.snapshot,
        args,
        policy,
        lambda name: "multikueue-allatonce" if name == "greedy" else name,
    )
    fmt = args.format or ("table" if args.compare else "yaml")
    if fmt == "table":
        # People read the combined names: ``east.team-a/job`` says where.
        if args.compare:
            output.emit(output.render_many(plans, fmt, fed.snapshot), args.output)
        else:
            output.write(plans[0], fmt, args.output, snapshot=fed.snapshot)
        return 0
    shown = [user_plan(fed.snapshot, p) for p in plans]
    if args.compare:
        output.emit(output.render_many(shown, fmt, fed.snapshot), args.output)
    else:
        output.write(shown[0], fmt, args.output)
    return 0


def check(args: argparse.Namespace, plan: Plan) -> tuple[list[Violation], str]:
    """The violations of ``plan`` per worker and across them, and where it
    was checked (for the report)."""
    fed = load(args)
    return validate_clusters(fed, plan), f" in {len(fed.workers)} cluster(s)"
