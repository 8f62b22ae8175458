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

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.trace import Trace

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

    @functools.cached_property
    def levels(self) -> IntArray:
        """Distinct per-card milli of the GPU typical pods (hosting thresholds)."""
        lv = np.unique(self.milli[self.milli > 0])
        return lv if len(lv) else np.array([1], dtype=np.int64)

    @functools.cached_property
    def level_ix(self) -> IntArray:
        """Index into :attr:`levels` per typical pod (0 for CPU-only ones, unused)."""
        return np.maximum(0, np.searchsorted(self.levels, self.milli))


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

    F depends on the multiset of card values only, and a cluster holds many
    nodes in the same state (all fresh G2 nodes, say), so distinct states
    are evaluated once; the sums are over integers, so this is exact.
    """
    if len(cpu_left) > 32:
        rep, inverse = _distinct_states(cpu_left, cards, model_bit)
        if len(rep) < len(cpu_left) // 2:
            return _frag_amount(tp, cpu_left[rep], cards[rep], model_bit[rep])[inverse]
    return _frag_amount(tp, cpu_left, cards, model_bit)


def _distinct_states(
    cpu_left: IntArray, cards: IntArray, model_bit: IntArray
) -> tuple[IntArray, IntArray]:
    """One row per distinct (cpu, model, card multiset), and the map back.

    Rows are packed into two int64 keys (11 bits per card value, 4 cards
    each, plus CPU or model) so that only 1-D ``np.unique`` calls are needed,
    which are several times faster than ``np.unique(axis=0)``.
    """
    srt = np.sort(cards, axis=1)
    shifts = np.arange(4, dtype=np.int64) * 11
    lo = (srt[:, :4] << shifts).sum(axis=1) | (cpu_left << 44)
    hi = (srt[:, 4:] << shifts).sum(axis=1) | (model_bit << 44)
    _, ia = np.unique(lo, return_inverse=True)
    _, ib = np.unique(hi, return_inverse=True)
    _, rep, inverse = np.unique(
        ia * (int(ib.max()) + 1) + ib, return_index=True, return_inverse=True
    )
    return rep, inverse.reshape(-1)


def _frag_amount(
    tp: TypicalPods, cpu_left: IntArray, cards: IntArray, model_bit: IntArray
) -> FloatArray:
    """The evaluation proper, vectorised over states and typical pods at once.

    Padded card slots hold 0 and so neither host a typical pod nor add to
    any amount.
    """
    levels = tp.levels
    total = cards.sum(axis=1)
    ge = cards[:, :, None] >= levels[None, None, :]  # (S, cards, distinct GPU millis)
    fits = ge.sum(axis=1)[:, tp.level_ix]  # cards that can host each typical pod
    unusable = np.where(ge, 0, cards[:, :, None]).sum(axis=1)[:, tp.level_ix]
    cpu_ok = cpu_left[:, None] >= tp.cpu[None, :]
    host = fits >= tp.num[None, :]
    satisfied = host & cpu_ok  # Q3: only the too-small cards count, as Q2
    bins = np.where(host, np.where(cpu_ok, Q2, Q4), np.where(cpu_ok, Q2, Q1))
    amount = np.where(satisfied, unusable, total[:, None])
    gpu_tp = (tp.milli > 0)[None, :]
    bins = np.where(gpu_tp, bins, np.where(cpu_ok, XL, XR))  # CPU-only: all idle GPU
    amount = np.where(gpu_tp, amount, total[:, None])
    no_access = gpu_tp & ((model_bit[:, None] & tp.model_mask[None, :]) == 0)
    bins = np.where(no_access, NA, bins)
    amount = np.where(no_access, total[:, None], amount)
    contrib = tp.freq[None, :] * amount.astype(np.float64)
    counted = np.array(_COUNTED)[None, :, None]
    parts = np.where(bins[:, None, :] == counted, contrib[:, None, :], 0.0)
    per_bin = np.cumsum(parts, axis=2)[:, :, -1]  # left-to-right, as Go adds
    out = per_bin[:, 0]
    for b in range(1, len(_COUNTED)):
        out = out + per_bin[:, b]
    return out
