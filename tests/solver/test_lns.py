"""The rack search (solver/cpsat/search/lns.py): every round's result is a complete
assignment of the full model, never below where it started, and a solve
that uses it (models above RACE_VARIABLES) still gives a validator-clean plan
no worse than the greedy."""

from __future__ import annotations

import logging

import pytest

import placewise.solver.cpsat.solve as solve_module
from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.export import export
from placewise.solver.cpsat.search.lns import Neighbourhoods, RackSearch, neighbourhoods
from placewise.solver.cpsat.search.race import Proofs
from placewise.solver.cpsat.search.stages import StageResult, proved_later, solve_stage
from placewise.solver.greedy import solve_greedy
from placewise.solver.highs import run_highs
from placewise.solver.policy import Policy, primary_vector
from placewise.solver.problem.compile import compile_problem


def _fragmented() -> Snapshot:
    config = family("fragmented").with_overrides(nodes=96, pending=40)
    return snapshot_from_text(dumps(generate(config, 2)))


def _gpus_stage(
    workers: int,
) -> tuple[CPModel, dict[int, int], Neighbourhoods, Stage]:
    """The fragmented instance's model under ``objective: gpus``, the
    greedy's plan as its values, its racks, and its one GPU stage."""
    snap = _fragmented()
    params = CpSatParams(workers=workers, policy=Policy(objective="gpus"))
    model = CPModel(compile_problem(snap), params)
    start = model.hint(solve_greedy(snap))
    hoods = neighbourhoods(model, params.policy.accelerators)
    assert start is not None and hoods is not None and not hoods.clusters
    return model, start, hoods, model.stages[0]


@pytest.fixture(scope="module")
def optimum() -> int:
    """The GPU stage's optimum, proven by HiGHS's MIP on the same rows."""
    model, _, _, stage = _gpus_stage(2)
    objective = [(c, x.index) for c, x in stage.terms]
    mip = run_highs(export(model.model, objective, set(range(model.size))), 60.0)
    assert mip.status == "Optimal" and mip.objective is not None
    return round(mip.objective)


def test_rounds_keep_the_model_satisfied_and_never_lose_ground() -> None:
    model, start, hoods, stage = _gpus_stage(1)
    assert len(hoods.domains) >= 6
    search = RackSearch(model, hoods, seed=0)
    search.start(stage, start, Budget.of(1.5), threads=2)
    search.wait()
    found = search.result()
    assert found is not None and search.rounds > 0
    assert model.satisfies(found)
    assert stage.value(found) >= stage.value(start)


@pytest.mark.parametrize("objective", ["tiers", "gpus"])
def test_a_solve_with_the_rack_search_is_valid_and_not_below_greedy(
    objective: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Forced on a small model (it normally runs above RACE_VARIABLES)."""
    caplog.set_level(logging.INFO, logger="placewise.cpsat")
    monkeypatch.setattr(solve_module, "RACE_VARIABLES", 0)
    snap = _fragmented()
    pol = Policy(objective=objective)
    plan = solve_cpsat(snap, CpSatParams(time_limit=3, workers=2, policy=pol))
    assert validate(snap, plan) == []
    greedy = solve_greedy(snap)
    assert primary_vector(snap, plan, pol) >= primary_vector(snap, greedy, pol)
    # The rack search runs once the solve reaches the search; on a loaded
    # machine compiling and the warm start can use the 3 s first (a logged
    # fallback), which is a condition, not a defect of the rack search.
    # So can building the model: a hint ready with under a second of the 3 s
    # left gives the stages no time (seen with eight replays beside the suite).
    hint_at = [
        float(m.rsplit(" ", 1)[1].rstrip("s"))
        for m in caplog.messages
        if m.startswith("cpsat: hint ready at ")
    ]
    starved = any("used the time limit" in m for m in caplog.messages) or any(
        t > 2.0 for t in hint_at
    )
    if objective == "tiers" and not starved:  # (gpus: proven before the search)
        assert any(m.startswith("lns:") for m in caplog.messages)


def test_the_search_ends_at_a_proven_bound() -> None:
    """Once the LP beside it proves the incumbent optimal, no round runs."""
    model, start, hoods, stage = _gpus_stage(1)
    search = RackSearch(model, hoods, seed=0)
    search.settle_at(stage.value(start))
    search.start(stage, start, Budget.of(5.0), threads=2)
    search.wait()
    assert search.result() == start and search.rounds == 0


def test_the_lp_beside_the_search_bounds_the_stage() -> None:
    """A large model's stage reports the LP relaxation's bound (or CP-SAT's,
    when smaller): never below the stage's value, never above the LP."""
    model, start, hoods, stage = _gpus_stage(2)
    objective = [(c, x.index) for c, x in stage.terms]
    lp = run_highs(export(model.model, objective, None))
    assert lp.bound is not None
    search = RackSearch(model, hoods, seed=0)
    _, found, bound = solve_stage(model, stage, start, Budget.of(2.0), None, lns=search)
    assert found is not None and model.satisfies(found)
    assert bound is not None and stage.value(found) <= bound <= lp.bound + 1e-6


def test_the_prover_beside_the_search_never_bounds_below_the_optimum(
    optimum: int,
) -> None:
    """On one cluster CP-SAT only proves (lower-bound tree search) while the
    rack search finds: the stage's bound is at least the optimum HiGHS's MIP
    proves on the same rows, and at least the plan's value."""
    model, start, hoods, stage = _gpus_stage(2)
    search = RackSearch(model, hoods, seed=0)
    _, found, bound = solve_stage(model, stage, start, Budget.of(2.0), None, lns=search)
    assert found is not None and model.satisfies(found)
    assert bound is not None and bound >= optimum >= stage.value(found)


def test_a_prover_outliving_its_stage_still_bounds_it(optimum: int) -> None:
    """The last GPU stage's prover keeps proving after the stage (while the
    tie-breaks run): the bound read then is still at least the optimum."""
    model, start, hoods, stage = _gpus_stage(2)
    proofs = Proofs(Budget.of(30.0))
    search = RackSearch(model, hoods, seed=0)
    kind, found, _ = solve_stage(
        model, stage, start, Budget.of(0.01), None, lns=search, proofs=proofs
    )
    assert found is not None and [p.stage for p in proofs.running] == [stage]
    proofs.running[0].done.wait(20.0)
    result = StageResult(stage, kind, stage.value(found), None, 0.0)
    proved_later([result], proofs.running[0])
    assert result.bound is not None and result.bound >= optimum
    assert result.bound >= stage.value(found)
