"""The vectorised fragmentation measure against a literal transcription of its rules."""

from __future__ import annotations

import numpy as np

from placewise.benchmarks.fgd.frag import frag_amount, typical_pods
from placewise.benchmarks.fgd.trace import Trace


def _frag_loop(tp, cpu_left: int, cards: list[int], model_bit: int) -> float:
    """Per typical pod into seven bins, then every bin but Q3 in index order."""
    data = [0.0] * 7
    total = sum(cards)
    for j in range(len(tp)):
        freq, milli, num = float(tp.freq[j]), int(tp.milli[j]), int(tp.num[j])
        cpu_ok = cpu_left >= int(tp.cpu[j])
        if milli == 0:
            data[4 if cpu_ok else 5] += freq * total
            continue
        if not model_bit & int(tp.model_mask[j]):
            data[6] += freq * total
            continue
        host = sum(c >= milli for c in cards) >= num
        if host and cpu_ok:
            small = sum(c for c in cards if c < milli)
            data[1] += freq * small
            data[2] += freq * (total - small)
        elif host:
            data[3] += freq * total
        else:
            data[1 if cpu_ok else 0] += freq * total
    out = 0.0
    for b in (0, 1, 3, 4, 5, 6):
        out += data[b]
    return out


def test_typical_pods_of_default_trace(trace: Trace) -> None:
    tp = typical_pods(trace)
    assert len(tp) == 35  # as the simulator logs for openb default
    assert abs(float(tp.freq.sum()) - 1.0) < 1e-12
    assert (tp.freq[:-1] >= tp.freq[1:]).all()


def test_vectorised_equals_loop_bit_for_bit(trace: Trace) -> None:
    tp = typical_pods(trace)
    rng = np.random.default_rng(0)
    s = 300  # > 32 rows, so the de-duplicating path runs too
    cards = rng.choice([0, 30, 190, 350, 530, 810, 1000], size=(s, 8))
    cards[:100] = cards[0]  # many identical states
    cards[rng.random((s, 8)) < 0.2] = 0
    cpu = rng.choice([0, 2000, 8000, 12000, 40000], size=s)
    model = np.left_shift(1, rng.integers(0, len(trace.models), size=s))
    got = frag_amount(tp, cpu, cards, model)
    want = [
        _frag_loop(tp, int(cpu[i]), cards[i].tolist(), int(model[i])) for i in range(s)
    ]
    assert got.tolist() == want
