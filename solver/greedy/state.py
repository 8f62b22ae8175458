"""Mutable cluster state of a greedy run: quota usage, TAS usage, running set.

Kept incrementally (a workload is added or removed in O(tree depth +
domains)), never rebuilt per cycle; what-if operations return their own
undo, as Kueue's ``Snapshot.SimulateWorkloadRemoval`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from placewise.models.snapshot import Snapshot
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.tas import TasState
from placewise.solver.kueue.tas.tables import Prepared
from placewise.solver.kueue.workload import TasUsage, WlInfo, running_info


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
            for t in info.tas:  # the rows the build prepared, not again
                t.prepared = self.tas.built_rows(t.flavor, t.assignment, t.per_pod)
        self.tas.forget_built()
        self._issued = 0
        self.version = 0
        """A fresh number on every change made through this class (never one
        used before); a what-if that is undone exactly (``simulate_removal``,
        a preemption search) puts the number back. Equal versions therefore
        mean an equal state: an answer computed on the state may be reused
        while the version holds."""

    def _bump(self) -> None:
        self._issued += 1
        self.version = self._issued

    def prepared(self, info: WlInfo) -> list[Prepared]:
        return [
            self._prepared(t) if t.prepared is None else t.prepared for t in info.tas
        ]

    def prepared_usage(self, t: TasUsage) -> Prepared:
        """One usage's table rows (prepared once, kept on the usage)."""
        return self._prepared(t) if t.prepared is None else t.prepared

    def _prepared(self, t: TasUsage) -> Prepared:
        if t.prepared is None:
            t.prepared = self.tas.prepare(t.flavor, t.assignment, t.per_pod)
        return t.prepared

    def add(self, info: WlInfo, tas_too: bool = True) -> None:
        """``tas_too=False`` touches quota only: a quota-only simulation (the
        preemption oracle) must undo with the same flag."""
        self._bump()
        self.quota.add_usage(info.cq, info.usage)
        if tas_too and info.tas:
            self.tas.apply(self.prepared(info), 1)
        self.running[info.cq][info.key] = info

    def remove(self, info: WlInfo, tas_too: bool = True) -> None:
        self._bump()
        self.quota.remove_usage(info.cq, info.usage)
        if tas_too and info.tas:
            self.tas.apply(self.prepared(info), -1)
        self.running[info.cq].pop(info.key, None)

    def move_many(self, infos: list[WlInfo], sign: int) -> None:
        """Add (1) or remove (-1) several workloads at once: quota summed per
        queue (``quota_move``) and the TAS tables in one update."""
        self._bump()
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
        self._bump()
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
        before = self.version
        removed = [i for i in infos if i.key in self.running.get(i.cq, {})]
        for i in removed:
            self.remove(i)
        after = self.version

        def undo() -> None:
            exact = self.version == after  # nothing else changed meanwhile
            for i in reversed(removed):
                self.add(i)
            if exact:
                self.version = before

        return undo

    def add_usage(
        self, cq: str, usage: Mapping[FR, int], tas: Iterable[TasUsage]
    ) -> None:
        """Snapshot-only usage (reservations, preemptors waiting for victims).

        The TAS rows are prepared once per :class:`TasUsage` (the same
        records are added, removed, then admitted with the workload)."""
        self._bump()
        self.quota.add_usage(cq, usage)
        for t in tas:
            self.tas.apply([self._prepared(t)], 1)

    def remove_usage(
        self, cq: str, usage: Mapping[FR, int], tas: Iterable[TasUsage]
    ) -> None:
        self._bump()
        self.quota.remove_usage(cq, usage)
        for t in tas:
            self.tas.apply([self._prepared(t)], -1)
