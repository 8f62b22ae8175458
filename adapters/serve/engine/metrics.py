"""Prometheus metrics of one sidecar, in their own registry.

Names follow kube-scheduler's and Kueue's shapes with a ``placewise_``
prefix (cluster-protocols §5); histogram buckets are exponential from 1 ms as
upstream's are.  A registry per instance lets tests run several sidecars in
one process without collisions.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

BUCKETS = tuple(0.001 * 2**i for i in range(17))


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.solve_duration = Histogram(
            "placewise_solve_duration_seconds",
            "Wall time of one re-solve, by solver used and outcome.",
            ["solver", "result"],
            buckets=BUCKETS,
            registry=r,
        )
        self.fallbacks = Counter(
            "placewise_solver_fallbacks_total",
            "Re-solves that fell back to the greedy solver.",
            ["reason"],
            registry=r,
        )
        self.gangs_pending = Gauge(
            "placewise_gangs_pending",
            "Gangs/workloads the current plan leaves pending.",
            registry=r,
        )
        self.gangs_admitted = Gauge(
            "placewise_gangs_admitted",
            "Gangs/workloads the current plan admits (not yet bound).",
            registry=r,
        )
        self.preemptions = Counter(
            "placewise_preemptions_total",
            "Victims acted on: evicted pods or evicted Kueue Workloads.",
            ["kind", "result"],
            registry=r,
        )
        self.moves = Counter(
            "placewise_moves_total",
            "Kueue mode: moved Workloads evicted, or moves a PodDisruptionBudget "
            "refused (nothing of that plan's moves evicted).",
            ["result"],
            registry=r,
        )
        self.binds = Counter(
            "placewise_bind_total",
            "Gang bind attempts by result.",
            ["result"],
            registry=r,
        )
        self.bind_failures = Counter(
            "placewise_bind_failures_total",
            "Gang binds that failed (and were rolled back), by cause.",
            ["reason"],
            registry=r,
        )
        self.extender_duration = Histogram(
            "placewise_extender_request_duration_seconds",
            "Extender request latency by verb and result.",
            ["verb", "result"],
            buckets=BUCKETS,
            registry=r,
        )
        self.watch_restarts = Counter(
            "placewise_watch_restarts_total",
            "Watch restarts by resource and reason (gone = 410, error).",
            ["resource", "reason"],
            registry=r,
        )
        self.is_leader = Gauge(
            "placewise_is_leader", "1 while this replica holds the Lease.", registry=r
        )
        self.admissions_written = Counter(
            "placewise_kueue_admissions_total",
            "Kueue Workload admissions written.",
            registry=r,
        )

        self.http_rejected = Counter(
            "placewise_http_rejected_total",
            "Connections and requests refused or dropped by a listener: busy "
            "(over the connection limit), timeout, too_large, length (no "
            "Content-Length), malformed, tls (failed handshake).",
            ["listener", "reason"],
            registry=r,
        )

    def http_rejected_observer(self) -> Callable[[str, str], None]:
        return lambda listener, reason: self.http_rejected.labels(
            listener, reason
        ).inc()

    def exposition(self) -> bytes:
        return bytes(generate_latest(self.registry))
