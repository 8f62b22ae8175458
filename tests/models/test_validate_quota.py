"""Quota rules on hierarchical cohorts, with the worked examples of §2.5.

Each test admits ``n`` cores into one ClusterQueue of ``cohorts.yaml`` on top
of some running usage; the boundary value must pass and one more must fail
with the rule that names the binding limit.
"""

from __future__ import annotations

from typing import Any

import pytest

from placewise.models.validate import Violation
from tests.models.validate_builders import (
    admission,
    check,
    load,
    pending,
    plan,
    psa,
    rules,
    running,
)


def cpu(n: int) -> dict[str, Any]:
    return psa("main", {"cpu": "f"}, {"cpu": str(n)})


def admit(cq: str, n: int, *busy: tuple[str, int]) -> list[Violation]:
    """Admit a pod of ``n`` cpu into ``cq`` while ``busy`` queues hold usage."""
    objects = [running(f"default/run-{q}", q, used) for q, used in busy]
    objects.append(pending("default/new", n, queue=f"lq-{cq}"))
    return check(
        load("cohorts.yaml", *objects), plan([admission("default/new", cq, cpu(n))])
    )


def test_hierarchical_example_available() -> None:
    """§2.5: with U_A=7 and U_B=3, A may hold 13 in total, i.e. take 6 more."""
    assert admit("A", 6, ("A", 7), ("B", 3)) == []
    v = admit("A", 7, ("A", 7), ("B", 3))
    assert rules(v) == ["quota.cohort"]
    assert v[0].workload == "default/new"
    assert "cohort R" in v[0].message and "above the tree's quota 10 by 1" in (
        v[0].message
    )


def test_hierarchical_example_potential_available() -> None:
    """§2.5: on an idle tree A can reach 15, capped by cohort C's borrowingLimit."""
    assert admit("A", 15) == []
    v = admit("A", 16)
    assert rules(v) == ["quota.borrowing-limit"]
    assert "cohort C" in v[0].message and "by 1" in v[0].message


def test_flat_example_borrowed_quota_must_be_reclaimed() -> None:
    """§2.5 flat: U_A=4, U_B=12 leaves A only 4, not its unused nominal 6."""
    assert admit("fa", 4, ("fa", 4), ("fb", 12)) == []
    assert rules(admit("fa", 5, ("fa", 4), ("fb", 12))) == ["quota.cohort"]


def test_lending_limit_keeps_quota_private() -> None:
    """la lends only 4 of its 10, so lb (6 used) can borrow at most 4 more."""
    assert admit("lb", 4, ("lb", 6)) == []
    v = admit("lb", 5, ("lb", 6))
    assert rules(v) == ["quota.lending-limit"]
    assert "lendingLimits leave only 10" in v[0].message


def test_borrowing_limit_of_a_cluster_queue() -> None:
    """ba may use nominal 10 plus borrowingLimit 2, though bb has 10 idle."""
    assert admit("ba", 12) == []
    v = admit("ba", 13)
    assert rules(v) == ["quota.borrowing-limit"]
    assert "ClusterQueue ba" in v[0].message and "(12) by 1" in v[0].message


def test_inactive_queue_still_counts_in_the_cohort() -> None:
    """ib is inactive, yet its quota (4) and usage (6) stay in the totals."""
    assert admit("ia", 2, ("ib", 6)) == []
    assert rules(admit("ia", 3, ("ib", 6))) == ["quota.cohort"]


def test_unlimited_borrowing_limit_never_binds() -> None:
    """A borrowingLimit beyond int64 saturates; only the cohort total binds."""
    assert admit("ua", 12) == []
    assert rules(admit("ua", 13)) == ["quota.cohort"]


def test_standalone_nominal_quota() -> None:
    """A queue without a cohort is bounded by its nominalQuota alone."""
    assert admit("solo", 4) == []
    v = admit("solo", 5)
    assert rules(v) == ["quota.nominal"]
    assert v[0].message == (
        "ClusterQueue solo (no cohort): usage of cpu in flavor f would be 5, "
        "above its nominalQuota 4 by 1"
    )


@pytest.mark.parametrize(("n", "expected"), [(0, []), (1, ["quota.nominal"])])
def test_overrun_before_the_plan_is_not_its_fault(n: int, expected: list[str]) -> None:
    """solo already runs 6 of 4: fine unless the plan adds usage there."""
    snap = load(
        "cohorts.yaml",
        running("default/old", "solo", 6),
        pending("default/new", max(n, 1), queue="lq-solo"),
        pending("default/elsewhere", 1, queue="lq-fa"),
    )
    admissions = [admission("default/elsewhere", "fa", cpu(1))]
    waiting = ["default/new"]
    if n:
        admissions.append(admission("default/new", "solo", cpu(n)))
        waiting = []
    assert rules(check(snap, plan(admissions, pending=waiting))) == expected


def test_preempted_usage_is_released() -> None:
    """Evicting the running workload frees its quota for the admission."""
    snap = load(
        "cohorts.yaml",
        running("default/old", "solo", 4, priority=-1),
        pending("default/new", 4, queue="lq-solo"),
    )
    base = [admission("default/new", "solo", cpu(4))]
    assert rules(check(snap, plan(base))) == ["quota.nominal"]
    evict = [("default/old", "default/new", "InClusterQueue")]
    assert check(snap, plan(base, preemptions=evict)) == []


def test_admissions_of_one_plan_add_up() -> None:
    """Two admissions that fit alone can overrun together; both are named."""
    snap = load(
        "cohorts.yaml",
        pending("default/a", 3, queue="lq-solo"),
        pending("default/b", 2, queue="lq-solo"),
    )
    v = check(
        snap,
        plan(
            [
                admission("default/a", "solo", cpu(3)),
                admission("default/b", "solo", cpu(2)),
            ]
        ),
    )
    assert rules(v) == ["quota.nominal"]
    assert v[0].workload == "default/a, default/b"
