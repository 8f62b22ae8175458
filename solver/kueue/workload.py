"""A workload as every back-end sees it: what it holds, in which queue.

Kueue's ``workload.Info``: the usage per flavor-resource of an admitted (or
quota-reserved) workload, the flavor-resources its admission names, its TAS
usage per flavor, and the keys of Kueue's queue and candidate orders,
computed once (they are read millions of times in a large run).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from placewise.models.cluster import PODS
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment, TopologyAssignment, Workload
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.tas.tables import Prepared


@dataclass(slots=True)
class TasUsage:
    flavor: str
    assignment: TopologyAssignment
    per_pod: dict[str, int]
    prepared: Prepared | None = None
    """Cached table deltas: a running workload moves in and out of
    preemption simulations many times."""
    leaf_values: frozenset[str] | None = None
    """Cached last values of its domains (see :meth:`leaves`)."""

    def leaves(self) -> frozenset[str]:
        """The last value of each of its domains (hostnames, on hostname
        topologies), kept: preemption searches ask again and again."""
        if self.leaf_values is None:
            self.leaf_values = frozenset(
                d.values[-1] for d in self.assignment.domains if d.values
            )
        return self.leaf_values


@dataclass(slots=True, eq=False)
class WlInfo:
    """A workload as the greedy sees it (pending or quota-holding)."""

    obj: Workload
    cq: str
    usage: dict[FR, int] = field(default_factory=dict)
    frs: frozenset[FR] = frozenset()
    tas: list[TasUsage] = field(default_factory=list)
    evicted: bool = False

    key: str = field(init=False)
    priority: int = field(init=False)
    queue_ts: datetime = field(init=False)
    preemptible: bool = field(init=False)
    """False when the caller forbids evicting it (``Workload.preemptible``)."""
    victim_order: tuple[int, float, str] = field(init=False)
    """Kueue's candidate order after its first two keys (§5.2): lowest
    priority, then most recently reserved, then UID."""

    def __post_init__(self) -> None:
        # Hot: read millions of times in a large run's preemption searches.
        self.key = self.obj.key
        self.priority = self.obj.priority
        self.queue_ts = self.obj.queue_order_timestamp
        self.preemptible = self.obj.preemptible
        reserved = self.obj.quota_reserved_at
        self.victim_order = (
            self.priority,
            -reserved.timestamp() if reserved is not None else float("-inf"),
            self.obj.uid or self.obj.key,
        )

    @property
    def uid(self) -> str:
        return self.obj.uid or self.obj.key


def admission_frs(psas: Iterable[PodSetAssignment]) -> frozenset[FR]:
    """Flavor-resources named by an admission (Kueue's WorkloadUsesResources)."""
    return frozenset((f, r) for p in psas for r, f in p.flavors.items())


def running_info(snapshot: Snapshot, w: Workload) -> WlInfo:
    assert w.admission is not None
    tas: list[TasUsage] = []
    for psa in w.admission.pod_set_assignments:
        if psa.topology_assignment is None or psa.count <= 0:
            continue
        flavor = next(
            (
                f
                for f in psa.flavors.values()
                if f in snapshot.flavors and snapshot.flavors[f].is_tas
            ),
            None,
        )
        if flavor is None:
            continue
        per_pod = {
            r: v // psa.count for r, v in psa.resource_usage.items() if r != PODS
        }
        tas.append(TasUsage(flavor, psa.topology_assignment, per_pod))
    return WlInfo(
        obj=w,
        cq=w.admission.cluster_queue,
        usage=w.usage(),
        frs=admission_frs(w.admission.pod_set_assignments),
        tas=tas,
        evicted=w.evicted,
    )
