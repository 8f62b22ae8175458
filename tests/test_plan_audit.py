"""The suite-wide plan audit (tests/plan_audit.py) checks what it claims."""

from __future__ import annotations

import importlib
import threading

import pytest

from placewise.models.plan import Plan, PlanPending, SolverInfo
from placewise.models.snapshot import Snapshot
from placewise.solver.solve import SolveParams, solve
from tests.helpers import NS, cq_yaml, flavor_yaml, snapshot
from tests.plan_audit import AUDIT, Audit, PlanRejected, _plan

WORKLOAD = """apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: default, creationTimestamp: '2026-01-01T00:00:00Z'}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template:
      spec:
        containers:
        - {name: c, resources: {requests: {cpu: '1'}}}
"""


@pytest.fixture
def snap() -> Snapshot:
    return snapshot(NS, flavor_yaml(), cq_yaml("cq"), WORKLOAD)


SOLVER = SolverInfo(name="fake", status="FEASIBLE")
FORGETFUL = Plan(solver=SOLVER)
"""Leaves the pending workload out: bookkeeping.missing."""


def honest(snap: Snapshot) -> Plan:
    return Plan(
        solver=SOLVER,
        pending=tuple(PlanPending(workload=w.key, reason="x") for w in snap.pending),
    )


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("placewise.solver.solve", "solve"),
        ("placewise.solver.greedy", "solve_greedy"),
        ("placewise.solver.greedy.solver", "solve_greedy"),
        ("placewise.solver.cpsat", "solve_cpsat"),
        ("placewise.solver.cpsat.solve", "solve_cpsat"),
        ("placewise.solver.baselines", "run_kube_default"),
        ("placewise.solver.baselines", "run_binpack_gang"),
        ("placewise.adapters.cli.common", "solve"),
        ("placewise.adapters.serve.engine.solveloop", "solve"),
    ],
)
def test_entry_points_are_wrapped_where_callers_bind_them(
    module: str, name: str
) -> None:
    """Test modules, the CLI and the sidecar all get the validating wrapper."""
    fn = getattr(importlib.import_module(module), name)
    assert hasattr(fn, "__audited__"), f"{module}.{name} is not audited"


def test_a_rejected_plan_fails_the_test_thread(snap: Snapshot) -> None:
    audit = Audit()
    bad = audit.wrap(lambda snapshot: FORGETFUL, _plan)
    with pytest.raises(PlanRejected, match=r"bookkeeping\.missing"):
        bad(snap)
    assert audit.validated == {"fake": 1}


def test_a_rejection_in_another_thread_is_kept_for_teardown(snap: Snapshot) -> None:
    audit = Audit()
    bad = audit.wrap(lambda snapshot: FORGETFUL, _plan)
    worker = threading.Thread(target=bad, args=(snap,))
    worker.start()
    worker.join()
    [error] = audit.take_errors()
    assert "bookkeeping.missing" in error and "fake plan" in error
    assert audit.take_errors() == []


def test_a_marked_test_counts_rejections_instead(snap: Snapshot) -> None:
    audit = Audit(allow=True)
    audit.wrap(lambda snapshot: FORGETFUL, _plan)(snap)
    assert audit.allowed == 1 and audit.errors == []


def test_nested_entry_points_validate_once(snap: Snapshot) -> None:
    """``solve`` calling ``solve_cpsat`` is one plan, checked once."""
    audit = Audit()
    inner = audit.wrap(lambda snapshot: honest(snapshot), _plan)
    outer = audit.wrap(lambda snapshot, params=None: inner(snapshot), _plan)
    outer(snap)
    inner(snap)
    assert audit.validated == {"fake": 2}


def test_the_real_dispatcher_is_counted_once(snap: Snapshot) -> None:
    before = sum(AUDIT.validated.values())
    plan = solve(snap, SolveParams(solver="greedy"))
    assert [a.workload for a in plan.admissions] == ["default/w"]
    assert sum(AUDIT.validated.values()) == before + 1
