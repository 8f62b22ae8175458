"""The replay driver (arrivals one by one, or in windows) and the binned metric.

Accounting follows the simulator's ``[Alloc]`` log and the published merge
script: every arrival adds its GPU demand to *arrived* before it is tried
(dropped pods count too), *used* is the cluster's allocated GPU milli after
it, and column k of the curve is the mean allocation over arrivals whose
arrived-demand percentage rounds to k.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState
from placewise.benchmarks.fgd.feasible import Ledger
from placewise.benchmarks.fgd.policies.base import Policy
from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import Trace

__all__ = ["ReplayResult", "alloc_curve", "replay"]

MAX_COLUMN = 130


@dataclass
class ReplayResult:
    """Per-arrival accounting of one run plus timing."""

    policy: str
    seed: int
    total_gpus: int
    arrived: NDArray[np.int64]  # cumulative GPU milli arrived, after each arrival
    used: NDArray[np.int64]  # allocated GPU milli after each arrival
    placed: NDArray[np.bool_]
    decisions: list[Decision | None]
    window_seconds: list[float] = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def final_alloc(self) -> float:
        """Allocated share of GPU capacity (%) after the last arrival."""
        return 100.0 * float(self.used[-1]) / (self.total_gpus * 1000)

    @property
    def dropped(self) -> int:
        return int((~self.placed).sum())

    def curve(self) -> dict[int, float]:
        return alloc_curve(self.arrived, self.used, self.total_gpus)


def alloc_curve(
    arrived: NDArray[np.int64], used: NDArray[np.int64], total_gpus: int
) -> dict[int, float]:
    """Column k -> mean allocation % over rows whose arrival % rounds to k.

    Python's ``round`` (half to even, on the exact float) is applied per row as
    in the published merge script; a column with no exact row falls back to
    rows within +-1, and stays absent when there are none.
    """
    arr = [round(float(a) / total_gpus / 10, 0) for a in arrived]
    alloc = np.array([round(float(u) / total_gpus / 10, 2) for u in used])
    arr_np = np.array(arr)
    out: dict[int, float] = {}
    for k in range(MAX_COLUMN + 1):
        sel = arr_np == k
        if not sel.any():
            sel = (arr_np >= k - 1) & (arr_np <= k + 1)
            if not sel.any():
                continue
        vals = alloc[sel]
        out[k] = round(float(vals.sum() / len(vals)), 2)
    return out


def replay(
    trace: Trace,
    workload: Workload,
    policy: Policy,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Run ``policy`` over the arrivals; every decision passes the ledger check.

    A pod the policy leaves out (None) is dropped and never retried.
    """
    state = FgdClusterState(trace)
    ledger = Ledger(trace)
    n = len(workload)
    arrived = np.zeros(n, dtype=np.int64)
    used = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    decisions: list[Decision | None] = []
    window_seconds: list[float] = []
    acc = 0
    t_start = time.perf_counter()
    w = max(1, policy.window)
    for start in range(0, n, w):
        pods = [int(p) for p in workload.arrivals[start : start + w]]
        t0 = time.perf_counter()
        got = policy.decide(state, pods)
        window_seconds.append(time.perf_counter() - t0)
        if len(got) != len(pods):
            raise RuntimeError(
                f"{policy.name} returned {len(got)} decisions for {len(pods)}"
            )
        for k, (pod, d) in enumerate(zip(pods, got, strict=True)):
            i = start + k
            acc += trace.pod_gpu_milli(pod)
            if d is not None:
                ledger.commit(pod, d.node, d.cards)
                state.apply(pod, d)
                placed[i] = True
            arrived[i] = acc
            used[i] = ledger.used_gpu_milli
            decisions.append(d)
        if progress is not None:
            progress(min(start + w, n), n)
    if ledger.used_gpu_milli != state.used_gpu_milli:
        raise RuntimeError("cluster state and independent ledger disagree on GPU use")
    return ReplayResult(
        policy=policy.name,
        seed=workload.seed,
        total_gpus=int(trace.node_gpus.sum()),
        arrived=arrived,
        used=used,
        placed=placed,
        decisions=decisions,
        window_seconds=window_seconds,
        wall_seconds=time.perf_counter() - t_start,
    )
