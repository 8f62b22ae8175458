"""Capacity accounting: non-TAS pods, running TAS workloads, shared nodes,
incremental usage, ``fits``, simulate-empty and overflow guards."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from placewise.models.cluster import ClusterQueue, Pod, ResourceFlavor, Topology
from placewise.models.quantity import UNLIMITED
from placewise.models.snapshot import Objects, Snapshot
from placewise.models.workload import (
    Admission,
    PodSet,
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
    Workload,
)
from placewise.solver.kueue.tas import TasState
from tests.solver.kueue.tas.helpers import (
    HOST,
    LEVELS3,
    RACK,
    counts,
    node,
    place,
    request,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def hosts(*values: str) -> TopologyAssignment:
    return TopologyAssignment(
        levels=(HOST,),
        domains=tuple(TopologyDomain(values=(v,), count=1) for v in values),
    )


def running(name: str, flavor: str, ta: TopologyAssignment, cpu: int) -> Workload:
    """An admitted workload whose pods use ``cpu`` milli-CPU each on ``ta``."""
    n = sum(d.count for d in ta.domains)
    psa = PodSetAssignment(
        name="main",
        flavors={"cpu": flavor},
        count=n,
        resource_usage={"cpu": cpu * n, "pods": n},
        topology_assignment=ta,
    )
    return Workload(
        namespace="default",
        name=name,
        creation_timestamp=T0,
        queue_order_timestamp=T0,
        pod_sets=(PodSet(name="main", count=n, requests={"cpu": cpu}),),
        admission=Admission(cluster_queue="cq", pod_set_assignments=(psa,)),
        quota_reserved=True,
    )


def build(
    nodes: list,
    flavors: list[ResourceFlavor] | None = None,
    workloads: tuple[Workload, ...] = (),
    pods: tuple[Pod, ...] = (),
) -> TasState:
    rfs = flavors or [ResourceFlavor(name="tas", topology_name="default")]
    snap = Snapshot(
        Objects(
            flavors={f.name: f for f in rfs},
            topologies={"default": Topology(name="default", levels=LEVELS3)},
            nodes={n.name: n for n in nodes},
            cluster_queues={"cq": ClusterQueue(name="cq")},
            workloads={w.key: w for w in workloads},
            pods={f"{p.namespace}/{p.name}": p for p in pods},
        )
    )
    return TasState.build(snap)


def two_hosts() -> list:
    return [
        node("x1", ("b1", "r1", "x1"), cpu=2000),
        node("x2", ("b1", "r1", "x2"), cpu=2000),
    ]


def test_non_tas_pods_reduce_capacity_including_pods_count() -> None:
    ds = Pod(
        namespace="kube-system",
        name="ds",
        node_name="x1",
        requests={"cpu": 1500},
        phase="Running",
    )
    done = Pod(
        namespace="default",
        name="old",
        node_name="x2",
        requests={"cpu": 2000},
        phase="Succeeded",
    )
    state = build(two_hosts(), pods=(ds, done))
    got = place(state, request(2, required=RACK))["main"]
    assert counts(got) == {"x2": 2}
    tree = state.tree("tas")
    assert tree.rem[state.resource_index["pods"], tree.leaf_by_host["x1"]] == 109


def test_running_tas_workload_usage_and_record() -> None:
    wl = running("busy", "tas", hosts("x1"), cpu=2000)
    state = build(two_hosts(), workloads=(wl,))
    assert counts(place(state, request(2))["main"]) == {"x2": 2}
    # resourceUsage // count, without pods (the placer adds one per pod).
    assert state.workload_usage("default/busy") == [("tas", hosts("x1"), {"cpu": 2000})]
    # Simulate-empty ignores it.
    got = place(state, request(4, required=RACK), empty=True)["main"]
    assert counts(got) == {"x1": 2, "x2": 2}


def test_removing_a_running_workload_frees_its_hosts() -> None:
    wl = running("busy", "tas", hosts("x1", "x2"), cpu=2000)
    state = build(two_hosts(), workloads=(wl,))
    assert state.find_assignments("tas", [[request(1)]]).assignments is None
    for flavor, ta, per_pod in state.workload_usage("default/busy"):
        state.remove_usage(flavor, ta, per_pod)
    assert counts(place(state, request(4, required=RACK))["main"]) == {"x1": 2, "x2": 2}


def test_add_remove_round_trip_is_exact() -> None:
    state = build(two_hosts())
    tree = state.tree("tas")
    before = tree.rem.copy()
    ta = place(state, request(3, required=RACK))["main"]
    state.add_usage("tas", ta, {"cpu": 1000})
    assert not np.array_equal(tree.rem, before)
    assert state.fits("tas", hosts("x1"), {"cpu": 1000}) != state.fits(
        "tas", hosts("x2"), {"cpu": 1000}
    )
    state.remove_usage("tas", ta, {"cpu": 1000})
    assert np.array_equal(tree.rem, before)


def test_fits_checks_every_domain_and_pods() -> None:
    state = build([node("x1", ("b1", "r1", "x1"), cpu=4000, pods=2)])
    two = TopologyAssignment(
        levels=(HOST,), domains=(TopologyDomain(values=("x1",), count=2),)
    )
    three = TopologyAssignment(
        levels=(HOST,), domains=(TopologyDomain(values=("x1",), count=3),)
    )
    assert state.fits("tas", two, {"cpu": 1000})
    assert not state.fits("tas", three, {"cpu": 1000})  # only 2 pods allowed
    assert not state.fits("tas", hosts("nowhere"), {"cpu": 1})
    state.add_usage("tas", hosts("x1"), {"cpu": 3000})
    assert not state.fits("tas", hosts("x1"), {"cpu": 1500})
    assert state.fits("tas", hosts("x1"), {"cpu": 1000})


def test_flavors_sharing_nodes_share_capacity() -> None:
    """TASHandleOverlappingFlavors: usage in one flavor is seen by the other."""
    nodes = [
        node("x1", ("b1", "r1", "x1"), cpu=2000, labels={"pool": "a"}),
        node("x2", ("b1", "r1", "x2"), cpu=2000, labels={"pool": "a"}),
    ]
    rfs = [
        ResourceFlavor(name="tas", topology_name="default"),
        ResourceFlavor(
            name="tas-a", node_labels={"pool": "a"}, topology_name="default"
        ),
    ]
    wl = running("busy", "tas-a", hosts("x1"), cpu=2000)
    state = build(nodes, flavors=rfs, workloads=(wl,))
    assert state.flavors() == ["tas", "tas-a"]
    assert counts(place(state, request(2), flavor="tas")["main"]) == {"x2": 2}
    ta = place(state, request(2), flavor="tas")["main"]
    state.add_usage("tas", ta, {"cpu": 1000})
    assert state.find_assignments("tas-a", [[request(1)]]).assignments is None
    state.remove_usage("tas", ta, {"cpu": 1000})
    assert state.find_assignments("tas-a", [[request(1)]]).assignments is not None


def test_workload_assignments_share_assumed_usage_across_flavors() -> None:
    """Two flavors on the same host: the second pod set sees the first's pods,
    also when simulating an empty cluster."""
    nodes = [node("x1", ("b1", "r1", "x1"), cpu=2000, labels={"pool": "a"})]
    rfs = [
        ResourceFlavor(name="tas", topology_name="default"),
        ResourceFlavor(
            name="tas-a", node_labels={"pool": "a"}, topology_name="default"
        ),
    ]
    state = build(nodes, flavors=rfs)
    for empty in (False, True):
        result = state.find_workload_assignments(
            {"tas": [[request(2, name="one")]], "tas-a": [[request(1, name="two")]]},
            empty=empty,
        )
        assert result.assignments is None
        assert result.failed_pod_set == "two"
    ok = state.find_workload_assignments(
        {"tas": [[request(1, name="one")]], "tas-a": [[request(1, name="two")]]}
    )
    assert ok.assignments is not None and set(ok.assignments) == {"one", "two"}


def test_unlimited_quantities_do_not_wrap() -> None:
    """Allocatable beyond int64 behaves as unlimited, never as negative."""
    nodes = [
        node("x1", ("b1", "r1", "x1"), cpu=UNLIMITED, pods=UNLIMITED, memory=UNLIMITED)
    ]
    state = build(nodes)
    got = place(state, request(1000, memory=2**40))["main"]
    assert counts(got) == {"x1": 1000}
    got = place(state, request(1, memory=UNLIMITED))["main"]
    assert counts(got) == {"x1": 1}
    assert state.find_assignments("tas", [[request(2, memory=UNLIMITED)]]).reason
    huge = TopologyAssignment(
        levels=(HOST,), domains=(TopologyDomain(values=("x1",), count=2**31 - 1),)
    )
    state.add_usage("tas", huge, {"cpu": UNLIMITED})
    assert state.find_assignments("tas", [[request(1)]]).assignments is None


def test_unknown_resource_fits_nowhere() -> None:
    state = build(two_hosts())
    result = state.find_assignments("tas", [[request(1, **{"example.com/gpu": 1})]])
    assert result.assignments is None
    assert (
        result.reason is not None and 'resource "example.com/gpu": 2' in result.reason
    )


def test_unknown_flavor_is_a_failure_not_an_exception() -> None:
    result = build(two_hosts()).find_assignments("nope", [[request(1)]])
    assert result.assignments is None and result.failed_pod_set == "main"
