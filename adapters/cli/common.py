"""Helpers shared by the subcommands: loading instances, warnings, number flags."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TypeAlias

from placewise.adapters.cli.status import status
from placewise.adapters.io.documents import load_one
from placewise.adapters.io.loader import load_snapshot
from placewise.models.errors import InstanceError, Location, Problem
from placewise.models.moves import MOVABLE_LABEL, misplaced_labels
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.move_policy import PolicyError, check_queues
from placewise.solver.policy import Policy
from placewise.solver.solve import SolveParams, solve

log = logging.getLogger("placewise")

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``register`` of every subcommand module receives."""


def load(paths: Sequence[str], now: datetime | None = None) -> Snapshot:
    """Load instances and log their warnings (raises InstanceError -> exit 2)."""
    with status(f"loading {len(paths)} file(s)"):
        snap = load_snapshot(paths, now)
    for w in snap.warnings:
        log.warning("%s", w)
    return snap


def timestamp(text: str) -> datetime:
    """``--now``: an RFC 3339 time (a zone-less one is UTC, as in the API)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is not an RFC 3339 timestamp"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def policy_error(path: str, exc: ValueError) -> InstanceError:
    """A bad policy value as a located input error (exit 2): the file, the
    Policy, and the field where the policy parser names one."""
    field = exc.field if isinstance(exc, PolicyError) else ""
    message = str(exc)
    if field and message.startswith(f"{field}: "):
        message = message[len(field) + 2 :]
    return InstanceError(
        [Problem(Location(file=path, kind="Policy", field=field), message)]
    )


def read_policy(path: str | None, moves: int | None = None) -> Policy:
    """``--policy FILE`` (exit 2 with the file and field when bad), with
    ``--moves K`` over its ``moves.budget.count`` when given."""
    policy = Policy()
    if path:
        raw = load_one(path, "Policy")  # the shared, bounded reader
        try:
            policy = Policy.from_mapping(raw)
        except ValueError as exc:
            raise policy_error(path, exc) from None
    return moves_count(policy, moves)


def moves_count(policy: Policy, moves: int | None) -> Policy:
    """``--moves K`` overrides the policy's ``moves.budget.count``."""
    if moves is None:
        return policy
    return replace(policy, moves=policy.moves.model_copy(update={"count": moves}))


def with_moves(
    policy: Policy, moves: int | None, snapshot: Snapshot, path: str | None
) -> Policy:
    """``--moves K`` over the policy's count; the move policy checked
    against the instance; movable labels on workloads that are not running
    said (labels are set at submission: a warning, not an error)."""
    policy = moves_count(policy, moves)
    try:
        check_queues(policy.moves, snapshot)
    except PolicyError as exc:
        raise policy_error(path or "--policy", exc) from None
    for key in misplaced_labels(snapshot):
        log.warning(
            "Workload %s: labelled %s but not running; only running workloads move",
            key,
            MOVABLE_LABEL,
        )
    return policy


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def solve_each(
    snapshot: Snapshot,
    args: argparse.Namespace,
    policy: Policy,
    rename: Callable[[str], str] = lambda name: name,
) -> list[Plan]:
    """``--compare``'s solver then ``--solver``'s (or the latter alone), each
    logged as it ends; ``rename`` maps a flag's name to the solver to run."""
    plans: list[Plan] = []
    for flag in [args.compare, args.solver] if args.compare else [args.solver]:
        name = rename(flag)
        with status(f"solving with {name}"):
            plan = solve(
                snapshot,
                SolveParams.of(args, solver=name, policy=policy),
            )
        log.info(
            "%s: %d admitted, %d preempted, %d pending in %.3fs",
            plan.solver.name,
            len(plan.admissions),
            len(plan.preemptions),
            len(plan.pending),
            plan.solver.wall_seconds,
        )
        plans.append(plan)
    return plans
