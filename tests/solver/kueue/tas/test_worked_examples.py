"""The KEP-2724 examples of kueue-semantics §6.6, and the descent rules of §8.14."""

from __future__ import annotations

from placewise.solver.kueue.tas import TasState
from tests.solver.kueue.tas.helpers import (
    HOST,
    RACK,
    counts,
    node,
    place,
    request,
    snapshot,
)


def rack(*pods: int) -> TasState:
    """One block, one rack, hosts n1.. with room for the given pods each."""
    nodes = [
        node(f"n{i}", ("b1", "r1", f"n{i}"), cpu=1000 * p)
        for i, p in enumerate(pods, start=1)
    ]
    return TasState.build(snapshot(nodes))


def test_best_fit_fills_largest_then_tightest_last() -> None:
    """3,3,2,1 and 7 pods: BestFit takes 3, 3, then the 1-pod node, not the 2."""
    got = place(rack(3, 3, 2, 1), request(7, required=RACK))["main"]
    assert counts(got) == {"n1": 3, "n2": 3, "n4": 1}


def test_least_free_capacity_starts_from_the_smallest() -> None:
    """Unconstrained uses LeastFreeCapacity: 1, 2, 3, then 1 on the last node."""
    got = place(rack(3, 3, 2, 1), request(7, unconstrained=True))["main"]
    assert counts(got) == {"n4": 1, "n3": 2, "n1": 3, "n2": 1}


def test_best_fit_with_slices() -> None:
    """6,5,4,3,2 with host slices of 2: 12 pods become 6, 4, 2."""
    state = rack(6, 5, 4, 3, 2)
    got = place(state, request(12, required=RACK, slices=[(HOST, 2)]))["main"]
    assert counts(got) == {"n1": 6, "n3": 4, "n5": 2}


def test_least_free_capacity_with_slices() -> None:
    """Slice-only request, 10 pods: 2 on the "5" node, 4, 2, 2; "6" unused."""
    state = rack(6, 5, 4, 3, 2)
    got = place(state, request(10, slices=[(HOST, 2)]))["main"]
    assert counts(got) == {"n2": 2, "n3": 4, "n4": 2, "n5": 2}


def test_required_rack_picks_the_tightest_rack() -> None:
    """BestFit at the requested level: the smallest rack that holds all pods."""
    nodes = [
        node("a1", ("b1", "r1", "a1"), cpu=4000),
        node("a2", ("b1", "r1", "a2"), cpu=4000),
        node("c1", ("b1", "r2", "c1"), cpu=3000),
        node("c2", ("b1", "r2", "c2"), cpu=2000),
        node("d1", ("b2", "r3", "d1"), cpu=1000),
    ]
    got = place(TasState.build(snapshot(nodes)), request(5, required=RACK))["main"]
    assert counts(got) == {"c1": 3, "c2": 2}


def test_preferred_climbs_one_level_then_spreads_at_the_top() -> None:
    """No rack holds 6 pods: a block does; no block holds 9: spread at the top."""
    nodes = [
        node("a1", ("b1", "r1", "a1"), cpu=3000),
        node("a2", ("b1", "r2", "a2"), cpu=3000),
        node("c1", ("b2", "r3", "c1"), cpu=3000),
    ]
    state = TasState.build(snapshot(nodes))
    got = place(state, request(6, preferred=RACK))["main"]
    assert counts(got) == {"a1": 3, "a2": 3}
    got = place(state, request(9, preferred=RACK))["main"]
    assert counts(got) == {"a1": 3, "a2": 3, "c1": 3}


def test_required_failure_reason() -> None:
    """Kueue's wording, with the topology name."""
    result = rack(2, 1).find_assignments("tas", [[request(4, required=RACK)]])
    assert result.assignments is None
    assert result.failed_pod_set == "main"
    assert result.reason == 'topology "default" allows to fit only 3 out of 4 pod(s)'


def test_pooled_descent_ignores_parent_shares_above_slice_level() -> None:
    """Without slices the descent pools all chosen racks' hosts: the tightest
    host wins even if its rack was not the one that "covered" the remainder."""
    nodes = [
        node("a1", ("b1", "r1", "a1"), cpu=4000),
        node("a2", ("b1", "r1", "a2"), cpu=1000),
        node("c1", ("b1", "r2", "c1"), cpu=3000),
    ]
    state = TasState.build(snapshot(nodes))
    got = place(state, request(5, required="block"))["main"]
    assert counts(got) == {"a1": 4, "a2": 1}


def test_output_levels_without_hostname() -> None:
    """Non-hostname lowest level: all levels, full value paths, sorted."""
    levels = ("block", "rack")
    nodes = [
        node("n1", ("b1", "r2"), levels=levels, cpu=2000),
        node("n2", ("b1", "r1"), levels=levels, cpu=1000),
        node("n3", ("b1", "r1"), levels=levels, cpu=1000),
    ]
    state = TasState.build(snapshot(nodes, levels=levels))
    got = place(state, request(4, required="block"))["main"]
    assert got.levels == levels
    assert [(d.values, d.count) for d in got.domains] == [
        (("b1", "r1"), 2),
        (("b1", "r2"), 2),
    ]


def test_leader_and_workers_share_the_required_domain() -> None:
    """The smaller pod set leads; both land in one rack, leader on a free host."""
    nodes = [
        node("a1", ("b1", "r1", "a1"), cpu=2000),
        node("a2", ("b1", "r1", "a2"), cpu=2000),
        node("c1", ("b2", "r2", "c1"), cpu=8000),
    ]
    state = TasState.build(snapshot(nodes))
    workers = request(4, name="workers", required=RACK)
    leader = request(1, name="leader", cpu=500)
    result = state.find_assignments("tas", [[leader, workers]])
    assert result.assignments is not None, result.reason
    assert counts(result.assignments["workers"]) == {"c1": 4}
    assert counts(result.assignments["leader"]) == {"c1": 1}


def test_groups_see_earlier_groups_usage() -> None:
    """Assumed usage: the second pod set cannot reuse what the first took."""
    state = rack(2)
    result = state.find_assignments(
        "tas", [[request(2, name="a")], [request(1, name="b")]]
    )
    assert result.assignments is None
    assert result.failed_pod_set == "b"
    assert state.find_assignments("tas", [[request(2, name="a")]]).assignments
