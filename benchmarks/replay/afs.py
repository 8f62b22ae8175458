"""Admission fair sharing over replayed time: each LocalQueue's usage.

Kueue's AFS orders a ClusterQueue's heads by how much their LocalQueues
consumed lately, and that history only means something over time — which a
single solve does not have but a replay does.  So the replay keeps, per
LocalQueue, what Kueue keeps in its ``AfsUsageLedger`` and publishes in
``status.fairSharing.admissionFairSharingStatus``, and each solve's snapshot
carries it, so the solvers see the usage Kueue's scheduler would see.

Semantics follow Kueue at the pinned commit (``localqueue_controller.go``
``reconcileConsumedUsage``, ``workload_controller.go``'s penalty settlement,
``pkg/util/admissionfairsharing``):

* Every ``usageSamplingInterval`` after its last update, a LocalQueue's
  consumed resources decay toward its admitted usage:
  ``C <- (1 - a) C + a U`` with ``a = 1 - 0.5^(elapsed / half-life)``, each
  product rounded down to 10^-9 (Kueue's ``MulByFloat``); a half-life of 0
  resets them.  ``U`` is the flavor-flattened usage of its admitted workloads.
* An admission into a usage-based ClusterQueue charges the entry penalty
  ``alpha x total requests`` (``alpha`` with elapsed = the sampling interval);
  Kueue settles it as soon as the workload is admitted, decaying to that
  moment first and restarting the sampling clock, and so does the replay.
* The ledger starts from the instance's recorded status with its clock at the
  replay's start (Kueue seeds a restarted manager the same way).

Approximation: the replay's state changes only on its tick grid, so a sample
between two visited ticks sees the admitted set of the earlier one (a job
that ended in between counts until the tick that processes its end).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from fractions import Fraction

from placewise.models.cluster import AdmissionFairSharing
from placewise.models.quantity import MILLI_RESOURCES
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.kueue.afs import NANO, alpha, applies, lq_key

Amounts = dict[str, Fraction]

REPLAY_AFS = AdmissionFairSharing(
    usage_half_life_ns=3600 * 10**9,
    usage_sampling_interval_ns=300 * 10**9,
    resource_weights=(
        ("cpu", Fraction(0)),
        ("memory", Fraction(0)),
        ("nvidia.com/gpu", Fraction(1)),
    ),
)
"""What ``simulate --admission-fair-sharing`` adds: Kueue's default sampling
interval (5m; Kueue has no default half-life, 1h here) and weights that count
GPUs only, so a LocalQueue's usage reads in GPUs (with Kueue's default weight
1 per resource, memory in bytes would drown everything else)."""


def with_afs(base: Snapshot, config: AdmissionFairSharing = REPLAY_AFS) -> Snapshot:
    """``base`` with ``config`` as its Configuration's admissionFairSharing and
    every ClusterQueue in ``UsageBasedAdmissionFairSharing`` mode."""
    objects = base.objects
    queues = {
        name: cq.model_copy(update={"admission_mode": "UsageBasedAdmissionFairSharing"})
        for name, cq in objects.cluster_queues.items()
    }
    fair = objects.fair_sharing.model_copy(update={"admission": config})
    return Snapshot(
        dataclasses.replace(objects, cluster_queues=queues, fair_sharing=fair)
    )


def scaled(amounts: Mapping[str, Fraction], factor: Fraction) -> Amounts:
    """Kueue's ``MulByFloat``: each product rounded down to 10^-9."""
    return {r: math.floor(v * factor / NANO) * NANO for r, v in amounts.items()}


def _merge(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    out = dict(a)
    for r, v in b.items():
        out[r] = out.get(r, Fraction(0)) + v
    return out


def admitted_usage(w: Workload) -> Amounts:
    """What an admitted workload holds, flavors flattened, in the quantities'
    own units (Kueue's ``GetAdmittedUsage``); ``pods`` is not a resource here."""
    out: Amounts = {}
    if w.admission is None:
        return out
    for psa in w.admission.pod_set_assignments:
        for resource, units in psa.resource_usage.items():
            if units <= 0 or resource == "pods":
                continue
            amount = Fraction(units)
            if resource in MILLI_RESOURCES:
                amount /= 1000
            out[resource] = out.get(resource, Fraction(0)) + amount
    return out


class UsageTracker:
    """Every LocalQueue's consumed resources and sampling clock in a replay."""

    def __init__(self, base: Snapshot, config: AdmissionFairSharing) -> None:
        self.base = base
        self.config = config
        self.half_life_s = config.usage_half_life_ns / 1e9
        self.interval_s = config.usage_sampling_interval_ns / 1e9
        self.penalty_factor = Fraction(repr(alpha(config)))
        self.weights = dict(config.resource_weights)
        self.consumed: dict[str, Amounts] = {
            key: dict(lq.consumed) for key, lq in base.local_queues.items()
        }
        self.last: dict[str, float] = dict.fromkeys(base.local_queues, 0.0)
        self.series: list[tuple[float, dict[str, float]]] = []
        """(simulated time, usage per LocalQueue) at every visited tick and
        sampling time."""

    @classmethod
    def of(cls, base: Snapshot) -> UsageTracker | None:
        """The replay's tracker, or None when no queue orders by usage (then
        the replay and its snapshots are exactly as without AFS)."""
        config = base.fair_sharing.admission
        if config is None or not any(
            applies(cq) for cq in base.cluster_queues.values()
        ):
            return None
        return cls(base, config)

    def _decay(self, key: str, live: Mapping[str, Fraction], elapsed: float) -> None:
        """``CalculateDecayedConsumed`` over ``elapsed`` seconds."""
        if self.half_life_s == 0:
            self.consumed[key] = {}
            return
        a = Fraction(repr(1.0 - math.pow(0.5, max(0.0, elapsed) / self.half_life_s)))
        self.consumed[key] = _merge(
            scaled(self.consumed.get(key, {}), 1 - a), scaled(live, a)
        )

    def _live(self, running: Iterable[Workload]) -> dict[str, Amounts]:
        out: dict[str, Amounts] = {}
        for w in running:
            key = lq_key(w)
            out[key] = _merge(out.get(key, {}), admitted_usage(w))
        return out

    def advance(self, t: float, running: Iterable[Workload]) -> None:
        """The LocalQueue reconciler's samples due up to ``t``, each folding
        the admitted usage of ``running`` (constant since the last tick)."""
        live = self._live(running)
        while self.last:
            due = min(self.last.values()) + self.interval_s
            if due > t:
                break
            for key, last in self.last.items():
                if last + self.interval_s == due:
                    self.last[key] = due
                    self._decay(key, live.get(key, {}), self.interval_s)
            self.record(due)  # so the series shows decay between visited ticks

    def settle(
        self, t: float, admitted: Iterable[Workload], running: Iterable[Workload]
    ) -> None:
        """Charge and settle the entry penalties of ``admitted`` (now part of
        ``running``): decay to ``t``, add ``alpha x requests``, clock to ``t``."""
        penalties: dict[str, Amounts] = {}
        for w in admitted:
            cq = self.base.cluster_queues.get(
                w.admission.cluster_queue if w.admission else ""
            )
            if cq is None or not applies(cq):
                continue
            key = lq_key(w)
            charge = scaled(admitted_usage(w), self.penalty_factor)
            penalties[key] = _merge(penalties.get(key, {}), charge)
        if not penalties:
            return
        live = self._live(running)
        for key, charge in penalties.items():
            self._decay(key, live.get(key, {}), t - self.last.get(key, t))
            self.consumed[key] = _merge(self.consumed[key], charge)
            self.last[key] = t

    def usage(self, key: str) -> float:
        """Kueue's ``CalculateUsage`` without pending penalties (all settled):
        weighted consumed over the LocalQueue's weight (0 weight: 0)."""
        lq = self.base.local_queues.get(key)
        weight = lq.fair_weight if lq is not None else Fraction(1)
        if weight <= 0:
            return 0.0
        total = sum(
            (
                self.weights.get(r, Fraction(1)) * v
                for r, v in self.consumed.get(key, {}).items()
            ),
            Fraction(0),
        )
        return float(total / weight)

    def record(self, t: float) -> None:
        """Append the usage at ``t`` (replacing a point already at ``t``)."""
        if self.series and self.series[-1][0] == t:
            self.series.pop()
        self.series.append((t, {key: self.usage(key) for key in sorted(self.consumed)}))

    def snapshot_base(self, stamp: datetime) -> Snapshot:
        """The base cluster whose LocalQueues carry the current usage, as
        their ``admissionFairSharingStatus`` would."""
        objects = self.base.objects
        queues = {
            key: lq.model_copy(
                update={
                    "consumed": tuple(sorted(self.consumed.get(key, {}).items())),
                    "consumed_at": stamp,
                }
            )
            for key, lq in objects.local_queues.items()
        }
        return Snapshot(dataclasses.replace(objects, local_queues=queues))
