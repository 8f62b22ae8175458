"""Solving the objective's stages in order, and what they proved.

Each stage maximises its criterion with the earlier stages held at the
values found; the incumbent hints every stage, so none can end below it.
A stage is skipped when the incumbent already reaches its ceiling, and
CP-SAT ends one as soon as its bound meets the incumbent (OPTIMAL).  Time
is shared by weight (priority tiers 3, tie-breaks 1) over the stages left,
so a stage that finishes early hands its time to the next.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placewise.solver.cpsat.model import CPModel
from placewise.solver.cpsat.objective import Stage

log = logging.getLogger("placewise.cpsat")

TIER_WEIGHT = 3
"""Time weight of a GPU stage against a tie-break stage."""


@dataclass(slots=True)
class StageResult:
    stage: Stage
    status: str
    """OPTIMAL, FEASIBLE, SKIPPED (incumbent at the ceiling) or NO_SOLUTION."""
    value: int | None
    bound: int | None
    seconds: float


Progress = Callable[[str], None]


def solver_for(model: CPModel, budget: float, det: float | None) -> cp_model.CpSolver:
    params = model.params
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = max(budget, 0.05)
    if det is not None:
        p.max_deterministic_time = det
        # The same plan for any number of workers: the subsolvers run
        # interleaved in a fixed order instead of racing.
        p.interleave_search = True
        p.num_workers = 8
    elif params.workers:
        p.num_workers = params.workers
    p.random_seed = params.seed
    p.cp_model_probing_level = 0
    p.max_presolve_iterations = 1
    p.log_search_progress = False
    return solver


def run_stages(
    model: CPModel,
    values: dict[int, int] | None,
    deadline: float,
    progress: Progress | None = None,
) -> tuple[dict[int, int] | None, list[StageResult]]:
    """Solve every stage; returns the final values and per-stage results."""
    results: list[StageResult] = []
    stages = model.stages
    weights = [TIER_WEIGHT if s.gpus else 1 for s in stages]
    det_total = model.params.deterministic_time
    for k, stage in enumerate(stages):
        began = time.perf_counter()
        expr = sum(c * x for c, x in stage.terms)
        if values is not None and stage.value(values) >= stage.hi:
            results.append(StageResult(stage, "SKIPPED", stage.hi, stage.hi, 0.0))
            model.model.add(expr >= stage.hi)
            continue
        remaining = deadline - began
        share = remaining * weights[k] / sum(weights[k:])
        det = det_total * weights[k] / sum(weights) if det_total else None
        if share < 0.05 and det is None:
            if values is None:
                results.append(StageResult(stage, "NO_SOLUTION", None, None, 0.0))
                break
            best = stage.value(values)
            results.append(StageResult(stage, "FEASIBLE", best, None, 0.0))
            model.model.add(expr >= best)
            continue
        model.model.maximize(expr)
        model.model.clear_hints()  # type: ignore[no-untyped-call]
        if values is not None:
            for i, val in values.items():
                model.model.add_hint(model.model.get_int_var_from_proto_index(i), val)
        solver = solver_for(model, share, det)
        status = solver.solve(model.model)
        seconds = time.perf_counter() - began
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            values = {
                i: solver.value(model.model.get_int_var_from_proto_index(i))
                for i in range(model.size)
            }
            best = stage.value(values)
            bound = (
                best
                if status == cp_model.OPTIMAL
                else int(solver.best_objective_bound + 1e-6)
            )
            kind = "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE"
            results.append(StageResult(stage, kind, best, max(bound, best), seconds))
        elif values is not None:
            best = stage.value(values)
            results.append(StageResult(stage, "FEASIBLE", best, None, seconds))
        else:
            results.append(StageResult(stage, "NO_SOLUTION", None, None, seconds))
            break
        if progress is not None:
            r = results[-1]
            progress(
                f"{stage.name}: {r.status} {r.value} (bound {r.bound}), {seconds:.1f}s"
            )
        model.model.add(expr >= best)
    return values, results
