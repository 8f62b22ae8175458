"""Mutable cluster state of a greedy run: quota usage, TAS usage, running set.

Kept incrementally (a workload is added or removed in O(tree depth +
domains)), never rebuilt per cycle; what-if operations return their own
undo, as Kueue's ``Snapshot.SimulateWorkloadRemoval`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment, TopologyAssignment, Workload
from placewise.solver.quota import FR, QuotaTree
from placewise.solver.tas import TasState
from placewise.solver.tas.state import Prepared


@dataclass(slots=True)
class TasUsage:
    flavor: str
    assignment: TopologyAssignment
    per_pod: dict[str, int]
    prepared: Prepared | None = None
    """Cached table deltas: a running workload moves in and out of
    preemption simulations many times."""


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
    preemptible: bool = field(init=False)
    priority: int = field(init=False)
    queue_ts: datetime = field(init=False)
    victim_order: tuple[int, float, str] = field(init=False)
    """Kueue's candidate order after its first two keys (§5.2): lowest
    priority, then most recently reserved, then UID."""

    def __post_init__(self) -> None:
        # Hot: read millions of times in a large run's preemption searches.
        self.key = self.obj.key
        self.preemptible = self.obj.preemptible
        self.priority = self.obj.priority
        self.queue_ts = self.obj.queue_order_timestamp
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
            r: v // psa.count for r, v in psa.resource_usage.items() if r != "pods"
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


class ClusterState:
    """Quota tree + TAS capacity + which workloads hold quota in which queue."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.quota = QuotaTree(snapshot)
        self.tas = TasState.build(snapshot)
        self.running: dict[str, dict[str, WlInfo]] = {
            name: {} for name in snapshot.cluster_queues
        }
        for w in snapshot.running:
            info = running_info(snapshot, w)
            self.running[info.cq][info.key] = info

    def prepared(self, info: WlInfo) -> list[Prepared]:
        out = []
        for t in info.tas:
            if t.prepared is None:
                t.prepared = self.tas.prepare(t.flavor, t.assignment, t.per_pod)
            out.append(t.prepared)
        return out

    def add(self, info: WlInfo, tas_too: bool = True) -> None:
        """``tas_too=False`` touches quota only: a quota-only simulation (the
        preemption oracle) must undo with the same flag."""
        self.quota.add_usage(info.cq, info.usage)
        if tas_too and info.tas:
            self.tas.apply(self.prepared(info), 1)
        self.running[info.cq][info.key] = info

    def remove(self, info: WlInfo, tas_too: bool = True) -> None:
        self.quota.remove_usage(info.cq, info.usage)
        if tas_too and info.tas:
            self.tas.apply(self.prepared(info), -1)
        self.running[info.cq].pop(info.key, None)

    def move_many(self, infos: list[WlInfo], sign: int) -> None:
        """Add (1) or remove (-1) several workloads at once: quota summed per
        queue (``quota_move``) and the TAS tables in one update."""
        for info in infos:
            if sign > 0:
                self.running[info.cq][info.key] = info
            else:
                self.running[info.cq].pop(info.key, None)
        self.quota_move(infos, sign)
        self.tas.apply([p for i in infos for p in self.prepared(i)], sign)

    def quota_move(self, infos: Iterable[WlInfo], sign: int) -> None:
        """Quota only, ``running`` untouched (the preemption walk's what-if
        moves read nothing else and are always undone).

        Usage is summed per queue first: Kueue's add/remove propagation gives
        the same tree for one summed change as for the changes one by one (a
        run of adds, or of removes).
        """
        per_cq: dict[str, dict[FR, int]] = {}
        for info in infos:
            acc = per_cq.get(info.cq)
            if acc is None:
                acc = per_cq[info.cq] = {}
            for fr, v in info.usage.items():
                acc[fr] = acc.get(fr, 0) + v
        for cq, usage in per_cq.items():
            if sign > 0:
                self.quota.add_usage(cq, usage)
            else:
                self.quota.remove_usage(cq, usage)

    def simulate_removal(self, infos: Iterable[WlInfo]) -> Callable[[], None]:
        removed = [i for i in infos if i.key in self.running.get(i.cq, {})]
        for i in removed:
            self.remove(i)

        def undo() -> None:
            for i in reversed(removed):
                self.add(i)

        return undo

    def add_usage(
        self, cq: str, usage: Mapping[FR, int], tas: Iterable[TasUsage]
    ) -> None:
        """Snapshot-only usage (reservations, preemptors waiting for victims)."""
        self.quota.add_usage(cq, usage)
        for t in tas:
            self.tas.add_usage(t.flavor, t.assignment, t.per_pod)

    def remove_usage(
        self, cq: str, usage: Mapping[FR, int], tas: Iterable[TasUsage]
    ) -> None:
        self.quota.remove_usage(cq, usage)
        for t in tas:
            self.tas.remove_usage(t.flavor, t.assignment, t.per_pod)
