"""Kueue's admission fair sharing: which head a ClusterQueue offers first.

With the AdmissionFairSharing gate on (Kueue's default) and a Configuration
``admissionFairSharing`` section, a ClusterQueue whose
``admissionScope.admissionMode`` is ``UsageBasedAdmissionFairSharing``
orders its pending workloads first by their LocalQueue's usage — the decayed
consumed resources Kueue recorded in the LocalQueue's status plus the entry
penalties of workloads admitted since, each resource times its configured
weight (default 1), summed, over the LocalQueue's weight (a weight of 0 puts
the queue last) — and only then by the usual order (sticky preemptor,
priority, queue-order time, UID).  This follows ``pkg/cache/queue``
(``queueOrderingFunc``), ``pkg/util/admissionfairsharing`` and the
scheduler's ``updateEntryPenalty`` at the pinned commit.

Each admission into such a queue charges its LocalQueue the entry penalty
``alpha x total requests`` with ``alpha = 1 - 0.5^(sampling / half-life)``,
so the next head of the same queue sees the LocalQueue's usage grow at once
(Kueue re-heaps on pending penalties).  ``alpha`` is a float, as in Kueue;
the product is taken on its shortest decimal form and rounded down to 10^-9,
as Kueue's ``MulByFloat`` does; everything else is exact (Kueue compares
float64 sums, so a near-tie a float rounds may order differently).

What is not modelled: the LocalQueue reconciler's decay between samples
(the recorded consumed resources are used as recorded, i.e. as of the status'
``lastUpdate``), and the settlement of penalties into consumed usage (no
time passes within a run).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from placewise.models.cluster import AdmissionFairSharing, ClusterQueue
from placewise.models.quantity import MILLI_RESOURCES
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload

NANO = Fraction(1, 10**9)
"""Kueue's MulByFloat keeps 9 decimal places, rounding down."""

UsageKey = tuple[int, Fraction]
"""(1 for a zero-weight LocalQueue, which sorts after every other; usage)."""


def alpha(config: AdmissionFairSharing) -> float:
    """Kueue's ``calculateAlphaRate(sampling, halfLife)`` (0 when the
    half-life is 0), in float64 seconds as Go's ``Duration.Seconds``."""
    half_life = config.usage_half_life_ns / 1e9
    if half_life == 0:
        return 0.0
    sampling = config.usage_sampling_interval_ns / 1e9
    return 1.0 - math.pow(0.5, sampling / half_life)


def lq_key(w: Workload) -> str:
    """``namespace/queueName``: the LocalQueue a workload is charged to."""
    return f"{w.namespace}/{w.queue_name or ''}"


class AfsLedger:
    """The LocalQueues' admission usage during one run (Kueue's
    ``AfsUsageLedger``: consumed history plus pending entry penalties)."""

    def __init__(self, snapshot: Snapshot, config: AdmissionFairSharing) -> None:
        self.resource_weights: dict[str, Fraction] = dict(config.resource_weights)
        self.factor = Fraction(repr(alpha(config)))
        self.lq_weight: dict[str, Fraction] = {}
        self.consumed: dict[str, dict[str, Fraction]] = {}
        for key, lq in snapshot.local_queues.items():
            self.lq_weight[key] = lq.fair_weight
            self.consumed[key] = dict(lq.consumed)
        self.penalty: dict[str, dict[str, Fraction]] = {}

    @classmethod
    def of(cls, snapshot: Snapshot) -> AfsLedger | None:
        """The run's ledger, or None when no queue can order by usage."""
        config = snapshot.fair_sharing.admission
        if config is None or not any(
            applies(cq) for cq in snapshot.cluster_queues.values()
        ):
            return None
        return cls(snapshot, config)

    def usage(self, key: str) -> UsageKey:
        """Kueue's ``CalculateUsage``: weighted consumed plus penalties over
        the LocalQueue's weight (1 for a LocalQueue Kueue does not know)."""
        weight = self.lq_weight.get(key, Fraction(1))
        if weight <= 0:
            return 1, Fraction(0)
        total = Fraction(0)
        for part in (self.consumed.get(key, {}), self.penalty.get(key, {})):
            for resource, amount in part.items():
                total += self.resource_weights.get(resource, Fraction(1)) * amount
        return 0, total / weight

    def charge(self, w: Workload, counts: Mapping[str, int]) -> None:
        """Push the entry penalty of ``w`` admitted with ``counts`` pods per
        pod set: alpha times its total requests, per resource."""
        totals: dict[str, Fraction] = {}
        for ps in w.pod_sets:
            count = counts.get(ps.name, ps.count)
            for resource, units in ps.requests.items():
                if units <= 0 or resource == "pods":
                    continue
                amount = Fraction(units * count)
                if resource in MILLI_RESOURCES:
                    amount /= 1000
                totals[resource] = totals.get(resource, Fraction(0)) + amount
        pending = self.penalty.setdefault(lq_key(w), {})
        for resource, amount in totals.items():
            scaled = math.floor(amount * self.factor / NANO) * NANO
            pending[resource] = pending.get(resource, Fraction(0)) + scaled


def applies(cq: ClusterQueue) -> bool:
    """Whether the queue orders its heads by LocalQueue usage."""
    return cq.admission_mode == "UsageBasedAdmissionFairSharing"
