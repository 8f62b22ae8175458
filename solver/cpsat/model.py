"""CPModel: builds the triad, warm-starts from greedy, solves the stages.

The greedy plan is translated into a complete assignment of the model
(decisions fixed, auxiliaries solved for), which serves as the solution
hint and as the floor: the returned plan is never worse than greedy under
the objective, and when CP-SAT finds nothing at least as good the greedy
plan comes back with status FALLBACK.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.models.plan import Plan
from placewise.solver.cpsat.constraints import Constraints
from placewise.solver.cpsat.objective import Objective, Policy, Terms, primary_vector
from placewise.solver.cpsat.plan_io import (
    decisions_from_plan,
    fallback,
    plan_from_values,
)
from placewise.solver.cpsat.variables import Variables
from placewise.solver.problem.data import ModelData

log = logging.getLogger("placewise.cpsat")


@dataclass(frozen=True, slots=True)
class CpSatParams:
    time_limit: float = 10.0
    """Wall-clock budget for all stages together (seconds)."""
    workers: int = 0
    """Search workers; 0 lets CP-SAT use every core."""
    seed: int = 0
    deterministic_time: float | None = None
    """CP-SAT's max_deterministic_time; with fixed workers and seed the
    result is reproducible run to run."""
    policy: Policy = field(default_factory=Policy)


@dataclass(slots=True)
class StageResult:
    status: str
    objective: float | None
    bound: float | None


class CPModel:
    def __init__(
        self,
        data: ModelData,
        params: CpSatParams,
        unattributed: frozenset[str] = frozenset(),
    ) -> None:
        self.data = data
        self.params = params
        self.model = cp_model.CpModel()
        self.vars = Variables(self.model, data)
        self.cons = Constraints(self.model, data, self.vars, unattributed)
        self.cons.add_constraints()
        self.objective = Objective(
            self.model, data, self.vars, self.cons, params.policy
        )
        self.stages = self.objective.build()

    # -- solving -------------------------------------------------------------------

    def _solver(self, budget: float, det: float | None) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        p = solver.parameters
        p.max_time_in_seconds = max(budget, 0.05)
        if det is not None:
            p.max_deterministic_time = det
        if self.params.workers:
            p.num_workers = self.params.workers
        p.random_seed = self.params.seed
        p.symmetry_level = 0
        p.cp_model_probing_level = 0
        p.max_presolve_iterations = 1
        p.log_search_progress = False
        return solver

    def complete(self, plan: Plan, budget: float = 5.0) -> dict[int, int] | None:
        """Values of every variable for a plan's decisions (None: not representable)."""
        fixed = decisions_from_plan(self.data, self.vars, self.cons.placement, plan)
        if fixed is None:
            return None
        probe = self.model.clone()
        for var_index, value in fixed.items():
            v = probe.get_int_var_from_proto_index(var_index)
            probe.add(v == value)
        if self.stages:
            probe.maximize(
                sum(
                    c * probe.get_int_var_from_proto_index(x.index)
                    for c, x in Objective.weighted(self.stages[0])
                )
            )
        solver = self._solver(budget, None)
        solver.parameters.num_workers = 1
        status = solver.solve(probe)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        return {
            i: solver.value(probe.get_int_var_from_proto_index(i))
            for i in range(len(probe.proto.variables))
        }

    def stage_values(self, values: dict[int, int]) -> list[int]:
        return [
            sum(c * values[x.index] for c, x in Objective.weighted(stage))
            for stage in self.stages
        ]

    def solve(
        self, greedy: Plan, reasons: dict[str, str], deadline: float | None = None
    ) -> tuple[Plan, list[int]]:
        """Solve the stages; ``deadline`` (perf_counter time) overrides the
        time limit so that time spent building the model counts too."""
        start = time.perf_counter()
        limit = (
            self.params.time_limit if deadline is None else max(deadline - start, 0.05)
        )
        # Completing the warm start is a search too: it shares the budget.
        hint = self.complete(greedy, budget=min(5.0, limit / 3))
        # A hint from the relaxed model guides the search but is not a plan
        # of this model: its victim attribution may break the pair rules.
        trusted = hint is not None
        if hint is None and greedy.preemptions:
            # Evaluate greedy in a model that tolerates its unattributed
            # victims; same variables, so the values still hint this model.
            relaxed = CPModel(
                self.data,
                self.params,
                frozenset(p.workload for p in greedy.preemptions),
            )
            n_vars = len(self.model.proto.variables)
            if len(relaxed.model.proto.variables) == n_vars:
                hint = relaxed.complete(greedy, budget=min(5.0, limit / 3))
        if hint is None:
            log.warning("greedy plan is not representable in the model; cold start")
        floor = self.stage_values(hint) if hint is not None else None
        values = dict(hint) if hint is not None else None
        results: list[StageResult] = []
        n = max(len(self.stages), 1)
        for k, stage in enumerate(self.stages):
            remaining = limit - (time.perf_counter() - start)
            share = remaining * (0.6 if k == 0 and n > 1 else 1 / (n - k))
            det = (
                self.params.deterministic_time / n
                if self.params.deterministic_time is not None
                else None
            )
            terms: Terms = Objective.weighted(stage)
            expr = sum(c * x for c, x in terms)
            self.model.maximize(expr)
            self.model.clear_hints()  # type: ignore[no-untyped-call]
            if values is not None:
                for i, val in values.items():
                    self.model.add_hint(self.model.get_int_var_from_proto_index(i), val)
            solver = self._solver(share, det)
            status = solver.solve(self.model)
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                values = {
                    i: solver.value(self.model.get_int_var_from_proto_index(i))
                    for i in range(len(self.model.proto.variables))
                }
                trusted = True
                best = sum(c * values[x.index] for c, x in terms)
                results.append(
                    StageResult(
                        "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE",
                        solver.objective_value,
                        solver.best_objective_bound,
                    )
                )
            elif values is not None and trusted:
                best = sum(c * values[x.index] for c, x in terms)
                results.append(StageResult("FEASIBLE", float(best), None))
            else:
                results.append(StageResult("NO_SOLUTION", None, None))
                break
            self.model.add(expr >= best)
        wall = time.perf_counter() - start
        if values is None or not trusted:
            return fallback(greedy, wall), []
        got = self.stage_values(values)
        if floor is None:
            # Greedy could not be expressed in the model: compare the plans'
            # priority-tier demand directly, the objective's leading criteria.
            pol = self.params.policy
            snap = self.data.snapshot
            mine = plan_from_values(self.data, self.vars, self.cons, values, reasons)
            if primary_vector(snap, mine, pol) < primary_vector(snap, greedy, pol):
                floor = [1 << 62]  # forces the FALLBACK branch below
        if floor is not None and got < floor:
            log.info("cpsat found nothing better than greedy (%s < %s)", got, floor)
            return fallback(
                greedy,
                wall,
                objective=float(floor[0]) if floor else None,
                bound=results[0].bound if results else None,
            ), floor
        overall = (
            "OPTIMAL"
            if results
            and all(r.status == "OPTIMAL" for r in results)
            and len(results) == len(self.stages)
            else "FEASIBLE"
        )
        first = results[0] if results else StageResult("FEASIBLE", None, None)
        plan = plan_from_values(self.data, self.vars, self.cons, values, reasons)
        plan = plan.model_copy(
            update={
                "solver": plan.solver.model_copy(
                    update={
                        "status": overall,
                        "wall_seconds": wall,
                        "objective": first.objective,
                        "bound": first.bound,
                    }
                )
            }
        )
        return plan, got
