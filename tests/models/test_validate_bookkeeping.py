"""Bookkeeping rules: every name in a plan refers to the right workload."""

from __future__ import annotations

import pytest

from placewise.models.snapshot import Snapshot
from tests.models.validate_builders import (
    admission,
    check,
    load,
    pending,
    plan,
    policy_rules,
    rules,
    running,
    workload,
)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    """Two pending workloads and one running, all in ClusterQueue cq."""
    return load(
        "flat.yaml",
        pending("default/a"),
        pending("default/b"),
        running("default/r", "cq", 2, priority=-1),
        workload("default/w-broken", "lq-broken"),
        workload("other/x", "lq"),
        workload("default/in-other", "lq-other"),
    )


BLOCKED = ["default/w-broken", "other/x"]


def test_valid_plan_passes(snap: Snapshot) -> None:
    """Each pending workload once, the admission in its own queue: feasible."""
    p = plan(
        [admission("default/a", "cq"), admission("default/in-other", "other-cq")],
        pending=["default/b", *BLOCKED],
    )
    assert check(snap, p) == []


def test_missing_pending_workload(snap: Snapshot) -> None:
    """A pending workload left out of the plan is reported by name."""
    p = plan([admission("default/a", "cq")], pending=["default/in-other", *BLOCKED])
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.missing"]
    assert v[0].workload == "default/b"


def test_duplicate_admitted_and_pending(snap: Snapshot) -> None:
    """Admitted and also listed pending is two appearances, not one."""
    p = plan(
        [admission("default/a", "cq")],
        pending=["default/a", "default/b", "default/in-other", *BLOCKED],
    )
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.duplicate"]
    assert "admissions 1 time(s) and in pending 1 time(s)" in v[0].message


def test_unknown_workload(snap: Snapshot) -> None:
    """Names that are not in the instance are rejected wherever they appear."""
    p = plan(
        [admission("default/ghost", "cq")],
        pending=["default/a", "default/b", "default/in-other", *BLOCKED],
    )
    assert rules(check(snap, p)) == ["bookkeeping.unknown-workload"]


def test_running_workload_cannot_be_admitted(snap: Snapshot) -> None:
    """A running workload already holds quota; admitting it again is wrong."""
    p = plan(
        [admission("default/r", "cq")],
        pending=["default/a", "default/b", "default/in-other", *BLOCKED],
    )
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.not-pending"]
    assert "already running in ClusterQueue cq" in v[0].message


def test_preempting_a_pending_workload(snap: Snapshot) -> None:
    """Only running workloads can be preempted."""
    p = plan(
        [admission("default/a", "cq")],
        pending=["default/b", "default/in-other", *BLOCKED],
        preemptions=[("default/b", "default/a", "InClusterQueue")],
    )
    assert rules(check(snap, p)) == ["bookkeeping.victim-not-running"]


def test_preempting_twice(snap: Snapshot) -> None:
    """A victim is evicted once; naming it twice is a bookkeeping error."""
    p = plan(
        [admission("default/a", "cq")],
        pending=["default/b", "default/in-other", *BLOCKED],
        preemptions=[("default/r", "default/a", "InClusterQueue")] * 2,
    )
    assert policy_rules(check(snap, p)) == ["bookkeeping.victim-duplicate"]


def test_preemptor_must_be_pending(snap: Snapshot) -> None:
    """The preemptor is a pending workload, not a running one."""
    p = plan(
        [admission("default/a", "cq")],
        pending=["default/b", "default/in-other", *BLOCKED],
        preemptions=[("default/r", "default/r", "InClusterQueue")],
    )
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.preemptor"]
    assert "preemptor default/r must be a pending workload" in v[0].message


def test_admission_to_another_cluster_queue(snap: Snapshot) -> None:
    """An admission goes to the ClusterQueue of the workload's LocalQueue."""
    p = plan(
        [admission("default/a", "other-cq")],
        pending=["default/b", "default/in-other", *BLOCKED],
    )
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.cluster-queue"]
    assert "points to cq" in v[0].message


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("default/w-broken", "inactive"),
        ("other/x", "namespaceSelector"),
    ],
)
def test_blocked_workload_cannot_be_admitted(
    snap: Snapshot, key: str, why: str
) -> None:
    """Inactive queue or namespace mismatch: Kueue never admits these."""
    cq = "broken" if key == "default/w-broken" else "cq"
    others = [k for k in BLOCKED if k != key]
    p = plan(
        [admission(key, cq)],
        pending=["default/a", "default/b", "default/in-other", *others],
    )
    v = check(snap, p)
    assert rules(v) == ["bookkeeping.not-admissible"]
    assert why in v[0].message


def test_every_violation_is_reported(snap: Snapshot) -> None:
    """The validator lists all problems, not just the first."""
    p = plan([admission("default/ghost", "cq"), admission("default/r", "cq")])
    assert rules(check(snap, p)) == [
        "bookkeeping.missing",
        "bookkeeping.missing",
        "bookkeeping.missing",
        "bookkeeping.missing",
        "bookkeeping.missing",
        "bookkeeping.not-pending",
        "bookkeeping.unknown-workload",
    ]
