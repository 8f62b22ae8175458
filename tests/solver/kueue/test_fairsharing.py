"""Kueue's fair-sharing rules shared by the back-ends
(``solver/kueue/fairsharing.py``): the exact share, Kueue's comparison, the
tournament, the strategies, and the final-state rule the optimizer must
respect — held against the validator's separate implementation."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from placewise.models.plan import Plan, PlanPending, PlanPreemption, SolverInfo
from placewise.models.quantity import INT64_MAX
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.greedy import solve_greedy
from placewise.solver.kueue.fairsharing import (
    NEGATIVE,
    Contender,
    Share,
    Shares,
    almost_lcas,
    compare,
    final_state_violations,
    less_than_initial_share,
    less_than_or_equal_to_final_share,
    tournament,
)
from placewise.solver.kueue.quota import QuotaTree
from tests.helpers import NS, flavor_yaml, snapshot
from tests.kueue_cases import case_id, expected_plan, list_cases
from tests.shared import params
from tests.solver.greedy.test_mechanisms import cq
from tests.solver.test_greedy_kueue_cases import load_case


def share(ratio: int | Fraction, weight: int | Fraction = 1) -> Share:
    return Share(Fraction(weight), Fraction(ratio))


def test_compare_follows_kueue() -> None:
    """Lower weighted share first; a zero weight borrowing sorts after every
    finite share, zero-weight borrowers among themselves by ratio; a zero
    weight not borrowing is a share of 0."""
    assert compare(share(100, 2), share(60)) == -1
    assert compare(share(100, 2), share(50)) == 0
    assert compare(share(1, 0), share(10**9)) == 1
    assert compare(share(2, 0), share(1, 0)) == 1
    assert compare(share(0, 0), share(1)) == -1
    assert compare(NEGATIVE, share(0)) == -1
    assert share(1, 0).rounded() == INT64_MAX
    assert share(Fraction(1000, 3)).rounded() == 334


def tree_snapshot(*extra: str) -> Snapshot:
    """Cohort co: a (N 4, weight 3), b (N 4); cohort sub (parent co) holds c
    (N 4) and d (N 0): 12 cpu and 12Gi memory lendable in all."""
    res = "[{name: cpu, nominalQuota: '%s'}, {name: memory, nominalQuota: '%sGi'}]"
    docs = [NS, flavor_yaml()]
    for name, cohort, n, w in (("a", "co", 4, "3"), ("b", "co", 4, "1")):
        docs.append(
            cq(
                name,
                [("f", str(n), None)],
                cohort=cohort,
                extra=f"  fairSharing: {{weight: '{w}'}}\n",
            )
            .replace("coveredResources: [cpu]", "coveredResources: [cpu, memory]")
            .replace(f"[{{name: cpu, nominalQuota: '{n}'}}]", res % (n, n))
        )
    for name, n in (("c", 4), ("d", 0)):
        docs.append(
            cq(name, [("f", str(n), None)], cohort="sub")
            .replace("coveredResources: [cpu]", "coveredResources: [cpu, memory]")
            .replace(f"[{{name: cpu, nominalQuota: '{n}'}}]", res % (n, n))
        )
    docs.append(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\n"
        "metadata: {name: sub}\nspec: {parentName: co}\n"
    )
    return snapshot(*docs, *extra)


def test_share_is_exact_per_mille_of_lendable_over_weight() -> None:
    """a borrows 3 cpu and 1Gi of 12 each: cpu dominates, 250 per mille,
    over weight 3 — an exact third, not a rounded one."""
    snap = tree_snapshot()
    tree = QuotaTree(snap)
    shares = Shares.of(snap, tree)
    tree.add_usage("a", {("f", "cpu"): 7000, ("f", "memory"): 5 * 2**30})
    got = shares.of_cq("a")
    assert got.resource == "cpu"
    assert got.ratio == 250
    assert got.weighted == Fraction(250, 3)
    assert got.rounded() == 84
    assert got.borrowed == {("f", "cpu"), ("f", "memory")}
    # d borrows 2 cpu inside sub (which itself stays within its 4).
    tree.add_usage("d", {("f", "cpu"): 2000})
    # sub lends d all the tree holds (no lendingLimit anywhere): 12.
    assert shares.of_cq("d").ratio == Fraction(2000, 12)
    assert not shares.share(tree.nodes["co:sub"]).borrowing


def test_almost_lcas() -> None:
    tree = QuotaTree(tree_snapshot())
    mine, theirs = almost_lcas(tree, "a", "d")
    assert (mine.id, theirs.id) == ("cq:a", "co:sub")
    mine, theirs = almost_lcas(tree, "c", "d")
    assert (mine.id, theirs.id) == ("cq:c", "cq:d")


def test_tournament_order() -> None:
    """Not borrowing (on what the head requests) beats borrowing; then the
    lower share after admission, then priority, then time."""
    snap = tree_snapshot()
    tree = QuotaTree(snap)
    shares = Shares.of(snap, tree)
    root = tree.nodes["co:co"]

    def head(cq_name: str, cpu: int, priority: int = 0, ts: float = 0) -> Contender:
        return Contender(cq_name, {("f", "cpu"): cpu * 1000}, priority, ts)

    def winner(*heads: Contender) -> str | None:
        won = tournament(shares, root, {h.cq: h for h in heads})
        return won.cq if won else None

    assert winner(head("a", 5), head("b", 4)) == "b"  # b stays within nominal
    # Both borrow: a (weight 3) ends at 2000/12/3 = 55.6, b at 1000/12 = 83.3.
    assert winner(head("a", 6), head("b", 5)) == "a"
    # a at 3000/12/3 = b at 1000/12: priority, then the earlier timestamp.
    assert winner(head("a", 7), head("b", 5, priority=1)) == "b"
    assert winner(head("a", 7, ts=2), head("b", 5, ts=1)) == "b"
    assert winner(head("a", 7, ts=1), head("b", 5, ts=2)) == "a"
    # Hierarchy: at co, d competes as sub.  d borrowing 1 inside sub leaves
    # sub within its 4, so sub (not borrowing) beats a; d at 5 makes sub
    # borrow 1 (83.3), and a's 55.6 wins.
    assert winner(head("a", 6), head("d", 1)) == "d"
    assert winner(head("a", 6), head("d", 5)) == "a"
    assert winner() is None


def test_strategies() -> None:
    """S2-a: preemptor's new share <= target's new share; S2-b: < target's
    old share (the target's new share does not matter)."""
    pns, tos, tns = share(300), share(400), share(200)
    assert not less_than_or_equal_to_final_share(pns, tos, tns)
    assert less_than_initial_share(pns, tos, tns)
    assert less_than_or_equal_to_final_share(pns, tos, share(300))
    assert not less_than_initial_share(pns, share(300), tns)


FAIR_CASES = [c for c in list_cases() if c.parent.name == "fairsharing"]
"""Kueue's fair-sharing cases (empty without ../shared: :func:`params` then
skips with the one reason, not pytest's "empty parameter set")."""


def _flagged_by_validator(snap: Snapshot, plan: Plan) -> set[str]:
    rules = ("preemption.fair-sharing", "preemption.not-borrowing")
    return {v.workload for v in validate(snap, plan) if v.rule in rules}


def _flagged_here(snap: Snapshot, plan: Plan) -> set[str]:
    return {m.split(":")[0] for m in final_state_violations(snap, plan)}


@pytest.mark.parametrize("case", params(FAIR_CASES, ids=case_id))
def test_final_state_rule_agrees_with_the_validator(case: Path) -> None:
    """On Kueue's outcome, the greedy's, and every single cross-queue eviction
    by the first pending workload: the solvers' rule and the validator's
    separate one flag the same victims (and neither flags Kueue's)."""
    snap = load_case(case)
    kueue = expected_plan(case, snap)
    assert final_state_violations(snap, kueue) == []
    greedy = solve_greedy(snap)
    assert _flagged_here(snap, greedy) == _flagged_by_validator(snap, greedy) == set()
    if not snap.pending or not snap.fair_sharing.enable:
        return
    w = snap.pending[0]
    for v in snap.running:
        assert v.admission is not None
        if v.admission.cluster_queue == snap.cluster_queue_of(w):
            continue
        plan = Plan(
            solver=SolverInfo(name="probe", status="FEASIBLE"),
            preemptions=(
                PlanPreemption(
                    workload=v.key, preemptor=w.key, reason="InCohortFairSharing"
                ),
            ),
            pending=tuple(
                PlanPending(workload=p.key, reason="-") for p in snap.pending
            ),
        )
        assert _flagged_here(snap, plan) == _flagged_by_validator(snap, plan), v.key
