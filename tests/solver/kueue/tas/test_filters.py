"""Per-node filters: applied to hostname leaves only (kueue-semantics §6.2)."""

from __future__ import annotations

from placewise.models.cluster import ResourceFlavor
from placewise.models.scheduling import (
    NodeSelectorTerm,
    PodPlacement,
    Requirement,
    Taint,
    Toleration,
)
from placewise.solver.kueue.tas import TasPodSetRequest, TasState
from tests.solver.kueue.tas.helpers import counts, node, place, request, snapshot

GPU_TAINT = Taint(key="gpu", value="true", effect="NoSchedule")


def tainted_pair(flavor_tolerations: tuple[Toleration, ...] = ()) -> TasState:
    nodes = [
        node("x1", ("b1", "r1", "x1"), cpu=4000, taints=[GPU_TAINT]),
        node(
            "x2",
            ("b1", "r1", "x2"),
            cpu=1000,
            taints=[Taint(key="soft", effect="PreferNoSchedule")],
        ),
    ]
    rf = ResourceFlavor(
        name="tas", topology_name="default", tolerations=flavor_tolerations
    )
    return TasState.build(snapshot(nodes, flavors=[rf]))


def test_untolerated_taint_excludes_the_node_and_is_reported() -> None:
    state = tainted_pair()
    assert counts(place(state, request(1))["main"]) == {"x2": 1}
    result = state.find_assignments("tas", [[request(2, required="rack")]])
    assert result.reason == (
        'topology "default" allows to fit only 1 out of 2 pod(s). Total nodes: 2; '
        'excluded: taint "gpu=true:NoSchedule": 1'
    )


def test_toleration_from_pod_flavor_or_caller() -> None:
    tol = Toleration(key="gpu", operator="Exists")
    by_pod = request(5, required="rack", tolerations=[tol])
    assert counts(place(tainted_pair(), by_pod)["main"]) == {"x1": 4, "x2": 1}
    by_flavor = tainted_pair(flavor_tolerations=(tol,))
    assert counts(place(by_flavor, request(5, required="rack"))["main"]) == {
        "x1": 4,
        "x2": 1,
    }
    result = tainted_pair().find_assignments(
        "tas", [[request(5, required="rack")]], tolerations=[tol]
    )
    assert result.assignments is not None


def test_full_node_selector_and_required_affinity() -> None:
    nodes = [
        node("n-a", ("b1", "r1", "a"), cpu=1000, labels={"zone": "z1"}),
        node("n-b", ("b1", "r1", "b"), cpu=1000, labels={"zone": "z2"}),
        node("n-c", ("b1", "r1", "c"), cpu=1000),
    ]
    state = TasState.build(snapshot(nodes))
    # The selector key is not a flavor label: it still filters on hostname leaves.
    assert counts(place(state, request(1, selector={"zone": "z2"}))["main"]) == {"b": 1}
    by_name = NodeSelectorTerm(
        match_fields=(Requirement(key="metadata.name", operator="In", values=("n-c",)),)
    )
    affinity = TasPodSetRequest(
        name="main",
        count=1,
        requests={"cpu": 1000},
        topology=request(1).topology,
        placement=PodPlacement(required_terms=(by_name,)),
    )
    assert counts(place(state, affinity)["main"]) == {"c": 1}
    result = state.find_assignments(
        "tas", [[request(2, selector={"zone": "z1"}, required="rack")]]
    )
    assert result.reason == (
        'topology "default" allows to fit only 1 out of 2 pod(s). Total nodes: 3; '
        "excluded: nodeSelector: 2"
    )


def test_no_filters_when_leaves_aggregate_nodes() -> None:
    """A rack-level leaf pools its nodes; taints and selectors are not checked."""
    levels = ("block", "rack")
    nodes = [
        node("n1", ("b1", "r1"), levels=levels, cpu=1000, taints=[GPU_TAINT]),
        node("n2", ("b1", "r1"), levels=levels, cpu=1000),
    ]
    state = TasState.build(snapshot(nodes, levels=levels))
    got = place(state, request(2, selector={"zone": "nowhere"}))["main"]
    assert [(d.values, d.count) for d in got.domains] == [(("b1", "r1"), 2)]
