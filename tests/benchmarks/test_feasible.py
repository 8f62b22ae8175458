"""The independent ledger rejects every kind of over-commitment."""

from __future__ import annotations

import numpy as np
import pytest

from placewise.benchmarks.fgd.feasible import Infeasible, Ledger, audit
from placewise.benchmarks.fgd.trace import Trace


def _pod(trace: Trace, num: int, sharing: bool) -> int:
    sel = (trace.pod_num == num) & ((trace.pod_milli < 1000) == sharing)
    return int(np.flatnonzero(sel)[0])


def _node(trace: Trace, gpus: int) -> int:
    return int(np.flatnonzero(trace.node_gpus == gpus)[0])


def test_accepts_valid_and_books_cards(trace: Trace) -> None:
    led = Ledger(trace)
    share, whole = _pod(trace, 1, True), _pod(trace, 2, False)
    n = _node(trace, 8)
    led.commit(share, n, [3])
    led.commit(whole, n, [0, 1])
    milli = int(trace.pod_milli[share])
    assert led.card_left(n)[:4] == [0, 0, 1000, 1000 - milli]
    assert led.used_gpu_milli == milli + 2000


def _small_node_for(trace: Trace, led: Ledger, pod: int, gpus: int) -> int:
    """A ``gpus``-card node with the CPU, memory and GPU model ``pod`` needs,
    so that only its cards can be wrong."""
    for node in np.flatnonzero(trace.node_gpus == gpus):
        if (led.why_not(pod, int(node), []) or "").startswith("needs"):
            return int(node)
    raise AssertionError(f"no {gpus}-card node fits pod {pod} but for its cards")


def test_rejects_breaches(trace: Trace) -> None:
    """Each breach is rejected for its own reason, not an earlier rule's."""
    led = Ledger(trace)
    share, whole, cpu_only = (
        _pod(trace, 1, True),
        _pod(trace, 8, False),
        _pod(trace, 0, True),
    )
    n8 = _node(trace, 8)
    n2 = _small_node_for(trace, led, whole, 2)
    assert led.why_not(whole, n2, range(8)) == (
        "card 2 does not exist on a 2-card node"
    )
    assert led.why_not(share, n8, [0, 1]) == "needs 1 distinct cards, got [0, 1]"
    assert led.why_not(whole, n8, [0] * 8) == (f"needs 8 distinct cards, got {[0] * 8}")
    assert led.why_not(cpu_only, n8, [0]) == "CPU-only pod given cards"
    assert led.why_not(whole, n8, range(8)) is None
    led.commit(whole, n8, range(8))
    assert "milli left" in (led.why_not(share, n8, [5]) or "")
    with pytest.raises(Infeasible):
        led.commit(share, n8, [5])


def test_rejects_cpu_and_memory_overcommit(trace: Trace) -> None:
    n = int(np.argmin(trace.node_mem))
    cpu_heavy = int(np.argmax(trace.pod_cpu))
    reason = Ledger(trace).why_not(cpu_heavy, n, [0] * int(trace.pod_num[cpu_heavy]))
    assert reason is not None and reason.startswith("cpu")
    fits_cpu = np.flatnonzero(
        (trace.pod_num == 0)
        & (trace.pod_cpu <= trace.node_cpu[n])
        & (trace.pod_mem > trace.node_mem[n])
    )
    reason = Ledger(trace).why_not(int(fits_cpu[0]), n, [])
    assert reason is not None and reason.startswith("memory")


def test_audit_catches_a_tampered_plan(trace: Trace) -> None:
    share = _pod(trace, 1, True)
    n = _node(trace, 8)
    plan = [(share, n, [0])] * (1000 // int(trace.pod_milli[share]))
    audit(trace, plan)
    with pytest.raises(Infeasible):
        audit(trace, [*plan, (share, n, [0])])
