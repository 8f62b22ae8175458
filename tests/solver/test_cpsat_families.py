"""CP-SAT on generated multi-team clusters, where Kueue's own plan is often
not a plan of the model (a victim whose preemptor then lost the freed
capacity to another workload).  The optimizer must then search from a
relaxed hint and may return only what the strict model accepts, or the
greedy plan: never the hint itself, whose victim attribution can break
the preemption rules (a bug this file pins: seed 5 once named a preemptor
that shares no flavor with its victim)."""

from __future__ import annotations

import logging

import pytest

from benchmarks.harness.matrix import Instance, generate_snapshot
from models.validate import validate
from solver.cpsat import CpSatParams, solve_cpsat
from solver.greedy import solve_greedy
from tests.solver.exhaustive import demand_vector


@pytest.mark.parametrize(("seed", "budget"), [(3, 0.05), (5, 0.05), (5, 1.0)])
def test_multi_team_plan_is_valid_and_not_worse_than_greedy(
    seed: int, budget: float
) -> None:
    snap = generate_snapshot(Instance("multi-team", seed))
    logging.disable(logging.WARNING)
    try:
        plan = solve_cpsat(
            snap,
            CpSatParams(time_limit=60, workers=1, seed=0, deterministic_time=budget),
        )
    finally:
        logging.disable(logging.NOTSET)
    greedy = solve_greedy(snap)
    assert validate(snap, greedy) == []
    violations = validate(snap, plan)
    assert violations == [], [v.message for v in violations][:5]
    assert demand_vector(snap, plan) >= demand_vector(snap, greedy)
    if plan.solver.status == "FALLBACK":
        assert plan.admissions == greedy.admissions
