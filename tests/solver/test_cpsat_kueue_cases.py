"""The optimizer on Kueue's own cases: every plan is feasible and never
worse than the greedy under the objective."""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams
from placewise.solver.cpsat.model import CPModel
from placewise.solver.cpsat.solve import solve_cpsat
from placewise.solver.greedy import solve_greedy
from placewise.solver.problem.data import compile_problem
from tests.solver.test_greedy_kueue_cases import case_dirs, load_case

PARAMS = CpSatParams(time_limit=2.0, workers=1, seed=0)


@pytest.mark.parametrize("case", case_dirs(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_cpsat_plan_is_valid_and_not_worse(case: Path) -> None:
    """CP-SAT's plan passes the validator and its objective is >= greedy's."""
    snap = load_case(case)
    plan = solve_cpsat(snap, PARAMS)
    assert plan.solver.name == "cpsat"
    violations = validate(snap, plan)
    assert not violations, "\n".join(map(str, violations))
    greedy = solve_greedy(snap)
    model = CPModel(compile_problem(snap), PARAMS)
    want, got = model.hint(greedy), model.hint(plan)
    if plan.solver.status == "FALLBACK":
        assert plan.admissions == greedy.admissions
        return
    assert got is not None, "the optimizer's own plan must be representable"
    if want is not None:
        stages = model.stages
        assert [s.value(got) for s in stages] >= [s.value(want) for s in stages]
