"""Per-tier bounds from the host-class LP in the optimizer's plans.

At 10,000 hosts the optimizer's plan is the partition search's (beyond
LARGE_CELLS) or a search over a restricted model (beyond RESTRICT_CELLS);
either way its tier bounds come from the host-class LP.  Small instances
take those paths here by lowering the thresholds, so the bounds can be held
against plans a long, unrestricted solve proves optimal.
"""

from __future__ import annotations

import pytest

import placewise.solver.bound.lp as lp_module
import placewise.solver.cpsat.solve as solve_module
from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.bound import gpus_after, lp_bound
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.policy import Policy, tier_figures

GPUS = Policy(objective="gpus")
SHORT = CpSatParams(time_limit=30.0, deterministic_time=2.0, workers=1, seed=0)
LONG = CpSatParams(time_limit=8.0, workers=1, seed=0)


def _snap(name: str, seed: int) -> Snapshot:
    config = family(name).with_overrides(nodes=8, pending=12)
    return snapshot_from_text(dumps(generate(config, seed)))


@pytest.mark.parametrize(("name", "seed"), [("fragmented", 1), ("preemption-heavy", 2)])
@pytest.mark.parametrize("path", ["LARGE_CELLS", "RESTRICT_CELLS"])
def test_tier_bounds_hold_against_the_optimum(
    monkeypatch: pytest.MonkeyPatch, name: str, seed: int, path: str
) -> None:
    """The top tier's bound is never below the top tier of an unrestricted
    solve's plan (proven optimal on these sizes), every tier's bound is at
    least the plan's own figure, and the plan is valid."""
    snap = _snap(name, seed)
    best = solve_cpsat(snap, LONG)
    assert best.solver.status == "OPTIMAL"
    top = tier_figures(snap, best)[0]
    monkeypatch.setattr(solve_module, path, 0)
    plan = solve_cpsat(snap, SHORT)
    assert validate(snap, plan) == []
    tiers = plan.solver.tiers
    assert tiers, plan.solver
    assert tiers[0].priority == top.priority
    assert tiers[0].bound is not None and tiers[0].bound >= top.gpus
    for tier in tiers:
        assert tier.bound is not None and tier.bound >= tier.gpus, tier


def test_gpus_bound_of_a_large_plan_is_placewise_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under ``objective: gpus`` a large plan's total bound is the host-class
    LP, as ``placewise bound`` computes it beyond LARGE_CELLS: never above it,
    never below the unrestricted optimum."""
    snap = _snap("fragmented", 2)
    params = CpSatParams(time_limit=8.0, workers=1, seed=0, policy=GPUS)
    best = gpus_after(snap, solve_cpsat(snap, params))
    monkeypatch.setattr(solve_module, "LARGE_CELLS", 0)
    monkeypatch.setattr(lp_module, "LARGE_CELLS", 0)
    # A budget the HiGHS children meet even on a loaded machine (when they
    # do not, the plan falls back to the relaxed model's looser bound).
    plan = solve_cpsat(snap, CpSatParams(time_limit=10.0, workers=1, policy=GPUS))
    bound = plan.solver.bound
    ours = lp_bound(snap)
    assert bound is not None and ours.lp is not None
    assert best <= bound <= ours.value
