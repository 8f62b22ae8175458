"""The windowed CP-SAT policy: joint decisions, valid, and drops only when forced."""

from __future__ import annotations

import dataclasses

import numpy as np

from placewise.benchmarks.fgd.cluster import FgdClusterState
from placewise.benchmarks.fgd.feasible import audit
from placewise.benchmarks.fgd.policies.window import WindowParams, WindowPolicy
from placewise.benchmarks.fgd.protocol import Workload, make_workload
from placewise.benchmarks.fgd.replay import replay
from placewise.benchmarks.fgd.trace import Trace
from tests.benchmarks.conftest import tiny_trace

FAST = WindowParams(window=16, candidates=4, time_limit=0.2, num_workers=1)


def _workload(n_pods: int, n_nodes: int) -> Workload:
    return Workload(
        seed=0,
        arrivals=np.arange(n_pods, dtype=np.int64),
        tie_key=np.arange(n_nodes, dtype=np.int64),
    )


def test_places_everything_that_fits_on_openb_prefix(trace: Trace) -> None:
    wl = make_workload(trace, 42)
    wl = dataclasses.replace(wl, arrivals=wl.arrivals[:96])
    pol = WindowPolicy(trace, wl, FAST)
    res = replay(trace, wl, pol)
    assert res.placed.all()  # an almost empty cluster: every pod fits
    plan = [(int(wl.arrivals[i]), d.node, d.cards) for i, d in enumerate(res.decisions)]
    assert audit(trace, plan).used_gpu_milli == int(res.used[-1])
    assert pol.stats.windows == 6


def test_leaves_out_only_what_cannot_fit_and_maximises_gpu() -> None:
    # one 1-card node; a 600 and a 300 share could fit together, but a whole
    # card is worth more; the greedy, in arrival order, would take 600 + 300
    tr = tiny_trace([(64000, 1, 0)], [(1000, 1, 600), (1000, 1, 1000), (1000, 1, 300)])
    pol = WindowPolicy(tr, _workload(3, 1), dataclasses.replace(FAST, window=3))
    out = pol.decide(FgdClusterState(tr), [0, 1, 2])
    assert [d is not None for d in out] == [False, True, False]
    assert pol.stats.drop_windows == 1 and pol.stats.drop_proven == 1


def test_places_all_when_all_fit_jointly() -> None:
    tr = tiny_trace([(64000, 2, 0)], [(1000, 1, 600), (1000, 1, 1000), (1000, 1, 400)])
    pol = WindowPolicy(tr, _workload(3, 1), dataclasses.replace(FAST, window=3))
    st = FgdClusterState(tr)
    out = pol.decide(st, [0, 1, 2])
    assert all(d is not None for d in out)
    audit(tr, [(p, d.node, d.cards) for p, d in zip([0, 1, 2], out, strict=True) if d])
