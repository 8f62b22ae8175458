"""Pod-set rules: names and order, counts and minCount, resourceUsage."""

from __future__ import annotations

from typing import Any

import pytest

from placewise.models.snapshot import Snapshot
from tests.models.validate_builders import (
    admission,
    check,
    load,
    plan,
    pod_set,
    psa,
    rules,
    workload,
)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    """A driver + elastic workers workload, and one in a queue covering pods."""
    return load(
        "flat.yaml",
        workload(
            "default/job",
            "lq",
            [
                pod_set("driver", 1, {"cpu": "1"}),
                pod_set("workers", 4, {"cpu": "2", "memory": "1Gi"}, min_count=2),
            ],
        ),
        workload("default/podsy", "lq-pods", [pod_set("main", 3, {"cpu": "500m"})]),
    )


def driver(**kw: Any) -> dict[str, Any]:
    return psa("driver", {"cpu": "f"}, {"cpu": "1"}, **kw)


def workers(count: int = 4, **kw: Any) -> dict[str, Any]:
    usage = kw.pop("usage", {"cpu": str(2 * count), "memory": f"{count}Gi"})
    return psa("workers", {"cpu": "f", "memory": "f"}, usage, count, **kw)


def podsy(**kw: Any) -> dict[str, Any]:
    kw.setdefault("usage", {"cpu": "1500m", "pods": "3"})
    return psa("main", {"cpu": "f", "pods": "f"}, count=3, **kw)


def test_full_and_partial_admission_pass(snap: Snapshot) -> None:
    """Spec order, count within [minCount, count], usage scaled: feasible."""
    for count in (4, 3, 2):
        p = plan(
            [
                admission("default/job", "cq", driver(), workers(count)),
                admission("default/podsy", "pods-cq", podsy()),
            ]
        )
        assert check(snap, p) == [], count


def test_pod_set_names_must_match_spec(snap: Snapshot) -> None:
    """A missing pod set is named in the message."""
    p = plan(
        [
            admission("default/job", "cq", workers()),
            admission("default/podsy", "pods-cq", podsy()),
        ]
    )
    v = check(snap, p)
    assert rules(v) == ["podsets.names"]
    assert "missing driver" in v[0].message


def test_pod_set_order_must_match_spec(snap: Snapshot) -> None:
    """Kueue writes assignments in spec order; so must a plan."""
    p = plan(
        [
            admission("default/job", "cq", workers(), driver()),
            admission("default/podsy", "pods-cq", podsy()),
        ]
    )
    v = check(snap, p)
    assert rules(v) == ["podsets.names"]
    assert "order" in v[0].message


def test_count_below_min_count(snap: Snapshot) -> None:
    """Partial admission stops at minCount."""
    p = plan(
        [
            admission("default/job", "cq", driver(), workers(1)),
            admission("default/podsy", "pods-cq", podsy()),
        ]
    )
    v = check(snap, p)
    assert rules(v) == ["podsets.count"]
    assert "below minCount 2" in v[0].message


def test_count_above_spec(snap: Snapshot) -> None:
    """No pod set is admitted with more pods than it asked for.

    The extra pod's 2 cpu also push the queue over its 10 cpu, reported too.
    """
    p = plan(
        [
            admission("default/job", "cq", driver(), workers(5)),
            admission("default/podsy", "pods-cq", podsy()),
        ]
    )
    assert rules(check(snap, p)) == ["podsets.count", "quota.nominal"]


def test_partial_count_without_min_count(snap: Snapshot) -> None:
    """Without minCount a pod set is all or nothing."""
    p = plan(
        [
            admission("default/job", "cq", driver(), workers()),
            admission(
                "default/podsy",
                "pods-cq",
                psa("main", {"cpu": "f", "pods": "f"}, {"cpu": "1", "pods": "2"}, 2),
            ),
        ]
    )
    v = check(snap, p)
    assert rules(v) == ["podsets.count"]
    assert "has no minCount" in v[0].message


def test_resource_usage_must_be_requests_times_count(snap: Snapshot) -> None:
    """Under-declared usage would hide quota; the difference is spelled out."""
    p = plan(
        [
            admission(
                "default/job",
                "cq",
                driver(),
                workers(usage={"cpu": "6", "memory": "4Gi"}),
            ),
            admission("default/podsy", "pods-cq", podsy()),
        ]
    )
    v = check(snap, p)
    assert rules(v) == ["podsets.resource-usage"]
    assert "cpu is 6, expected 8" in v[0].message


def test_resource_usage_includes_pods_when_covered(snap: Snapshot) -> None:
    """A queue covering ``pods`` holds one unit per admitted pod."""
    p = plan(
        [
            admission("default/job", "cq", driver(), workers()),
            admission("default/podsy", "pods-cq", podsy(usage={"cpu": "1500m"})),
        ]
    )
    v = check(snap, p)
    assert "podsets.resource-usage" in rules(v)
    assert "pods is 0, expected 3" in v[0].message
