"""Entry point: greedy warm start, compile, solve, never worse than greedy."""

from __future__ import annotations

import time

from models.plan import Plan
from models.snapshot import Snapshot
from solver.cpsat.data import compile_data
from solver.cpsat.model import CPModel, CpSatParams
from solver.greedy.solver import outcome_to_plan, run_greedy


def solve_cpsat(snapshot: Snapshot, params: CpSatParams | None = None) -> Plan:
    params = params or CpSatParams()
    start = time.perf_counter()
    outcome = run_greedy(snapshot)
    greedy = outcome_to_plan(snapshot, outcome, "greedy", time.perf_counter() - start)
    data = compile_data(snapshot)
    budget = max(params.time_limit - (time.perf_counter() - start), 0.1)
    model = CPModel(
        data,
        CpSatParams(
            time_limit=budget,
            workers=params.workers,
            seed=params.seed,
            deterministic_time=params.deterministic_time,
            policy=params.policy,
        ),
    )
    plan, _ = model.solve(greedy, outcome.reasons)
    wall = time.perf_counter() - start
    return plan.model_copy(
        update={"solver": plan.solver.model_copy(update={"wall_seconds": wall})}
    )
