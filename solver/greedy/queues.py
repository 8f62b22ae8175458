"""Per-ClusterQueue pending queues (kueue-semantics §3.1).

An active heap ordered by (sticky preemptor, priority, queue-order time,
UID) and a set of parked ("inadmissible") workloads.  StrictFIFO retries
the same head; BestEffortFIFO parks a failed head until its cohort tree is
notified that capacity was released.
"""

from __future__ import annotations

import heapq
from enum import Enum

from placewise.models.cluster import ClusterQueue
from placewise.solver.kueue.afs import AfsLedger, UsageKey, lq_key
from placewise.solver.kueue.order import QueueKey, queue_order
from placewise.solver.kueue.workload import WlInfo


class Requeue(Enum):
    NO_FIT = "NoFit"
    NO_CANDIDATES = "PreemptionNoCandidates"
    FAILED_AFTER_NOMINATION = "FailedAfterNomination"
    PENDING_PREEMPTION = "PendingPreemption"
    NAMESPACE_MISMATCH = "NamespaceMismatch"
    INADMISSIBLE = "Inadmissible"


IMMEDIATE = {Requeue.FAILED_AFTER_NOMINATION, Requeue.PENDING_PREEMPTION}


def shape_of(info: WlInfo) -> tuple[object, ...]:
    """Kueue's scheduling equivalence hash: what decides admission, not identity."""
    w = info.obj
    return (
        info.cq,
        w.priority,
        tuple(
            (
                ps.name,
                ps.count,
                ps.min_count,
                tuple(sorted(ps.requests.items())),
                ps.topology,
                ps.placement,
            )
            for ps in w.pod_sets
        ),
    )


class PendingQueue:
    """One ClusterQueue's pending workloads."""

    def __init__(self, cq: ClusterQueue, ledger: AfsLedger | None = None) -> None:
        self.cq = cq
        self.ledger = ledger
        """Set when the queue orders by LocalQueue usage (admission fair
        sharing): that order moves with every admission, so each LocalQueue
        keeps its own heap (its workloads share one usage) and the head is
        the best of the LocalQueues' heads."""
        self._by_lq: dict[str, list[tuple[QueueKey, int, WlInfo]]] = {}
        self.strict = cq.queueing_strategy == "StrictFIFO"
        self._heap: list[tuple[QueueKey, int, WlInfo]] = []
        self._seq = 0  # tie-break for re-pushed entries of the same workload
        self.active: dict[str, WlInfo] = {}
        self.parked: dict[str, WlInfo] = {}
        self.sticky: str | None = None
        self._shapes: dict[str, int] = {}
        self._shape_ids: dict[tuple[object, ...], int] = {}

    def push(self, info: WlInfo) -> None:
        if info.key in self.active:
            return
        self.parked.pop(info.key, None)
        self.active[info.key] = info
        self._seq += 1
        heap = self._heap
        if self.ledger is not None:
            heap = self._by_lq.setdefault(lq_key(info.obj), [])
        heapq.heappush(heap, (queue_order(info.obj), self._seq, info))

    def pop(self) -> WlInfo | None:
        """The head: the sticky preemptor first (BestEffortFIFO), else the heap top."""
        if self.ledger is not None:
            best = self._fair_head()
            if best is not None:
                del self.active[best.key]
            return best
        if self.sticky is not None and not self.strict and self.sticky in self.active:
            return self.active.pop(self.sticky)
        while self._heap:
            _, _, info = heapq.heappop(self._heap)
            if self.active.get(info.key) is info:
                del self.active[info.key]
                return info
        return None

    def requeue(self, info: WlInfo, reason: Requeue) -> bool:
        """Put a failed head back; returns True when it was parked."""
        if reason is Requeue.PENDING_PREEMPTION:
            self.sticky = info.key if not self.strict else None
        immediate = reason in IMMEDIATE or (
            self.strict and reason is not Requeue.NAMESPACE_MISMATCH
        )
        if immediate:
            self.push(info)
            return False
        self.parked[info.key] = info
        return True

    def park_equivalent(self, info: WlInfo) -> list[WlInfo]:
        """SchedulingEquivalenceHashing: a NoFit shape parks its twins too."""
        shape = self._shape(info)
        twins = [
            w
            for w in self.active.values()
            if w.key != info.key and self._shape(w) == shape
        ]
        for w in twins:
            del self.active[w.key]
            self.parked[w.key] = w
        return twins

    def _shape(self, info: WlInfo) -> int:
        """:func:`shape_of` as a number, kept per workload: its spec never
        changes, and a large queue's every NoFit compares it with every
        active one."""
        shape = self._shapes.get(info.key)
        if shape is None:
            shape = self._shape_ids.setdefault(shape_of(info), len(self._shape_ids))
            self._shapes[info.key] = shape
        return shape

    def retry_parked(self) -> int:
        moved = list(self.parked.values())
        for info in moved:
            self.push(info)
        return len(moved)

    def forget(self, key: str) -> None:
        self.active.pop(key, None)
        self.parked.pop(key, None)
        if self.sticky == key:
            self.sticky = None

    def _fair_head(self) -> WlInfo | None:
        """Kueue's ``queueOrderingFunc``: the LocalQueue's usage first, then
        the base order (the sticky preemptor, priority, time, UID)."""
        ledger = self.ledger
        assert ledger is not None
        sticky = self.active.get(self.sticky or "") if not self.strict else None
        best: tuple[UsageKey, bool, QueueKey] | None = None
        head: WlInfo | None = None
        for lq, heap in self._by_lq.items():
            while heap and self.active.get(heap[0][2].key) is not heap[0][2]:
                heapq.heappop(heap)  # popped or re-pushed since
            if not heap:
                continue
            top = heap[0][2]
            if sticky is not None and lq_key(sticky.obj) == lq:
                top = sticky
            key = (ledger.usage(lq), top is not sticky, queue_order(top.obj))
            if best is None or key < best:
                best, head = key, top
        return head

    def head_key(self) -> str | None:
        """Peek without popping (used for StrictFIFO pending reasons)."""
        if self.ledger is not None:
            head = self._fair_head()
            return head.key if head is not None else None
        if self.sticky is not None and not self.strict and self.sticky in self.active:
            return self.sticky
        for _, _, info in sorted(self._heap, key=lambda x: (x[0], x[1])):
            if self.active.get(info.key) is info:
                return info.key
        return None
