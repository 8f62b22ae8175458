"""``TasState.could_fit``: a refusal is a proof that no placement fits."""

from __future__ import annotations

import random

import numpy as np

from placewise.solver.kueue.tas import TasState
from tests.solver.kueue.tas.helpers import node, request, snapshot


def _freed(state: TasState, usages: list[tuple[object, dict[str, int]]]) -> list:
    """The usages' rows as the preemption walk hands them: per table, the
    distinct keys and their summed rows."""
    summed: dict[int, np.ndarray] = {}
    for ta, per_pod in usages:
        p = state.prepare("tas", ta, per_pod)  # type: ignore[arg-type]
        for key, row in zip(p.keys.tolist(), p.delta, strict=True):
            summed[key] = summed.get(key, 0) + row
    keys = np.asarray(sorted(summed), dtype=np.int64)
    rows = np.asarray([summed[k] for k in sorted(summed)], dtype=np.int64)
    return [(None, keys, rows.reshape(len(keys), len(state.resources)))]


def test_refusals_are_proofs_and_leave_the_tables_alone() -> None:
    rng = random.Random(11)
    nodes = [
        node(f"h{i}", (f"b{i % 2}", f"r{i % 4}", f"h{i}"), cpu=rng.randint(2, 8) * 1000)
        for i in range(16)
    ]
    state = TasState.build(snapshot(nodes))
    tree = state.tree("tas")
    live: list[tuple[object, dict[str, int]]] = []
    verdicts = {True: 0, False: 0}
    for _ in range(300):
        per_pod = {"cpu": rng.choice([500, 1000, 2000])}
        res = state.find_assignments("tas", [[request(rng.randint(1, 6), **per_pod)]])
        if res.assignments is not None:
            ta = res.assignments["main"]
            state.add_usage("tas", ta, per_pod)
            live.append((ta, per_pod))
        if not live:
            continue
        freed = rng.sample(live, rng.randint(0, min(3, len(live))))
        level = rng.choice(["block", "rack", None])
        want = request(rng.randint(1, 20), cpu=rng.choice([1000, 3000]), required=level)
        before = tree.rem.copy()
        verdict = state.could_fit({"tas": [[want]]}, _freed(state, freed))
        assert np.array_equal(tree.rem, before)
        assert verdict is not None
        verdicts[verdict] += 1
        for ta, pp in freed:
            state.remove_usage("tas", ta, pp)  # type: ignore[arg-type]
        placed = state.find_workload_assignments({"tas": [[want]]}, quiet=True)
        if not verdict:
            assert placed.assignments is None
        for ta, pp in freed:
            state.add_usage("tas", ta, pp)  # type: ignore[arg-type]
        if rng.random() < 0.3:
            ta, pp = live.pop(rng.randrange(len(live)))
            state.remove_usage("tas", ta, pp)  # type: ignore[arg-type]
    assert verdicts[True] and verdicts[False]  # both kinds were exercised
