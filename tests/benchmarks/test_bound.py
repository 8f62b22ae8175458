"""The LP bound: valid, and tightened by the per-card cuts."""

from __future__ import annotations

import numpy as np

from placewise.benchmarks.fgd.bound import lp_bound
from placewise.benchmarks.fgd.protocol import Workload
from tests.benchmarks.conftest import tiny_trace


def _all_arrive(n: int) -> Workload:
    return Workload(
        seed=0,
        arrivals=np.arange(n, dtype=np.int64),
        tie_key=np.zeros(1, dtype=np.int64),
    )


def test_card_cuts_stop_two_large_sharing_pods_sharing_a_card() -> None:
    tr = tiny_trace([(64000, 1, 0)], [(1000, 1, 810), (1000, 1, 810)])
    assert lp_bound(tr, _all_arrive(2), dff_orders=()).gpu_milli == 1000  # milli only
    b = lp_bound(tr, _all_arrive(2))
    assert abs(b.gpu_milli - 810) < 1e-6 and b.status == "Optimal"


def test_cpu_limits_the_bound() -> None:
    tr = tiny_trace([(10000, 2, 0)], [(6000, 1, 1000), (6000, 1, 1000)])
    assert abs(lp_bound(tr, _all_arrive(2)).gpu_milli - 10000 / 6000 * 1000) < 1e-6
