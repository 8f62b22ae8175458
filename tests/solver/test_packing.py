"""Best-fit on the leaves keeps whole hosts whole (solver/cpsat/search/packing.py).

A pod that fits once on a partly used host and once on an empty one goes
to the partly used host: the empty one is what a whole-host gang needs.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import snapshot_from_text
from placewise.solver.cpsat.search.packing import IntArray, Leaves, choose
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.problem.compile import compile_problem
from placewise.solver.problem.layout import Spec


def test_a_pod_takes_the_host_it_leaves_fullest_not_the_first() -> None:
    config = family("fragmented").with_overrides(nodes=16, pending=4)
    problem = compile_problem(snapshot_from_text(dumps(generate(config, 1))))
    lv = Leaves(problem.data, problem.layout)
    spec = replace(problem.layout.specs[0], required=None, preferred=None)
    gpu = next(lv.col[r] for r in lv.resources if r in ACCELERATORS)
    leaves = lv.index[spec.flavor]
    lv.free[:] = 0
    lv.free[:, [c for c in range(lv.free.shape[1]) if c != gpu]] = 10**9
    lv.free[leaves[0], gpu] = 8  # an empty host, first by position
    lv.free[leaves[1], gpu] = 7
    lv.free[leaves[2], gpu] = 6
    need = np.zeros(lv.free.shape[1], dtype=np.int64)
    need[gpu] = 6
    mask = np.ones(len(leaves), dtype=np.int64)
    fit = lv.fit_now(spec.flavor, need, mask)
    assert list(fit[:3]) == [1, 1, 1]
    assert choose(lv, spec, 1, fit, need) == [(2, 1)]
    assert choose(lv, spec, 2, fit, need) == [(2, 1), (1, 1)]
    # Without the request the position decides, as before.
    assert choose(lv, spec, 1, fit) == [(0, 1)]


def test_a_gang_takes_the_rack_whose_room_is_holes() -> None:
    """Two racks hold a gang of two 3-GPU pods alike (two units each); the
    one whose room is two 3-GPU holes is taken, not the one whose room is an
    empty host."""
    lv, spec, gpu, dom, leaves, need = _two_racks(required=True, need_gpus=3)
    first = int(np.nonzero(dom == 0)[0][0])  # the empty host, in rack 0
    holes = np.nonzero(dom == 1)[0][:2]  # two hosts of rack 1
    assert len(holes) == 2
    lv.free[leaves[first], gpu] = 8
    lv.free[leaves[holes], gpu] = 3
    lv.mark_intact(np.arange(len(lv.free), dtype=np.int64))
    mask = np.ones(len(leaves), dtype=np.int64)
    fit = lv.fit_now(spec.flavor, need, mask)
    got = choose(lv, spec, 2, fit, need)
    assert got is not None and sorted(p for p, _ in got) == sorted(holes.tolist())
    # Without the request the tie goes to the first rack, as before.
    assert choose(lv, spec, 2, fit) == [(first, 2)]


def test_the_warm_start_is_the_better_of_best_fits_two_orders() -> None:
    """Off the large path best-fit runs in both orders (rack-bound gangs
    first, and plain decreasing) and the warm start is never worse than
    either; on `fragmented` seed 3 the orders differ."""
    from placewise.solver.cpsat import CpSatParams
    from placewise.solver.cpsat.search.warmstart import best_fit
    from placewise.solver.cpsat.solve import _warm_start
    from placewise.solver.policy import Policy, primary_vector

    snap = snapshot_from_text(dumps(generate(family("fragmented"), 3)))
    problem = compile_problem(snap)
    pol = Policy()
    orders = [best_fit(problem, order=o) for o in ("bound-first", "decreasing")]
    values = [primary_vector(snap, p, pol) for p in orders]
    assert values[0] != values[1], "the instance should tell the orders apart"
    warm, _, _ = _warm_start(snap, problem, CpSatParams(time_limit=5.0), None)
    assert primary_vector(snap, warm, pol) >= max(values)


def test_a_pod_set_that_prefers_a_domain_takes_holes_before_a_whole_host() -> None:
    """Rack 0 holds two 6-GPU pods in a 6-GPU hole and an empty host, and is
    the tightest in units; rack 1 holds them in its 6-GPU holes.  Rack 1 is
    taken: the empty host is what a later whole-host gang needs.  (At 10,000
    hosts the pod sets that prefer a block did this, and the warm start's
    second tier rose by 1,480 GPUs.)"""
    lv, spec, gpu, dom, leaves, need = _two_racks(required=False, need_gpus=6)
    assert int(dom.max()) >= 1, "the instance should have two racks"
    in0 = np.nonzero(dom == 0)[0][:2]
    in1 = np.nonzero(dom == 1)[0][:3]
    assert int(lv.capacity[leaves[in0[1]], gpu]) == 8
    lv.free[leaves[in0[0]], gpu] = 6
    lv.free[leaves[in0[1]], gpu] = 8  # whole
    lv.free[leaves[in1], gpu] = 6
    lv.mark_intact(np.arange(len(lv.free), dtype=np.int64))
    assert lv.intact[leaves[in0[1]]] and not lv.intact[leaves[in1]].any()
    mask = np.ones(len(leaves), dtype=np.int64)
    fit = lv.fit_now(spec.flavor, need, mask)
    got = choose(lv, spec, 2, fit, need)
    assert got is not None
    assert {p for p, _ in got} <= set(in1.tolist())
    # Without the request (nothing to keep whole) the tightest rack wins.
    got = choose(lv, spec, 2, fit)
    assert got is not None and {p for p, _ in got} == set(in0.tolist())


def _two_racks(
    required: bool, need_gpus: int
) -> tuple[Leaves, Spec, int, IntArray, IntArray, IntArray]:
    """A 64-host `fragmented` instance's first spec bound to (or preferring)
    a rack, every leaf cleared but for unlimited non-GPU room: (leaves,
    spec, GPU column, rack id per leaf position, leaf per position, the
    request of one ``need_gpus``-GPU unit)."""
    config = family("fragmented").with_overrides(nodes=64, pending=4)
    problem = compile_problem(snapshot_from_text(dumps(generate(config, 1))))
    lv = Leaves(problem.data, problem.layout)
    spec = problem.layout.specs[0]
    rack = sum(1 for (f, _) in lv.domains if f == spec.flavor) - 2
    spec = replace(
        spec, required=rack if required else None, preferred=None if required else rack
    )
    gpu = next(lv.col[r] for r in lv.resources if r in ACCELERATORS)
    lv.free[:] = 0
    lv.free[:, [c for c in range(lv.free.shape[1]) if c != gpu]] = 10**9
    need = np.zeros(lv.free.shape[1], dtype=np.int64)
    need[gpu] = need_gpus
    return lv, spec, gpu, lv.domains[(spec.flavor, rack)], lv.index[spec.flavor], need
