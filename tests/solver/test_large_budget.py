"""The large path keeps to its budget (solver/cpsat/solve.py:_large).

At 50,000 hosts compiling and warm-starting take most of a 25 s limit, so
each step beyond them runs only while the budget lasts: best-fit's evictions
stop at WARM_SHARE of the limit, the LP bound is begun only with time for
it (else the pending demand bounds each tier), and the warm start's packing
is kept incremental.  Small instances take these paths here by lowering the
thresholds; every plan must still pass the validator.
"""

from __future__ import annotations

import numpy as np
import pytest

import placewise.solver.cpsat.solve as solve_module
from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.plan import Plan, SolverInfo
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.search.packing import Leaves
from placewise.solver.cpsat.search.warmstart import best_fit
from placewise.solver.policy import accelerators, tier_figures
from placewise.solver.problem.compile import compile_problem
from placewise.solver.settle import settle_preemptions

PARAMS = CpSatParams(time_limit=6.0, workers=1, seed=0)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    config = family("preemption-heavy").with_overrides(nodes=32, pending=30)
    return snapshot_from_text(dumps(generate(config, 1)))


def test_best_fit_evicts_only_within_its_budget(snap: Snapshot) -> None:
    problem = compile_problem(snap)
    free = best_fit(problem)
    assert free.preemptions, "the instance should need evictions"
    spent = Budget.of(0.0)
    none = best_fit(problem, budget=spent)
    assert none.preemptions == ()
    assert len(none.admissions) < len(free.admissions)
    assert validate(snap, none) == []
    # Best-fit may evict more than its preemptors need; the solve's final
    # settle (which the large path relies on) takes those back.
    assert validate(snap, settle_preemptions(snap, free)) == []


def test_cached_fits_follow_every_change_of_the_leaves(snap: Snapshot) -> None:
    """Fits are brought up to date when read, not on each change: after any
    sequence of takes a cached fit equals one computed afresh."""
    problem = compile_problem(snap)
    layout = problem.layout
    lv = Leaves(problem.data, layout)
    rng = np.random.default_rng(0)
    shapes = [(spec.flavor, layout.shapes[spec.shape]) for spec in layout.specs[:6]]
    assert shapes
    for step in range(40):
        f, shape = shapes[step % len(shapes)]
        need = np.zeros(lv.free.shape[1], dtype=np.int64)
        for r, q in shape.request:
            need[lv.col[r]] = q
        mask = layout.masks[f][shape.signature]
        assert np.array_equal(
            lv.fit(f, shape.idx, need, mask), lv.fit_now(f, need, mask)
        )
        leaves = rng.choice(lv.index[f], size=3)
        delta = rng.integers(-2, 3, size=(3, lv.free.shape[1])) * need.clip(0, 1)
        lv.take(leaves, delta, refresh=bool(step % 2))
        if step % 2 == 0:
            lv.refresh(leaves)


def test_without_time_for_the_lp_the_demand_bounds_each_tier(
    monkeypatch: pytest.MonkeyPatch, snap: Snapshot
) -> None:
    """Forced down the large path with no time for an LP: the plan is still
    cpsat's, valid, and each tier's bound is its running work plus every
    pending workload of the tier — at least its GPUs."""
    monkeypatch.setattr(solve_module, "LARGE_CELLS", 0)
    monkeypatch.setattr(solve_module, "BOUND_PER_COMPILE", 1e9)
    plan = solve_cpsat(snap, PARAMS)
    assert validate(snap, plan) == []
    assert plan.solver.name == "cpsat" and plan.solver.status == "FEASIBLE"
    empty = Plan(solver=SolverInfo(name="", status="FEASIBLE"))
    running = {f.priority: f.gpus for f in tier_figures(snap, empty)}
    for tier in plan.solver.tiers:
        waiting = sum(
            ps.count * accelerators(ps.requests, PARAMS.policy)
            for w in snap.pending
            if w.priority == tier.priority
            for ps in w.pod_sets
        )
        assert tier.bound == running.get(tier.priority, 0) + waiting
        assert tier.bound >= tier.gpus


def test_the_large_path_never_overruns_a_spent_budget(
    monkeypatch: pytest.MonkeyPatch, snap: Snapshot
) -> None:
    """With the whole budget reserved for the final validation, no search
    and no LP run: the filled warm start is the plan, valid, and its tiers
    carry the demand bound."""
    monkeypatch.setattr(solve_module, "LARGE_CELLS", 0)
    monkeypatch.setattr(solve_module, "VALIDATE_PER_COMPILE", 1e9)
    start = solve_module._start(snap, PARAMS, None)
    filled = solve_module._filled_around_victims(start.problem, start.warm)
    plan = solve_cpsat(snap, PARAMS)
    assert validate(snap, plan) == []
    assert [f.gpus for f in tier_figures(snap, plan)] >= [
        f.gpus for f in tier_figures(snap, filled)
    ]
    assert all(t.bound is not None and t.bound >= t.gpus for t in plan.solver.tiers)
