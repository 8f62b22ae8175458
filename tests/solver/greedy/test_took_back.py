"""A run whose later cycle takes back its own admission (Kueue requeues it).

A plan is a final state without a timeline: an eviction made because an
admission of the same run had its queue borrowing loses its reason when a
later cycle evicts that admission.  The run then ends where Kueue stood
before it took the admission back.  Found on a replay of the
``preemption-heavy`` family, which stopped on the validator's refusal.
"""

from __future__ import annotations

from placewise.models.validate import validate
from placewise.solver.greedy import solve_greedy
from placewise.solver.greedy.scheduler import GreedyScheduler
from placewise.solver.greedy.solver import outcome_to_plan, run_greedy
from tests.helpers import NS, flavor_yaml, snapshot
from tests.solver.greedy.test_mechanisms import cq, lq, wl

RECLAIM = "  preemption: {reclaimWithinCohort: Any}\n"


def instance() -> str:
    """Cohort of 18 cpu: a (nominal 12) runs r1 (2), b (nominal 6) runs s1
    (2).  Cycle 1: a's head ``huge`` fits nowhere; b's ``x`` (8) is
    admitted, borrowing.  Cycle 2: a's ``p`` (8) reclaims s1 from b, which
    borrows only because of x.  A later cycle: a's ``q`` reclaims x itself."""
    return "---\n".join(
        [
            NS,
            flavor_yaml(),
            cq("a", [("f", "12", None)], cohort="co", extra=RECLAIM),
            cq("b", [("f", "6", None)], cohort="co", extra=RECLAIM),
            lq("qa", "a"),
            lq("qb", "b"),
            wl("r1", "qa", "2", priority=1000, running_in="a"),
            wl("s1", "qb", "2", priority=100, running_in="b"),
            wl("huge", "qa", "30", priority=1000, ts=0),
            wl("p", "qa", "8", priority=1000, ts=2),
            wl("q", "qa", "2", priority=100, ts=3),
            wl("x", "qb", "8", priority=1000, ts=1),
        ]
    )


def test_the_plan_stops_before_kueue_takes_back_its_own_admission() -> None:
    snap = snapshot(instance())
    # Kueue's cycles to the end: x is admitted, then evicted for q, and the
    # final state keeps s1's eviction with b no longer borrowing.
    full = GreedyScheduler(snap).run()
    assert full.took_back is not None
    assert "default/x" not in full.admitted
    assert full.preempted["default/s1"][0] == "default/p"
    rules = {v.rule for v in validate(snap, outcome_to_plan(snap, full, "g", 0.0))}
    assert "preemption.not-borrowing" in rules
    # The run ends before that cycle: x runs, s1 makes room for p, q waits.
    cut = run_greedy(snap)
    assert set(cut.admitted) == {"default/x", "default/p"}
    assert cut.preempted == {"default/s1": ("default/p", "InCohortReclamation")}
    plan = solve_greedy(snap)
    assert validate(snap, plan) == []
    assert {p.workload for p in plan.pending} == {"default/huge", "default/q"}
