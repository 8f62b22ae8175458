"""Entry point: greedy warm start, compile, solve, never worse than greedy."""

from __future__ import annotations

import logging
import time

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat.model import CPModel, CpSatParams
from placewise.solver.cpsat.plan_io import fallback
from placewise.solver.greedy.solver import outcome_to_plan, run_greedy
from placewise.solver.problem.data import ModelData, admitted_info, compile_problem

log = logging.getLogger("placewise.cpsat")


def _compile(snapshot: Snapshot, greedy: Plan) -> ModelData:
    admitted = {a.workload: a for a in greedy.admissions}
    data = compile_problem(snapshot)
    keep = [admitted[k] for k in sorted(data.unsupported) if k in admitted]
    if keep:
        # Workloads the model cannot express keep the greedy's decision.
        data = compile_problem(
            snapshot, fixed={a.workload: admitted_info(snapshot, a) for a in keep}
        )
        data.fixed_admissions = keep
    return data


MIN_BUDGET = 0.5
"""Seconds below which CP-SAT is not started (the greedy plan is returned)."""


def _fallback(greedy: Plan, start: float, why: str) -> Plan:
    log.warning("cpsat: %s; returning the greedy plan", why)
    return fallback(greedy, time.perf_counter() - start)


def solve_cpsat(snapshot: Snapshot, params: CpSatParams | None = None) -> Plan:
    params = params or CpSatParams()
    start = time.perf_counter()
    outcome = run_greedy(snapshot)
    greedy = outcome_to_plan(snapshot, outcome, "greedy", time.perf_counter() - start)
    if params.time_limit - (time.perf_counter() - start) < MIN_BUDGET:
        return _fallback(greedy, start, "the greedy warm start used the time limit")
    data = _compile(snapshot, greedy)
    budget = params.time_limit - (time.perf_counter() - start)
    if budget < MIN_BUDGET:
        return _fallback(greedy, start, "compiling the model used the time limit")
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
    # Building the model counts against the limit: solve to the deadline.
    # In residual mode the residual solve gets a third of what is left; the
    # block-by-block search, which can move admitted work, gets the rest.
    # CP-SAT overshoots each stage's limit slightly and the plan is read
    # back after the last one: keep a small margin so the limit holds.
    deadline = start + params.time_limit - min(0.5, 0.05 * params.time_limit)
    plan, _ = model.solve(greedy, reasons, deadline=deadline)
    wall = time.perf_counter() - start
    return plan.model_copy(
        update={"solver": plan.solver.model_copy(update={"wall_seconds": wall})}
    )
