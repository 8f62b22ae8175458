"""The large-instance path (residual model, then block-by-block LNS), forced
on small generated clusters by lowering the size threshold: every plan it
returns passes the validator and is never behind the greedy's tier vector,
and the LNS keeps the greedy's decisions outside the block it re-opens."""

from __future__ import annotations

import logging

import pytest

from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat import solve as cpsat_solve
from placewise.solver.greedy import solve_greedy
from tests.solver.exhaustive import demand_vector


@pytest.mark.parametrize(
    ("family", "seed"),
    [("fragmented", 1), ("fragmented", 3), ("multi-team", 2), ("preemption-heavy", 1)],
)
def test_residual_and_lns_plans_are_valid_and_not_worse(
    family: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cpsat_solve, "LARGE", 0)
    calls: list[int] = []
    real_improve = cpsat_solve.improve

    def spy(*args: object, **kw: object):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real_improve(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cpsat_solve, "improve", spy)
    snap = generate_snapshot(Instance(family, seed))
    logging.disable(logging.WARNING)
    try:
        plan = solve_cpsat(snap, CpSatParams(time_limit=8.0, workers=1, seed=0))
    finally:
        logging.disable(logging.NOTSET)
    assert calls, "the residual path must run its LNS"
    greedy = solve_greedy(snap)
    violations = validate(snap, plan)
    assert violations == [], [v.message for v in violations][:5]
    assert demand_vector(snap, plan) >= demand_vector(snap, greedy)
