"""CPModel: the variables, constraints and objective stages of one problem.

Built once per solve.  :meth:`CPModel.hint` turns any plan (the greedy's, a
warm start's, the incumbent of a previous round) into a complete assignment
of every variable — decisions read from the plan, auxiliaries derived from
them (:meth:`Variables.derive`) — so the search starts from it and the
result can never be worse under the objective.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.models.plan import Plan
from placewise.solver.cpsat.decode.plan_io import decisions_from_plan, plan_from_values
from placewise.solver.cpsat.model.constraints import Constraints, Mode
from placewise.solver.cpsat.model.objective import Objective, Stage
from placewise.solver.cpsat.model.variables import Variables
from placewise.solver.policy import Policy
from placewise.solver.problem.compile import Problem


@dataclass(frozen=True, slots=True)
class CpSatParams:
    time_limit: float = 10.0
    """Wall-clock budget for the whole solve (seconds)."""
    workers: int = 0
    """Search workers; 0 lets CP-SAT use every core."""
    seed: int = 0
    deterministic_time: float | None = None
    """CP-SAT's max_deterministic_time for all stages together; with it the
    plan depends on the seed alone (see README "Determinism")."""
    policy: Policy = field(default_factory=Policy)


class CPModel:
    def __init__(
        self, problem: Problem, params: CpSatParams, mode: Mode = "plan"
    ) -> None:
        """``mode``: the plan's model, or a bounding one (see
        :meth:`Constraints.add_constraints`) with no tie-break stages, never
        decoded into a plan."""
        data = self.data = problem.data
        self.problem = problem
        self.params = params
        self.mode = mode
        self.model = cp_model.CpModel()
        self.vars = Variables(self.model, data)
        self.cons = Constraints(self.model, problem, self.vars)
        self.cons.add_constraints(mode)
        self.objective = Objective(
            self.model, data, self.vars, self.cons, params.policy
        )
        self.stages: list[Stage] = self.objective.build(mode != "plan")

    @property
    def size(self) -> int:
        return len(self.model.proto.variables)

    def hint(self, plan: Plan) -> dict[int, int] | None:
        """Every variable's value for ``plan``; None when the model cannot
        express it (or the completed assignment breaks a constraint)."""
        fixed = decisions_from_plan(self.data, self.vars, self.cons.placement, plan)
        if fixed is None:
            return None
        values = self.vars.complete(fixed)
        if len(values) != self.size or not self.satisfies(values):
            return None
        return values

    def satisfies(self, values: dict[int, int]) -> bool:
        """Whether ``values`` meet every variable domain and linear row."""
        proto = self.model.proto
        for i, var in enumerate(proto.variables):
            dom = list(var.domain)
            if not dom[0] <= values[i] <= dom[-1]:
                return False
        for ct in proto.constraints:
            if not ct.has_linear() or len(ct.enforcement_literal):
                return False  # the model is built from plain linear rows only
            lin = ct.linear
            total = sum(
                c * values[v] for v, c in zip(lin.vars, lin.coeffs, strict=True)
            )
            dom = list(lin.domain)
            if not any(dom[k] <= total <= dom[k + 1] for k in range(0, len(dom), 2)):
                return False
        return True

    def plan(self, values: dict[int, int], reasons: dict[str, str]) -> Plan:
        return plan_from_values(self.data, self.vars, self.cons, values, reasons)
