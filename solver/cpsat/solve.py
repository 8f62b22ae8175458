"""Entry point: greedy warm start, compile, solve, never worse than greedy."""

from __future__ import annotations

import time

from models.plan import Plan
from models.snapshot import Snapshot
from solver.cpsat.data import admitted_info, compile_data
from solver.cpsat.model import CPModel, CpSatParams
from solver.greedy.solver import outcome_to_plan, run_greedy


def solve_cpsat(snapshot: Snapshot, params: CpSatParams | None = None) -> Plan:
    params = params or CpSatParams()
    start = time.perf_counter()
    outcome = run_greedy(snapshot)
    greedy = outcome_to_plan(snapshot, outcome, "greedy", time.perf_counter() - start)
    data = compile_data(snapshot)
    admitted = {a.workload: a for a in greedy.admissions}
    keep = [admitted[k] for k in sorted(data.unsupported) if k in admitted]
    if keep:
        # Workloads the model cannot express keep the greedy's decision.
        data = compile_data(
            snapshot, fixed={a.workload: admitted_info(snapshot, a) for a in keep}
        )
        data.fixed_admissions = keep
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
    reasons = dict(outcome.reasons)
    for a in greedy.admissions:
        reasons[a.workload] = (
            "Kueue's greedy order would admit it, but the optimizer's plan keeps "
            "more priority-weighted demand running without it"
        )
    plan, _ = model.solve(greedy, reasons)
    wall = time.perf_counter() - start
    return plan.model_copy(
        update={"solver": plan.solver.model_copy(update={"wall_seconds": wall})}
    )
