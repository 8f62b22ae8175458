"""The fair-share family and the fairness figures of the bench."""

from __future__ import annotations

import math
from pathlib import Path

from placewise.benchmarks.harness.fairplot import fair_table
from placewise.benchmarks.harness.matrix import QUICK_FAMILIES, Instance
from placewise.benchmarks.harness.matrix import generate_snapshot as generate
from placewise.benchmarks.harness.plots import COLORS, plot_shares
from placewise.benchmarks.harness.runner import RunResult
from placewise.models.plan import Plan, PlanPending, SolverInfo
from placewise.solver import metrics
from placewise.solver.greedy import solve_greedy
from placewise.solver.kueue.fairsharing import Shares
from placewise.solver.kueue.quota import QuotaTree
from tests.kueue_cases import assert_feasible

INSTANCE = Instance("fair-share", 1, (("pending", 60),))


def test_family_is_a_fair_sharing_contest() -> None:
    """Fair sharing on, uneven weights, a cohort pool, borrowing already
    running, and every team waiting for more."""
    snap = generate(INSTANCE)
    assert "fair-share" in QUICK_FAMILIES
    assert snap.fair_sharing.enable
    weights = sorted(cq.fair_weight for cq in snap.cluster_queues.values())
    assert weights == [1, 1, 2, 2, 4]
    assert all(len(co.resource_groups) == 1 for co in snap.cohorts.values())
    shares = Shares.of(snap, QuotaTree(snap))
    assert any(shares.of_cq(q).borrowing for q in snap.cluster_queues)
    assert {snap.cluster_queue_of(w) for w in snap.pending} == set(snap.cluster_queues)


def test_fairness_of_a_plan() -> None:
    """Kueue's greedy evens the weighted shares out: more even than the
    running state it starts from (a plan that does nothing)."""
    snap = generate(INSTANCE)
    greedy = solve_greedy(snap)
    assert_feasible(snap, greedy)
    nothing = Plan(
        solver=SolverInfo(name="nothing", status="FEASIBLE"),
        pending=tuple(PlanPending(workload=w.key, reason="-") for w in snap.pending),
    )
    after = metrics.compute(snap, greedy).fairness
    before = metrics.compute(snap, nothing).fairness
    assert after is not None and before is not None
    assert [q for q, _ in after.shares] == sorted(snap.cluster_queues)
    assert after.jain > before.jain
    assert after.jain > 0.95
    assert 1 <= after.max_min < 1.5
    assert math.isinf(before.max_min)  # some team starts borrowing nothing


def test_fairness_only_with_fair_sharing() -> None:
    snap = generate(Instance("default", 1, (("pending", 5),)))
    assert metrics.compute(snap, solve_greedy(snap)).fairness is None


def test_table_and_plot(tmp_path: Path) -> None:
    snap = generate(INSTANCE)
    results = []
    for solver in ("kueue", "cpsat"):
        r = RunResult(family="fair-share", instance="fair-share", seed=1, solver=solver)
        r.ok = True
        r.metrics = metrics.compute(snap, solve_greedy(snap))
        results.append(r)
    table = fair_table(results, "fair-share")
    assert table[2].startswith("| cpsat | 1 | ") and "team-a=" in table[2]
    path = tmp_path / "shares.png"
    assert plot_shares(path, results, "fair-share", COLORS)
    assert path.stat().st_size > 1000
    assert not plot_shares(tmp_path / "none.png", results, "default", COLORS)
