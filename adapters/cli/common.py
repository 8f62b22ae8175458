"""Helpers shared by the subcommands: loading instances, warnings, number flags."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TypeAlias

from placewise.adapters.cli.status import status
from placewise.adapters.io.loader import load_snapshot
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
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
