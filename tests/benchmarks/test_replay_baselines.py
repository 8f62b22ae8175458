"""Our simulator against the FGD paper's published per-seed curves (exact)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from placewise.benchmarks.fgd.feasible import audit
from placewise.benchmarks.fgd.policies.bestfit import BestFit
from placewise.benchmarks.fgd.policies.fgd import FGD
from placewise.benchmarks.fgd.protocol import make_workload
from placewise.benchmarks.fgd.published import load_published
from placewise.benchmarks.fgd.replay import alloc_curve, replay
from placewise.benchmarks.fgd.trace import Trace


def test_workload_matches_protocol(trace: Trace) -> None:
    wl = make_workload(trace, 42)
    # 8,152 shuffled originals, then tuned copies until 130% of 6,212 GPUs
    assert len(wl) == 10866
    assert sorted(wl.arrivals[: trace.n_pods].tolist()) == list(range(trace.n_pods))
    demand = sum(trace.pod_gpu_milli(int(p)) for p in wl.arrivals)
    assert 1.3 * 6_212_000 - 1000 < demand <= 1.3 * 6_212_000 + 7000
    assert sorted(wl.tie_key.tolist()) == list(range(trace.n_nodes))


@pytest.mark.parametrize("seed", [42, 47, 50])
def test_bestfit_reproduces_published_curve_exactly(
    trace: Trace, shared: Path, seed: int
) -> None:
    published = load_published("bestfit", shared=shared)[seed]
    wl = make_workload(trace, seed)
    res = replay(trace, wl, BestFit(wl))
    ours = res.curve()
    assert ours.keys() == published.keys()
    assert max(abs(ours[k] - published[k]) for k in published) == 0.0
    placed = [
        (int(wl.arrivals[i]), d.node, d.cards)
        for i, d in enumerate(res.decisions)
        if d is not None
    ]
    assert audit(trace, placed).used_gpu_milli == int(res.used[-1])


def test_fgd_reproduces_published_curve_exactly(trace: Trace, shared: Path) -> None:
    published = load_published("fgd", shared=shared)[42]
    wl = make_workload(trace, 42)
    ours = replay(trace, wl, FGD(trace, wl)).curve()
    assert ours[130] == published[130] == 95.29
    assert max(abs(ours[k] - published[k]) for k in published) == 0.0


def test_alloc_curve_bins_and_falls_back_to_neighbours() -> None:
    total_gpus = 10  # 1% of capacity = 100 milli
    arrived = np.array([40, 100, 110, 300], dtype=np.int64)  # 0.4%, 1%, 1.1%, 3%
    used = np.array([40, 90, 100, 150], dtype=np.int64)
    curve = alloc_curve(arrived, used, total_gpus)
    assert curve[0] == 0.4
    assert curve[1] == round((0.9 + 1.0) / 2, 2)
    assert curve[2] == round((0.9 + 1.0 + 1.5) / 3, 2)  # no exact row: k-1..k+1
    assert curve[3] == 1.5 and 5 not in curve
