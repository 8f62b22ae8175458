"""The greedy under Kueue's fair sharing, on hand-made instances: the order of
heads by dominant resource share, preemption by share, why a workload waits.
Kueue's own table cases are in ``test_greedy_kueue_cases`` (fairsharing/)."""

from __future__ import annotations

from placewise.models.plan import Plan
from placewise.solver.greedy import solve_greedy
from tests.helpers import NS, flavor_yaml, snapshot
from tests.kueue_cases import assert_feasible
from tests.solver.greedy.test_mechanisms import cq, lq, wl

FAIR = """apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
fairSharing: {enable: true}
"""
POOL = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: co}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: f, resources: [{name: cpu, nominalQuota: '12'}]}]
"""
"""A cohort whose own quota (12 cpu) is all there is to share."""


def weight(w: str) -> str:
    return f"  fairSharing: {{weight: '{w}'}}\n"


def admitted_per_queue(plan: Plan) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in plan.admissions:
        out[a.cluster_queue] = out.get(a.cluster_queue, 0) + 1
    return out


def teams(fair: bool = True) -> Plan:
    """Teams a (weight 2, may reclaim) and b (weight 1), nominal 0 each, 12
    one-cpu workloads each, sharing the cohort's 12; run to quiescence."""
    objects = [NS, flavor_yaml(), POOL]
    reclaim = "  preemption: {reclaimWithinCohort: Any}\n"
    objects += [
        cq("a", [("f", "0", None)], cohort="co", extra=weight("2") + reclaim),
        cq("b", [("f", "0", None)], cohort="co", extra=weight("1")),
        lq("qa", "a"),
        lq("qb", "b"),
    ]
    objects += [wl(f"a{i}", "qa", "1", ts=i) for i in range(12)]
    objects += [wl(f"b{i}", "qb", "1", ts=i) for i in range(12)]
    if fair:
        objects.append(FAIR)
    snap = snapshot(*objects)
    plan = solve_greedy(snap)
    assert_feasible(snap, plan)
    return plan


def test_weights_split_the_cohort() -> None:
    """Both heads fit while the pool lasts (one per queue per cycle: 6 each);
    then a reclaims by share until its weighted share would pass b's: with
    weight 2 it ends with twice b's part of the pool."""
    plan = teams()
    assert admitted_per_queue(plan) == {"a": 8, "b": 4}
    # b's two victims were admitted by this same run: the plan just leaves
    # them pending, it evicts nothing that was running before it.
    assert plan.preemptions == ()
    waiting = {p.workload: p.reason for p in plan.pending}
    assert (
        "ClusterQueue a's share (375) above ClusterQueue b's" in waiting["default/a8"]
    )


def test_without_fair_sharing_nothing_is_reclaimed() -> None:
    """Same instance, no Configuration: a borrows everything it has, so the
    classical rules (no borrowWithinCohort) let it reclaim nothing."""
    plan = teams(fair=False)
    assert admitted_per_queue(plan) == {"a": 6, "b": 6}
    assert plan.preemptions == ()


def test_reclaim_by_share_and_why_it_stops() -> None:
    """b took the whole pool while a was idle; a, with reclaimWithinCohort,
    takes back its fair half by preemption (InCohortFairSharing) and no more:
    a victim that would leave b below a is refused, and the pending reason
    names both shares."""
    extra = "  preemption: {reclaimWithinCohort: Any}\n"
    objects = [
        NS,
        flavor_yaml(),
        POOL,
        FAIR,
        cq("a", [("f", "0", None)], cohort="co", extra=extra),
        cq("b", [("f", "0", None)], cohort="co"),
        lq("qa", "a"),
        lq("qb", "b"),
    ]
    objects += [wl(f"b{i}", "qb", "1", ts=i, running_in="b") for i in range(12)]
    objects += [wl(f"a{i}", "qa", "1", ts=20 + i) for i in range(12)]
    snap = snapshot(*objects)
    plan = solve_greedy(snap)
    assert_feasible(snap, plan)
    assert admitted_per_queue(plan) == {"a": 6}
    assert len(plan.preemptions) == 6
    assert {p.reason for p in plan.preemptions} == {"InCohortFairSharing"}
    waiting = {p.workload: p.reason for p in plan.pending}
    reason = waiting["default/a6"]
    assert "fair sharing allows no victims" in reason
    assert "ClusterQueue a's share (584) above ClusterQueue b's (417)" in reason


def test_a_run_that_would_flap_stops(caplog) -> None:
    """fair-share seed 2 under Kueue's own cycles: each cycle one team's head
    wins the tournament and is admitted, and another team's head, which no
    longer fits its topology, takes back that team's previous admission by
    share.  Kueue would repeat this forever; the run stops at the first
    repeated state.  Holding an eviction's room for its preemptor (the
    greedy's default) ends the flap: each preemptor lands where it preempted."""
    from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
    from placewise.solver.greedy.solver import outcome_to_plan, run_greedy

    snap = generate_snapshot(Instance("fair-share", 2))
    kueue = run_greedy(snap, hold_room=False)
    assert "repeats an earlier state" in caplog.text
    assert any("would repeat" in r for r in kueue.reasons.values())
    caplog.clear()
    plan = solve_greedy(snap)
    assert_feasible(snap, plan)
    assert "repeats an earlier state" not in caplog.text
    assert outcome_to_plan(snap, kueue, "greedy", 0.0).admissions != plan.admissions
