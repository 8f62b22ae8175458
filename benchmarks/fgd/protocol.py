"""The arrival sequence and node tie-break keys of one FGD run (one seed).

Every random choice the FGD simulator makes before the first pod arrives comes
from Go's global ``math/rand`` in a fixed order; replaying that order with
:class:`~placewise.benchmarks.fgd.gorand.GoRand` gives the very same arrivals and the
same tie-breaks, which is what makes per-seed agreement with the published
table possible.  All policies run on the same :class:`Workload`, so their
differences come from decisions only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.gorand import GoRand
from placewise.benchmarks.fgd.trace import Trace

__all__ = ["REFLECTOR_DRAWS", "TUNE_RATIO", "Workload", "make_workload"]

TUNE_RATIO = 1.3  # arrived GPU demand reaches 130% of capacity
# Ten client-go reflectors each draw one Float64 when the scheduler's informers
# start, between inflation and node naming (calibrated against the simulator).
REFLECTOR_DRAWS = 10


@dataclass(frozen=True)
class Workload:
    """Pods in arrival order (indices into the trace) and per-node tie keys.

    ``tie_key[n]`` is the ``rand.Perm`` prefix the simulator puts in front of
    node n's name; among equal scores the smallest key wins.
    """

    seed: int
    arrivals: NDArray[np.int64]
    tie_key: NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.arrivals)


def make_workload(trace: Trace, seed: int, tune: float = TUNE_RATIO) -> Workload:
    """Shuffle, inflate to ``tune`` x capacity, then draw the node prefixes.

    Order of draws (each consumes the global stream):
    one ``Int`` (a debug-log argument Go evaluates anyway), ``Shuffle`` of the
    name-sorted originals, the ``Intn`` inflation loop, 10 reflector
    ``Float64`` draws, and ``Perm`` over the name-sorted nodes.
    """
    rng = GoRand(seed)
    rng.int_()
    order = list(range(trace.n_pods))

    def swap(i: int, j: int) -> None:
        order[i], order[j] = order[j], order[i]

    rng.shuffle(len(order), swap)

    gpu_total = [trace.pod_gpu_milli(p) for p in range(trace.n_pods)]
    per_card = [int(m) for m in trace.pod_milli]
    tot = sum(gpu_total)
    target = tune * float(trace.total_gpu_milli)
    if tune > 0 and float(tot) < target:
        # Stop at the first draw whose *per-card* milli would overshoot: the
        # simulator compares that, not the pod's total, so it may end a
        # multi-GPU pod above target.  Copies go at the end, unshuffled.
        while True:
            idx = rng.intn(trace.n_pods)
            if float(tot + per_card[idx]) > target:
                break
            tot += gpu_total[idx]
            order.append(idx)
    elif tune > 0 and float(tot) > target:
        while float(tot) > target:
            idx = rng.intn(len(order))
            tot -= gpu_total[order.pop(idx)]
    for _ in range(REFLECTOR_DRAWS):
        rng.float64()
    perm = rng.perm(trace.n_nodes)
    return Workload(
        seed=seed,
        arrivals=np.array(order, dtype=np.int64),
        tie_key=np.array(perm, dtype=np.int64),
    )
