"""Solver inputs the live loop produces: protected victims, over-full nodes.

The sidecar marks its own recent admissions not preemptible while nothing in
the cluster changed, and its snapshot can hold a node above allocatable while
evicted victims are still releasing.  Every solver must honour the first and
never add to the second; each plan is held against the validator.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml

from placewise.models.snapshot import Snapshot, build_snapshot
from placewise.models.validate import validate
from placewise.solver.solve import SolveParams, solve
from tests.models.test_validate_capacity import held, new
from tests.models.validate_builders import load, pending, running

SOLVERS = ["greedy", "cpsat"]


def _solve(snap: Snapshot, solver: str) -> Any:
    plan = solve(snap, SolveParams(solver=solver, time_limit=2.0, workers=1))
    assert validate(snap, plan) == []
    return plan


def _protect(snap: Snapshot, *keys: str) -> Snapshot:
    objects = snap.objects
    changed = {
        k: objects.workloads[k].model_copy(update={"preemptible": False}) for k in keys
    }
    return build_snapshot(
        dataclasses.replace(objects, workloads={**objects.workloads, **changed})
    )


@pytest.mark.parametrize("solver", SOLVERS)
def test_not_preemptible_victim_is_kept(solver: str) -> None:
    """p2 reclaims from the borrowing ``lender`` (policy Any): the victim goes
    unless it is marked not preemptible; with every candidate protected the
    preemptor stays pending."""
    snap = load(
        "preempt.yaml",
        running("default/victim", "lender", 2),
        running("default/filler", "lender", 4, priority=9),
        running("default/x", "p3", 4),
        running("default/y", "p1", 4),
        pending("default/in", 4, queue="lq-p2", priority=5),
    )
    free = _solve(snap, solver)
    assert [p.workload for p in free.preemptions] == ["default/victim"]
    assert [a.workload for a in free.admissions] == ["default/in"]
    kept = _solve(_protect(snap, "default/victim"), solver)
    assert "default/victim" not in {p.workload for p in kept.preemptions}
    none = _solve(_protect(snap, "default/victim", "default/filler"), solver)
    assert not none.preemptions and not none.admissions
    assert [p.workload for p in none.pending] == ["default/in"]


HOST_CQ = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: host-cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: tas
      resources: [{name: cpu, nominalQuota: "100"}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {namespace: default, name: lq-host}
spec: {clusterQueue: host-cq}
"""


def _in_host_cq(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"]["queueName"] = "lq-host"
    if "status" in obj:
        obj["status"]["admission"]["clusterQueue"] = "host-cq"
    return obj


@pytest.mark.parametrize("solver", SOLVERS)
def test_over_allocatable_leaf_must_end_within_allocatable(solver: str) -> None:
    """h1 (4 cpu) holds a (2) + b (4): 2 over.  A 2-cpu preemptor may use h1
    only if the releases there cover the deficit too (evict b, not just a)."""
    snap = load(
        "tas.yaml",
        *yaml.safe_load_all(HOST_CQ),
        _in_host_cq(held("default/a", "h1", 2)),
        _in_host_cq(held("default/b", "h1", 4)),
        *[
            _in_host_cq(held(f"default/c{i}", f"h{i}", 4, priority=9))
            for i in (2, 3, 4)
        ],
        _in_host_cq(new("default/p", "2", 1, priority=5)),
    )
    plan = _solve(snap, solver)
    assert [a.workload for a in plan.admissions] == ["default/p"]
    assert "default/b" in {p.workload for p in plan.preemptions}
