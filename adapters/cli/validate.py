"""``placewise validate INSTANCE... --plan PLAN``: is a plan feasible?

Exit 0 when it is, 1 listing every violation (one ``rule: workload:
message`` line each, so scripts can grep rule ids), 2 when the instance or
the plan cannot be read (formats.md §2).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from placewise.adapters.cli import multicluster
from placewise.adapters.cli.common import (
    Subparsers,
    load,
    non_negative_int,
    policy_error,
    with_moves,
)
from placewise.adapters.io.documents import load_one
from placewise.models.moves import MoveRules
from placewise.models.plan import Plan, plan_from_dict
from placewise.models.snapshot import Snapshot
from placewise.models.validate import Violation, validate
from placewise.solver.policy import Policy


def register(subparsers: Subparsers) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="check a plan against instances (exit 1 listing every violation)",
        description=(
            "Check that PLAN is feasible for the instance: bookkeeping, pod sets, "
            "flavor eligibility, hierarchical quota, topology, node capacity and "
            "preemption policy. Exit 0 if feasible, 1 listing every violation, "
            "2 for unreadable input."
        ),
    )
    p.add_argument(
        "instances",
        nargs="+",
        metavar="INSTANCE",
        help="instance YAML/JSON files (merged into one snapshot)",
    )
    p.add_argument(
        "--plan",
        required=True,
        metavar="PLAN",
        help="the plan to check (YAML or JSON; - for stdin)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="report format (default: text)",
    )
    p.add_argument(
        "--policy",
        metavar="FILE",
        help="the policy the plan was made under: its move budget and "
        "movability rules are checked too",
    )
    p.add_argument(
        "--moves",
        type=non_negative_int,
        default=None,
        metavar="K",
        help="the move budget the plan was made under (as on solve)",
    )
    multicluster.add_option(p)
    p.set_defaults(run=run)


def read_plan(path: str) -> Plan:
    """Parse a plan file; every problem becomes an InstanceError (exit 2)."""
    return plan_from_dict(load_one(path, "Plan"), path)


def run(args: argparse.Namespace) -> int:
    if args.cluster:
        plan = read_plan(args.plan)
        violations, where = multicluster.check(args, plan)
    else:
        snap = load(args.instances)
        plan = read_plan(args.plan)
        violations, where = validate(snap, plan, _move_rules(args, snap)), ""
    if args.format == "json":
        print(json.dumps(_report(plan, violations), indent=2))
    elif violations:
        for v in violations:
            print(v)
        print(f"plan is infeasible: {len(violations)} violation(s)", file=sys.stderr)
    else:
        print(
            f"plan is feasible{where}: {len(plan.admissions)} admission(s), "
            f"{len(plan.preemptions)} preemption(s), {len(plan.pending)} pending"
        )
    return 1 if violations else 0


def _move_rules(args: argparse.Namespace, snap: Snapshot) -> MoveRules | None:
    """The move policy to hold the plan to; None when neither flag is given
    (moves are then checked for the opt-in label only, not a budget)."""
    if args.policy is None and args.moves is None:
        return None
    policy = Policy()
    if args.policy:
        try:
            policy = Policy.from_mapping(load_one(args.policy, "Policy"))
        except ValueError as exc:
            raise policy_error(args.policy, exc) from None
    return with_moves(policy, args.moves, snap, args.policy).move_rules


def _report(plan: Plan, violations: list[Violation]) -> dict[str, Any]:
    return {
        "feasible": not violations,
        "admissions": len(plan.admissions),
        "preemptions": len(plan.preemptions),
        "pending": len(plan.pending),
        "violations": [
            {"rule": v.rule, "workload": v.workload, "message": v.message}
            for v in violations
        ],
    }
