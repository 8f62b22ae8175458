"""Node capacity on TAS flavors (``tas.yaml``: 4 cpu and 4 pods per node)."""

from __future__ import annotations

from typing import Any

from placewise.models.validate import Violation
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


def new(key: str, cpu: str, count: int = 1, **kw: Any) -> dict[str, Any]:
    """A pending TAS workload of ``count`` pods requesting ``cpu`` each."""
    return workload(key, "lq", [pod_set(count=count, requests={"cpu": cpu})], **kw)


def on(
    key: str, host: str, cpu_each: int, count: int = 1, flavor: str = "tas"
) -> dict[str, Any]:
    """Admission of ``key`` with all its pods on one host."""
    return admission(
        key,
        "tas-cq",
        psa(
            "main",
            {"cpu": flavor},
            {"cpu": str(cpu_each * count)},
            count,
            domains=[([host], count)],
        ),
    )


def held(
    key: str,
    host: str,
    cpu_each: int,
    count: int = 1,
    flavor: str = "tas",
    priority: int = 0,
) -> dict[str, Any]:
    """A running TAS workload with its pods on one host."""
    return workload(
        key,
        "lq",
        [pod_set(count=count, requests={"cpu": str(cpu_each)})],
        priority=priority,
        running_in="tas-cq",
        assignments=[
            psa(
                "main",
                {"cpu": flavor},
                {"cpu": str(cpu_each * count)},
                count,
                domains=[([host], count)],
            )
        ],
    )


def bound_pod(name: str, node: str, cpu: str) -> dict[str, Any]:
    """A plain (non-TAS) pod bound to a node."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "default", "name": name},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
        },
        "status": {"phase": "Running"},
    }


def test_pods_within_allocatable_pass() -> None:
    """Two 2-cpu pods fill h1's 4 cpu exactly: feasible."""
    snap = load("tas.yaml", new("default/w", "2", 2))
    assert check(snap, plan([on("default/w", "h1", 2, 2)])) == []


def test_node_cpu_overcommitted() -> None:
    """Three 2-cpu pods on a 4-cpu node: over by 2, spelled out."""
    snap = load("tas.yaml", new("default/w", "2", 3))
    v = check(snap, plan([on("default/w", "h1", 2, 3)]))
    assert rules(v) == ["capacity.node"]
    assert v[0].message.startswith("node node-1: cpu would be 6 in use")
    assert v[0].message.endswith("above allocatable 4 by 2")


def test_pods_allocatable_counts() -> None:
    """Each pod takes one of the node's 4 ``pods`` even with tiny requests."""
    snap = load("tas.yaml", new("default/w", "100m", 5))
    entry = admission(
        "default/w",
        "tas-cq",
        psa("main", {"cpu": "tas"}, {"cpu": "500m"}, 5, domains=[(["h1"], 5)]),
    )
    v = check(snap, plan([entry]))
    assert rules(v) == ["capacity.node"]
    assert "pods would be 5 in use" in v[0].message


def test_bound_non_tas_pods_use_capacity() -> None:
    """A 3-cpu pod bound to node-1 leaves 1 cpu there, none of node-2's."""
    snap = load("tas.yaml", new("default/w", "2"), bound_pod("daemon", "node-1", "3"))
    assert rules(check(snap, plan([on("default/w", "h1", 2)]))) == ["capacity.node"]
    assert check(snap, plan([on("default/w", "h2", 2)])) == []


def test_running_tas_workloads_use_capacity_until_preempted() -> None:
    """A running 3-cpu pod on h1 blocks a 2-cpu pod, unless it is evicted."""
    snap = load(
        "tas.yaml", new("default/w", "2", priority=1), held("default/old", "h1", 3)
    )
    assert rules(check(snap, plan([on("default/w", "h1", 2)]))) == ["capacity.node"]
    evict = [("default/old", "default/w", "InClusterQueue")]
    assert check(snap, plan([on("default/w", "h1", 2)], preemptions=evict)) == []


def test_flavors_on_the_same_nodes_share_capacity() -> None:
    """Usage of flavor tas-b on node-1 counts against flavor tas there too."""
    snap = load(
        "tas.yaml", new("default/w", "2"), held("default/old", "h1", 3, flavor="tas-b")
    )
    assert rules(check(snap, plan([on("default/w", "h1", 2)]))) == ["capacity.node"]


def test_admissions_of_one_plan_share_nodes() -> None:
    """Two admissions that each fit h1 alone overcommit it together."""
    snap = load("tas.yaml", new("default/a", "3"), new("default/b", "2"))
    v = check(snap, plan([on("default/a", "h1", 3), on("default/b", "h1", 2)]))
    assert rules(v) == ["capacity.node"]
    assert v[0].workload == "default/a, default/b"


def test_pooled_domain_capacity() -> None:
    """Rack b1/r1 of the host-less topology pools node-1 and node-2 (8 cpu)."""
    levels = ["cloud/block", "cloud/rack"]

    def rack(count: int) -> list[Violation]:
        snap = load("tas.yaml", new("default/w", "1", count))
        entry = psa(
            "main",
            {"cpu": "pooled"},
            {"cpu": str(count)},
            count,
            domains=[(["b1", "r1"], count)],
            levels=levels,
        )
        return check(snap, plan([admission("default/w", "tas-cq", entry)]))

    assert rack(8) == []
    v = rack(9)
    assert rules(v) == ["capacity.domain", "capacity.domain"]  # cpu and pods
    assert "domain b1/r1 of flavor pooled" in v[0].message
