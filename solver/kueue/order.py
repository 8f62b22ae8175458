"""Kueue's orders: which pending workload is tried first, which victim first."""

from __future__ import annotations

from collections.abc import Callable

from placewise.models.workload import Workload
from placewise.solver.kueue.workload import WlInfo

QueueKey = tuple[int, float, str, str]


def queue_order(w: Workload) -> QueueKey:
    """Kueue's pending order within a ClusterQueue (kueue-semantics §3.1):
    higher priority, then earlier queue-order time, then UID; the key last
    keeps the order total when a UID is missing or repeated."""
    return (-w.priority, w.queue_order_timestamp.timestamp(), w.uid or w.key, w.key)


def candidate_order(preemptor_cq: str) -> Callable[[WlInfo], tuple[object, ...]]:
    """Kueue's victim order (§5.2): already evicted first, then workloads of
    other queues, then lowest priority, most recently reserved, UID."""

    def key(c: WlInfo) -> tuple[object, ...]:
        return (not c.evicted, c.cq == preemptor_cq, c.victim_order)

    return key
