"""Moves on ``fragmented-running``: kueue, kai-consolidation, cpsat, cpsat+moves.

Not a test: ``python -m placewise.benchmarks.defrag_bench --seeds 1 2 3
--time-limit 10 --moves 16 [--lost-gpu-hours H] [--price P]`` prints one row per seed
and solver (issue 20's figures, recorded in benchmarks/README.md): GPUs
running after the plan per priority tier (highest first), gangs admitted,
moves, lost GPU-hours, wall seconds, and whether the validator accepts the
plan under the same budget.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

from placewise.adapters.generate import family, generate
from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.models.errors import InstanceError, Problem
from placewise.models.moves import MoveRules
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot, build_snapshot
from placewise.models.validate import validate
from placewise.solver.policy import Policy, tier_figures
from placewise.solver.solve import SolveParams, solve

FAMILY = "fragmented-running"
SOLVERS = (
    ("kueue", "greedy", False),
    ("kai-consolidation", "kai-consolidation", True),
    ("cpsat", "cpsat", False),
    ("cpsat+moves", "cpsat", True),
)


@dataclass(frozen=True, slots=True)
class Row:
    seed: int
    solver: str
    tiers: tuple[int, ...]
    gangs: int
    moves: int
    lost: float
    wall: float
    valid: bool


def instance(seed: int) -> Snapshot:
    """The family's instance, decoded as the loader would read its file."""
    objects = generate(family(FAMILY), seed)
    problems: list[Problem] = []
    decoded, warnings = decode_objects(
        [RawObject(o, f"<{FAMILY}:{seed}>", None) for o in objects], problems
    )
    if problems:
        raise InstanceError(problems)
    return build_snapshot(decoded, warnings)


def measure(
    snap: Snapshot, seed: int, name: str, solver: str, policy: Policy, limit: float
) -> Row:
    params = SolveParams(
        solver=solver, time_limit=limit, workers=1, seed=0, policy=policy
    )
    start = time.perf_counter()
    plan = solve(snap, params)
    wall = time.perf_counter() - start
    return Row(
        seed,
        name,
        tuple(f.gpus for f in tier_figures(snap, plan, policy)),
        gangs(snap, plan),
        len(plan.moves),
        round(sum(m.lost_gpu_hours for m in plan.moves), 1),
        wall,
        validate(snap, plan, policy.move_rules) == [],
    )


def gangs(snap: Snapshot, plan: Plan) -> int:
    """Pending workloads of several pods the plan admits."""
    pending = {w.key: w for w in snap.pending}
    return sum(
        1
        for a in plan.admissions
        if a.workload in pending
        and sum(ps.count for ps in pending[a.workload].pod_sets) > 1
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--moves", type=int, default=16)
    p.add_argument("--lost-gpu-hours", type=float, default=None)
    p.add_argument(
        "--price",
        type=float,
        default=None,
        help="the policy's moves.price (default: its preemption_price, 1); "
        "0: moves limited by the budget alone",
    )
    args = p.parse_args(argv)
    budget = MoveRules(
        count=args.moves, lost_gpu_hours=args.lost_gpu_hours, price=args.price
    )
    with_moves = Policy(moves=budget)
    print(
        "| seed | solver | GPUs per tier (high→low) | gangs | moves | lost GPU-h "
        "| wall s | valid |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for seed in args.seeds:
        snap = instance(seed)
        for name, solver, moves in SOLVERS:
            row = measure(
                snap,
                seed,
                name,
                solver,
                with_moves if moves else Policy(),
                args.time_limit,
            )
            print(
                f"| {row.seed} | {row.solver} | {' / '.join(map(str, row.tiers))} "
                f"| {row.gangs} | {row.moves} | {row.lost} | {row.wall:.1f} "
                f"| {'yes' if row.valid else 'NO'} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
