"""The per-shape fit-count cache never serves a stale count."""

from __future__ import annotations

import random

import numpy as np

import placewise.solver.kueue.tas.capacity as capacity
from placewise.solver.kueue.tas import TasState
from placewise.solver.kueue.tas.capacity import fit_count
from tests.solver.kueue.tas.helpers import counts, node, place, request, snapshot


def test_cached_counts_follow_every_usage_change(monkeypatch: object) -> None:
    """Random add/remove sequences, including log overflow, versus recomputing."""
    monkeypatch.setattr(capacity, "_LOG_LIMIT", 7)  # type: ignore[attr-defined]
    rng = random.Random(7)
    nodes = [
        node(f"h{i}", (f"b{i % 2}", f"r{i % 4}", f"h{i}"), cpu=rng.randint(0, 8) * 1000)
        for i in range(16)
    ]
    state = TasState.build(snapshot(nodes))
    tree = state.tree("tas")
    shapes = [{"cpu": 1000}, {"cpu": 3000}, {"cpu": 500, "memory": 0}]
    live = []
    for step in range(200):
        if live and rng.random() < 0.4:
            ta, per_pod = live.pop(rng.randrange(len(live)))
            state.remove_usage("tas", ta, per_pod)
        else:
            per_pod = rng.choice(shapes)
            res = state.find_assignments(
                "tas", [[request(rng.randint(1, 4), **per_pod)]]
            )
            if res.assignments is not None:
                ta = res.assignments["main"]
                state.add_usage("tas", ta, per_pod)
                live.append((ta, per_pod))
        for shape in shapes:
            d = state._demand(shape)
            cached = tree.fit_cache.fit(tree.rem, d, empty=False)
            assert np.array_equal(cached, fit_count(tree.rem, d)), step
            base = tree.fit_cache.fit(tree.base, d, empty=True)
            assert np.array_equal(base, fit_count(tree.base, d))
    for ta, per_pod in live:
        state.remove_usage("tas", ta, per_pod)
    assert np.array_equal(tree.rem, tree.base)


def test_empty_simulation_uses_base_capacity() -> None:
    state = TasState.build(snapshot([node("h", ("b", "r", "h"), cpu=2000)]))
    ta = place(state, request(2))["main"]
    state.add_usage("tas", ta, {"cpu": 1000})
    assert state.find_assignments("tas", [[request(1)]]).assignments is None
    assert counts(place(state, request(2), empty=True)["main"]) == {"h": 2}
