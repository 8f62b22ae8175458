"""FGD's statistical fragmentation measure, vectorised over many node states.

A node's fragmentation F is the GPU milli that the *typical* pods (the most
frequent request shapes of the trace, weighted by frequency) could not use
there.  FGD places each pod where F grows least.  The window policy reuses F
as its look-ahead term, so it lives here rather than inside the FGD policy.

Floating-point order is the simulator's: per typical pod, ``freq * amount``
is added into one of seven bins, and the bins except Q3 are summed in index
order.  The per-bin sums run as ``cumsum`` (strictly left to right, unlike
numpy's pairwise ``sum``), so F is bit-identical and the truncated integer
scores tie exactly where the simulator's do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from benchmarks.fgd.trace import Trace

__all__ = ["TypicalPods", "frag_amount", "typical_pods"]

POPULARITY_PCT = 95  # typical specs cover this share of pods (run scripts' value)

# Bin indices, as in the simulator: Q1 lack both, Q2 lack GPU, Q3 satisfied,
# Q4 lack CPU, XL/XR CPU-only pod with/without CPU, NA model not allowed.
Q1, Q2, Q3, Q4, XL, XR, NA = range(7)
_COUNTED = (Q1, Q2, Q4, XL, XR, NA)  # every bin but Q3, in summation order

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class TypicalPods:
    """Typical request shapes with renormalised frequencies."""

    cpu: IntArray
    milli: IntArray
    num: IntArray
    model_mask: IntArray  # bit m = model m allowed
    freq: FloatArray

    def __len__(self) -> int:
        return len(self.freq)


def typical_pods(trace: Trace, popularity_pct: int = POPULARITY_PCT) -> TypicalPods:
    """The simulator's ``GetTypicalPods`` on the original (un-inflated) pod list.

    Shapes (cpu, milli, num, gpu type) are counted, sorted by count then by
    shape, both descending, and taken one at a time until ``popularity_pct``
    of the pods are covered; frequencies are then renormalised to sum to 1.
    """
    counts: dict[tuple[int, int, int, str], float] = {}
    for p in range(trace.n_pods):
        key = (
            int(trace.pod_cpu[p]),
            int(trace.pod_milli[p]),
            int(trace.pod_num[p]),
            trace.pod_spec[p],
        )
        counts[key] = counts.get(key, 0.0) + 1.0
    total = float(trace.n_pods)
    shapes = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    expected = float(popularity_pct) * total / 100.0
    cum = 0.0
    chosen: list[tuple[tuple[int, int, int, str], float]] = []
    while cum < expected and len(chosen) < len(shapes):
        key, cnt = shapes[len(chosen)]
        cum += cnt
        chosen.append((key, cnt / total))
    if len(chosen) < len(shapes):
        chosen = [(k, f / (cum / total)) for k, f in chosen]
    model_ix = {m: i for i, m in enumerate(trace.models)}
    all_models = (1 << len(trace.models)) - 1

    def mask(spec: str) -> int:
        if not spec:
            return all_models
        return sum(1 << model_ix[m] for m in spec.split("|") if m in model_ix)

    return TypicalPods(
        cpu=np.array([k[0] for k, _ in chosen], dtype=np.int64),
        milli=np.array([k[1] for k, _ in chosen], dtype=np.int64),
        num=np.array([k[2] for k, _ in chosen], dtype=np.int64),
        model_mask=np.array([mask(k[3]) for k, _ in chosen], dtype=np.int64),
        freq=np.array([f for _, f in chosen], dtype=np.float64),
    )


def frag_amount(
    tp: TypicalPods, cpu_left: IntArray, cards: IntArray, model_bit: IntArray
) -> FloatArray:
    """F (milli-GPU) for each of S node states: cpu (S,), cards (S, 8), model bit (S,).

    Padded card slots hold 0 and so neither host a typical pod nor add to
    any amount.
    """
    s = len(cpu_left)
    total = cards.sum(axis=1)
    amount = np.broadcast_to(total[:, None], (s, len(tp))).copy()
    cpu_ok = cpu_left[:, None] >= tp.cpu[None, :]
    gpu_tp = tp.milli > 0
    bins = np.where(cpu_ok, XL, XR)  # CPU-only typical pods: all idle GPU
    for m in np.unique(tp.milli[gpu_tp]):
        cols = np.flatnonzero(tp.milli == m)
        fits = (cards >= m).sum(axis=1)
        unusable = np.where(cards < m, cards, 0).sum(axis=1)
        host = fits[:, None] >= tp.num[None, cols]
        ok = cpu_ok[:, cols]
        b = np.where(host, np.where(ok, Q3, Q4), np.where(ok, Q2, Q1))
        # Q3: the cards too small for this shape still count (as Q2).
        amount[:, cols] = np.where(b == Q3, unusable[:, None], amount[:, cols])
        bins[:, cols] = np.where(b == Q3, Q2, b)
    no_access = gpu_tp[None, :] & ((model_bit[:, None] & tp.model_mask[None, :]) == 0)
    amount = np.where(no_access, total[:, None], amount)
    bins = np.where(no_access, NA, bins)
    contrib = tp.freq[None, :] * amount.astype(np.float64)
    out = np.zeros(s, dtype=np.float64)
    for b_ix in _COUNTED:
        part = np.where(bins == b_ix, contrib, 0.0)
        out = out + np.cumsum(part, axis=1)[:, -1]
    return out
