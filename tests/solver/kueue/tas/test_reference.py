"""The vectorised placer agrees with a naive port of Kueue's algorithm."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import placewise.solver.kueue.tas.distribute as walk
from placewise.solver.kueue.tas import TasPodSetRequest, TasState
from placewise.solver.kueue.tas.request import Params, interpret
from tests.solver.kueue.tas import reference
from tests.solver.kueue.tas.helpers import request
from tests.solver.kueue.tas.test_properties import build, clusters, requests


def naive(
    state: TasState, workers: TasPodSetRequest, leader: TasPodSetRequest | None
) -> tuple[list[tuple[tuple[str, ...], int]], list[tuple[tuple[str, ...], int]]] | None:
    tree = state.tree("tas")
    params = interpret(tree, workers.topology, workers.count, 1 if leader else 0)
    if isinstance(params, str):
        return None
    assert isinstance(params, Params)
    names = state.resources
    free = [
        {r: int(tree.rem[i, leaf]) for i, r in enumerate(names)}
        for leaf in range(tree.n_leaves)
    ]
    mask = tree.leaf_filter(workers.placement, workers.placement.tolerations).mask
    usable = [True] * tree.n_leaves if mask is None else mask.tolist()

    def with_pods(req: TasPodSetRequest) -> dict[str, int]:
        return {**req.requests, "pods": int(req.requests.get("pods", 0)) + 1}

    return reference.place(
        tree,
        free,
        usable,
        with_pods(workers),
        with_pods(leader) if leader else None,
        params,
    )


def paths(state: TasState, ta: object) -> list[tuple[tuple[str, ...], int]]:
    tree = state.tree("tas")
    out = []
    for d in ta.domains:  # type: ignore[attr-defined]
        leaf = tree.leaf_of(d.values)
        assert leaf is not None
        out.append((tree.leaf_paths[leaf], d.count))
    return sorted(out)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_matches_naive_kueue_port(data: st.DataObject) -> None:
    c = data.draw(clusters())
    state = build(c)
    # Some earlier usage, so capacities are uneven and the cache is refreshed.
    warm = data.draw(requests(c.levels))
    placed = state.find_assignments("tas", [[warm]])
    if placed.assignments is not None and data.draw(st.booleans()):
        state.add_usage("tas", placed.assignments["main"], warm.requests)
    workers = data.draw(requests(c.levels))
    leader = None
    if data.draw(st.booleans()):
        leader = request(1, name="leader", cpu=data.draw(st.sampled_from([500, 1000])))
    want = naive(state, workers, leader)
    for small in (walk.SMALL, -1):
        saved, walk.SMALL = walk.SMALL, small
        try:
            group = [workers] if leader is None else [workers, leader]
            got = state.find_assignments("tas", [group])
        finally:
            walk.SMALL = saved
        if want is None:
            assert got.assignments is None
            continue
        assert got.assignments is not None, got.reason
        assert paths(state, got.assignments["main"]) == want[0]
        if leader is not None:
            assert paths(state, got.assignments["leader"]) == want[1]
