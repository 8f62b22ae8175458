"""CP-SAT on generated multi-team clusters, where Kueue's own plan may credit
a victim to a preemptor that then lost the freed capacity to another
workload.  The model credits such victims to another admitted workload the
rules allow, so the greedy plan still hints the search; and when a warm
start cannot be expressed at all, the search starts cold and the result is
still valid and never worse than the greedy (or the greedy itself)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot
from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.greedy import solve_greedy
from placewise.solver.problem.compile import compile_problem
from tests.solver.exhaustive import demand_vector


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_greedy_plans_of_multi_team_are_hints(seed: int) -> None:
    """Every variable gets a value from Kueue's plan, and they satisfy the model."""
    snap = generate_snapshot(Instance("multi-team", seed))
    greedy = solve_greedy(snap)
    model = CPModel(compile_problem(snap), CpSatParams(workers=1))
    assert model.hint(greedy) is not None


@pytest.mark.parametrize(("seed", "cold"), [(3, False), (5, True)])
def test_multi_team_plan_is_valid_and_not_worse_than_greedy(
    seed: int, cold: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if cold:
        monkeypatch.setattr(CPModel, "hint", lambda self, plan: None)
    snap = generate_snapshot(Instance("multi-team", seed))
    logging.disable(logging.WARNING)
    try:
        plan = solve_cpsat(
            snap,
            CpSatParams(time_limit=60, workers=1, seed=0, deterministic_time=0.5),
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


DEMO = sorted((Path(__file__).parents[2] / "instances" / "demo").glob("*.yaml"))


def test_cold_start_on_the_demo_finds_the_optimizers_own_plan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With every warm start refused as a hint, the search starts cold and
    still returns its own plan, better than Kueue's (which preempts sweep-3)."""
    monkeypatch.setattr(CPModel, "hint", lambda self, plan: None)
    snap = load_snapshot(DEMO)
    greedy = solve_greedy(snap)
    assert greedy.preemptions
    logging.disable(logging.WARNING)
    try:
        plan = solve_cpsat(snap, CpSatParams(time_limit=10, workers=1, seed=0))
    finally:
        logging.disable(logging.NOTSET)
    assert plan.solver.status in ("OPTIMAL", "FEASIBLE")
    assert plan.preemptions == ()
    assert demand_vector(snap, plan) > demand_vector(snap, greedy)


def test_deterministic_time_gives_one_plan_for_any_worker_count() -> None:
    """With --deterministic-time the plan depends on the input and the seed
    alone: the same for one worker and for two (wall time aside)."""
    snap = generate_snapshot(Instance("fragmented", 2))
    plans = [
        solve_cpsat(
            snap,
            CpSatParams(time_limit=60, workers=w, seed=3, deterministic_time=0.5),
        )
        for w in (1, 2)
    ]
    first, second = (p.model_copy(update={"solver": p.solver.model_copy(
        update={"wall_seconds": 0.0})}) for p in plans)  # fmt: skip
    assert first == second
