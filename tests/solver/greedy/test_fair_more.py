"""Two fair-sharing entries of issue 22 whose outcome hinges on a reading of
the instance (see the reasons in ``test_greedy_kueue_cases``): here the
greedy's outcome on them is checked directly."""

from __future__ import annotations

from dataclasses import replace

from placewise.adapters.io.loader import load_snapshot
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.greedy import solve_greedy
from tests.kueue_cases import MORE, expected_plan

FS = MORE / "fairsharing"


def test_each_queue_preempts_within_itself_with_go_tests_policy() -> None:
    """'multiple preemptions within cq when fair sharing', with the policy the
    Go test really hands Kueue: reclaimWithinCohort left empty (no API
    defaulting), which Kueue's canPreemptWhileBorrowing reads as not Never.
    Each of the three preemptors then evicts the low-priority workload of its
    own queue in the same cycle, as Kueue does, and stays pending."""
    case = FS / "multiple-preemptions-within-cq-when-fair-sharing"
    snap = load_snapshot([case / "instance.yaml"])
    cqs = dict(snap.objects.cluster_queues)
    for name in ("other-alpha", "other-beta", "other-gamma"):
        pre = cqs[name].preemption.model_copy(update={"reclaim_within_cohort": ""})
        cqs[name] = cqs[name].model_copy(update={"preemption": pre})
    go = Snapshot(replace(snap.objects, cluster_queues=cqs))
    plan = solve_greedy(go, cycles=1)
    assert plan.admissions == ()
    assert {(p.workload, p.preemptor, p.reason) for p in plan.preemptions} == {
        ("eng-alpha/a1", "eng-alpha/preemptor", "InClusterQueue"),
        ("eng-beta/b1", "eng-beta/preemptor", "InClusterQueue"),
        ("eng-gamma/c1", "eng-gamma/preemptor", "InClusterQueue"),
    }


def test_same_case_as_a_real_cluster_holds_it_finds_no_fit() -> None:
    """With reclaimWithinCohort defaulted to Never (what the instance holds)
    a borrowing preemptor may not simulate preemption: nothing happens."""
    case = FS / "multiple-preemptions-within-cq-when-fair-sharing"
    plan = solve_greedy(load_snapshot([case / "instance.yaml"]), cycles=1)
    assert plan.admissions == () and plan.preemptions == ()
    assert len(plan.pending) == 3


def test_nominal_first_case_hinges_on_the_group_rule() -> None:
    """'nominal-first ordering admits workload fitting within nominal despite
    higher CQ DRS': fs-nom-a lists cpu in two groups (on-demand, then spot).
    Kueue takes the first, and so do the models: nom-wl (45 cpu; nominal 50
    on on-demand) is not borrowing and wins, and Kueue's own plan is valid.
    The loader warns about both queues (Kueue's webhook rejects them)."""
    case = FS / (
        "with-fair-sharing-nominal-first-ordering-admits-workload-fitting-"
        "within-nominal-despite-h"
    )
    snap = load_snapshot([case / "instance.yaml"])
    plan = solve_greedy(snap, cycles=1)
    assert [
        (a.workload, a.pod_set_assignments[0].flavors) for a in plan.admissions
    ] == [("eng-alpha/nom-wl", {"cpu": "on-demand"})]
    (pending,) = plan.pending
    assert pending.workload == "eng-beta/borrow-wl"
    assert validate(snap, expected_plan(case, snap)) == []
    repeated = [
        w.location
        for w in snap.warnings
        if "already covered by resourceGroups[0]" in w.message
    ]
    assert {(loc.name, loc.field) for loc in repeated} == {
        (q, "spec.resourceGroups[1].coveredResources") for q in ("fs-nom-a", "fs-nom-b")
    }
