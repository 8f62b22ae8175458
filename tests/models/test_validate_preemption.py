"""Preemption-policy rules (kueue-semantics §5.1, §5.3) on ``preempt.yaml``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from placewise.models.snapshot import build_snapshot
from placewise.models.validate import Violation
from tests.models.validate_builders import (
    admission,
    check,
    load,
    pending,
    plan,
    psa,
    running,
)
from tests.models.validate_builders import (
    policy_rules as rules,
)

EARLY, LATE = "2025-12-01T00:00:00Z", "2025-12-02T00:00:00Z"


def evict(
    victim: dict[str, Any],
    preemptor: dict[str, Any],
    reason: str,
    *others: dict[str, Any],
    admit: int | None = None,
) -> list[Violation]:
    """Preempt ``victim`` for ``preemptor``, which stays pending unless
    ``admit`` gives the cpu it is admitted with."""
    snap = load("preempt.yaml", victim, preemptor, *others)
    p_key = preemptor["metadata"]["namespace"] + "/" + preemptor["metadata"]["name"]
    v_key = victim["metadata"]["namespace"] + "/" + victim["metadata"]["name"]
    cq = preemptor["spec"]["queueName"].removeprefix("lq-")
    admissions = []
    if admit is not None:
        entry = psa("main", {"cpu": "f"}, {"cpu": str(admit)})
        admissions = [admission(p_key, cq, entry)]
    return check(
        snap,
        plan(
            admissions,
            pending=[] if admissions else [p_key],
            preemptions=[(v_key, p_key, reason)],
        ),
    )


def borrower(
    priority: int = 0, cpu: int = 2, flavor: str = "f"
) -> list[dict[str, Any]]:
    """``lender`` running 4 + ``cpu`` (so it borrows); returns [victim, filler]."""
    return [
        running("default/victim", "lender", cpu, flavor=flavor, priority=priority),
        running("default/filler", "lender", 4, flavor=flavor, priority=9),
    ]


@pytest.mark.parametrize(
    ("victim_priority", "expected"), [(0, []), (1, ["preemption.policy"])]
)
def test_within_cluster_queue_lower_priority(
    victim_priority: int, expected: list[str]
) -> None:
    """LowerPriority: strictly lower priority only."""
    v = evict(
        running("default/victim", "p1", 2, priority=victim_priority),
        pending("default/in", 2, queue="lq-p1", priority=1),
        "InClusterQueue",
    )
    assert rules(v) == expected


@pytest.mark.parametrize(
    ("victim_created", "expected"), [(LATE, []), (EARLY, ["preemption.policy"])]
)
def test_within_cluster_queue_lower_or_newer_equal(
    victim_created: str, expected: list[str]
) -> None:
    """LowerOrNewerEqualPriority: an equal-priority victim must be newer."""
    v = evict(
        running("default/victim", "p2", 2, created=victim_created),
        pending("default/in", 2, queue="lq-p2", created="2025-12-01T12:00:00Z"),
        "InClusterQueue",
    )
    assert rules(v) == expected


def test_within_cluster_queue_never() -> None:
    """withinClusterQueue Never forbids evicting from the own queue."""
    v = evict(
        running("default/victim", "p3", 2, priority=-5),
        pending("default/in", 2, queue="lq-p3"),
        "InClusterQueue",
    )
    assert rules(v) == ["preemption.policy"]
    assert "withinClusterQueue Never" in v[0].message


@pytest.mark.parametrize(
    ("victim_priority", "expected"), [(0, []), (1, ["preemption.policy"])]
)
def test_reclaim_within_cohort_lower_priority(
    victim_priority: int, expected: list[str]
) -> None:
    """Reclaiming from a borrowing queue: LowerPriority victims only."""
    victim, filler = borrower(victim_priority)
    v = evict(
        victim,
        pending("default/in", 2, queue="lq-p1", priority=1),
        "InCohortReclamation",
        filler,
    )
    assert rules(v) == expected


def test_reclaim_within_cohort_any() -> None:
    """reclaimWithinCohort Any reclaims even higher-priority borrowers."""
    victim, filler = borrower(priority=7)
    v = evict(
        victim, pending("default/in", 2, queue="lq-p2"), "InCohortReclamation", filler
    )
    assert v == []


def test_victim_marked_not_preemptible() -> None:
    """A victim the caller protects (the live loop's own decisions) is off
    limits even where the queue policy would allow it."""
    victim, filler = borrower(priority=7)
    snap = load("preempt.yaml", victim, filler, pending("default/in", 2, queue="lq-p2"))
    objects = snap.objects
    held = objects.workloads["default/victim"].model_copy(update={"preemptible": False})
    protected = build_snapshot(
        dataclasses.replace(
            objects, workloads={**objects.workloads, "default/victim": held}
        )
    )
    p = plan(
        pending=["default/in"],
        preemptions=[("default/victim", "default/in", "InCohortReclamation")],
    )
    assert check(snap, p) == []
    v = check(protected, p)
    assert rules(v) == ["preemption.protected"]
    assert "default/in" in v[0].message


def test_reclaim_within_cohort_never() -> None:
    """reclaimWithinCohort Never keeps other queues off limits."""
    victim, filler = borrower(priority=-5)
    v = evict(
        victim,
        pending("default/in", 2, queue="lq-p3", priority=1),
        "InCohortReclamation",
        filler,
    )
    assert rules(v) == ["preemption.policy"]


def test_victim_queue_must_be_borrowing() -> None:
    """A queue within its nominal quota lends nothing to reclaim."""
    v = evict(
        running("default/victim", "lender", 2, priority=-5),
        pending("default/in", 2, queue="lq-p1", priority=1),
        "InCohortReclamation",
    )
    assert rules(v) == ["preemption.not-borrowing"]
    assert "ClusterQueue lender is within its quota" in v[0].message


@pytest.mark.parametrize(
    ("victim_cq", "preemptor_queue"),
    [
        ("far1", "lq-p1"),  # another cohort tree
        ("p1", "lq-solo"),  # preemptor without a cohort
    ],
)
def test_victim_outside_the_cohort_tree(victim_cq: str, preemptor_queue: str) -> None:
    """Preemption never crosses cohort trees."""
    v = evict(
        running("default/victim", victim_cq, 2, priority=-5),
        pending("default/in", 2, queue=preemptor_queue, priority=1),
        "InCohortReclamation",
    )
    assert rules(v) == ["preemption.scope"]


def test_preemptor_that_cannot_be_admitted() -> None:
    """A workload whose LocalQueue does not exist cannot preempt anything."""
    v = evict(
        running("default/victim", "p1", 2, priority=-5),
        pending("default/in", 2, queue="lq-missing", priority=1),
        "InClusterQueue",
    )
    assert rules(v) == ["preemption.scope"]
    assert "doesn't exist" in v[0].message


def test_victim_must_share_a_flavor_resource() -> None:
    """Evicting usage of flavor g frees nothing for a preemptor that can only
    use flavor f."""
    victim, filler = borrower(priority=-5, flavor="g")
    v = evict(
        victim,
        pending("default/in", 2, queue="lq-p1", priority=1),
        "InCohortReclamation",
        filler,
        running("default/f-borrow", "lender", 6, flavor="f", priority=9),
    )
    assert rules(v) == ["preemption.no-shared-resource"]
    assert "victim uses cpu in g" in v[0].message


@pytest.mark.parametrize(
    ("victim_cq", "reason", "why"),
    [
        ("p1", "InCohortReclamation", "calls for InClusterQueue"),
        ("lender", "InClusterQueue", "not the preemptor's p1"),
        ("lender", "InCohortReclaimWhileBorrowing", "borrowWithinCohort policy Never"),
    ],
)
def test_reason_matches_the_queues(victim_cq: str, reason: str, why: str) -> None:
    """InClusterQueue iff the victim shares the preemptor's queue; the
    while-borrowing reason needs a borrowWithinCohort policy."""
    victim = running("default/victim", victim_cq, 2, priority=-5)
    extra = borrower()[1:] if victim_cq == "lender" else []
    v = evict(
        victim, pending("default/in", 2, queue="lq-p1", priority=1), reason, *extra
    )
    assert rules(v) == ["preemption.reason"]
    assert why in v[0].message


@pytest.mark.parametrize(
    ("victim_priority", "cpu", "expected"),
    [
        (0, 6, []),  # at maxPriorityThreshold 0: allowed
        (1, 6, ["preemption.policy"]),  # above the threshold while borrowing
        (1, 4, []),  # not borrowing: reclaimWithinCohort Any
    ],
)
def test_borrow_within_cohort_threshold(
    victim_priority: int, cpu: int, expected: list[str]
) -> None:
    """A preemptor that ends up borrowing may only evict victims at or below
    maxPriorityThreshold (and below its own priority)."""
    victim, filler = borrower(victim_priority)
    v = evict(
        victim,
        pending("default/in", cpu, queue="lq-p2", priority=2),
        "InCohortReclamation",
        filler,
        admit=cpu,
    )
    assert rules(v) == expected


@pytest.mark.parametrize(
    ("queue", "expected"),
    [
        ("lq-hq", []),  # cohort hc holds hq's 4 cpu
        ("lq-hq2", ["preemption.policy"]),  # borrowing with nothing below root
    ],
)
def test_hierarchical_advantage_ignores_borrow_within_cohort(
    queue: str, expected: list[str]
) -> None:
    """hq borrows from its own cohort hc, which can hold it: reclaiming from
    hl outside hc needs no borrowWithinCohort.  hq2 has no such subtree."""
    v = evict(
        running("default/victim", "hl", 2, priority=-5),
        pending("default/in", 4, queue=queue, priority=1),
        "InCohortReclamation",
        running("default/filler", "hl", 4, priority=9),
        admit=4,
    )
    assert rules(v) == expected


def test_queue_that_borrows_through_the_plan_can_be_reclaimed() -> None:
    """Over several cycles a plan may admit into ``lender`` (3 + 3 > 4) and
    later reclaim from it; borrowing is judged on that peak usage."""
    victim = running("default/victim", "lender", 3, priority=-5)
    late = pending("default/late", 3, queue="lq-lender")
    snap = load(
        "preempt.yaml",
        victim,
        late,
        pending("default/in", 2, queue="lq-p1", priority=1),
    )
    fill = admission("default/late", "lender", psa("main", {"cpu": "f"}, {"cpu": "3"}))
    evict = [("default/victim", "default/in", "InCohortReclamation")]
    assert check(snap, plan([fill], pending=["default/in"], preemptions=evict)) == []
    assert rules(
        check(snap, plan([], pending=["default/in", "default/late"], preemptions=evict))
    ) == ["preemption.not-borrowing"]
