"""The greedy's reservation: room held for a starving workload.

:mod:`placewise.solver.reservation` names the workload; this module finds
its room and holds it in the cluster state for the whole run.  The room is
where it would start soonest without knowing run times: on the cluster
with the least-used hosts emptied, one more host at a time until it fits
(found by bisection; emptying more never hurts), its placement there is
the reservation.  Those hosts drain: nothing of its priority or lower
lands on them (but other workloads past the threshold, see
:func:`placewise.solver.reservation.starving_keys`), so it starts once
their current work ends, while every other host stays open to backfill.
Higher-priority work ignores the hold (Kueue's tiers stay first), and
only its own ClusterQueue's work sees the held quota: another queue
borrowing it is reclaimed by Kueue's own rules, and quota held in the tree
would make the queue look borrowing to reclaimers.  Nothing is evicted
for a reservation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from placewise.models.snapshot import Snapshot
from placewise.solver.greedy.flavors import Assignment
from placewise.solver.greedy.modes import Mode
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.kueue.workload import TasUsage, WlInfo
from placewise.solver.policy import Policy
from placewise.solver.reservation import (
    Reservation,
    starving,
    starving_keys,
    waited_seconds,
)

if TYPE_CHECKING:
    from placewise.solver.greedy.scheduler import GreedyScheduler

Leaf = tuple[str, tuple[str, ...]]
"""(flavor, leaf domain values): one host of a TAS flavor."""


@dataclass(slots=True, eq=False)
class Hold:
    """The room held for ``info`` and how much of it is in the state now."""

    info: WlInfo
    usage: dict[FR, int]
    tas: list[TasUsage]
    hosts: int
    waited_s: int
    starving: frozenset[str] = frozenset()
    """Other starving workloads: the hold is not shown to them."""
    quota_on: bool = False
    tas_on: bool = False

    @property
    def key(self) -> str:
        return self.info.key

    def reservation(self) -> Reservation:
        """What other solvers honour of it (the optimizer closes these hosts)."""
        leaves = frozenset(
            (t.flavor, tuple(d.values)) for t in self.tas for d in t.assignment.domains
        )
        return Reservation(self.key, self.info.priority, leaves, self.starving)

    def show_to(self, sched: GreedyScheduler, other: WlInfo) -> None:
        """Put in the state what ``other`` must see of the hold."""
        if (
            other.key == self.key
            or other.key in self.starving
            or other.priority > self.info.priority
        ):
            self._set(sched, quota=False, tas=False)
        else:
            self._set(sched, quota=other.cq == self.info.cq, tas=True)

    def explain(self, reasons: dict[str, str]) -> None:
        """The plan says why the room next to a waiting gang stays empty."""
        if self.key in reasons:
            reasons[self.key] += (
                f" (waited {self.waited_s // 60} min: {self.hosts} host(s) "
                "reserved for it, closed to work of its priority or lower)"
            )

    def release(self, sched: GreedyScheduler) -> None:
        self._set(sched, quota=False, tas=False)

    def _set(self, sched: GreedyScheduler, quota: bool, tas: bool) -> None:
        state, cq = sched.state, self.info.cq
        if quota != self.quota_on:
            move = state.add_usage if quota else state.remove_usage
            move(cq, self.usage, [])
            self.quota_on = quota
        if tas != self.tas_on:
            move = state.add_usage if tas else state.remove_usage
            move(cq, {}, self.tas)
            self.tas_on = tas


def reservation_of(snapshot: Snapshot, pol: Policy) -> Reservation | None:
    """The reservation a greedy run under ``pol`` would hold, for solvers
    that honour it without running the greedy's cycles (the optimizer's
    model closes its hosts)."""
    if not starving(snapshot, pol):
        return None  # the common case, without building any state
    from placewise.solver.greedy.scheduler import GreedyScheduler

    hold = find_hold(GreedyScheduler(snapshot, policy=pol), pol)
    return hold.reservation() if hold is not None else None


def find_hold(sched: GreedyScheduler, pol: Policy) -> Hold | None:
    """The reservation of this run, or None (nobody starving, or nobody
    who could fit even on an emptied cluster)."""
    now = sched.snapshot.now
    queued = {
        info.key: info
        for q in sched.queues.values()
        for info in (*q.active.values(), *q.parked.values())
    }
    for w in starving(sched.snapshot, pol):
        info = queued.get(w.key)
        if info is None or now is None:
            continue
        found = _room(sched, info)
        if found is not None:
            tas = list(found.tas_usage)
            hosts = {(t.flavor, d.values) for t in tas for d in t.assignment.domains}
            return Hold(
                info,
                found.quota_usage(),
                tas,
                len(hosts),
                waited_seconds(w, now),
                starving_keys(sched.snapshot, pol) - {w.key},
            )
    return None


def _room(sched: GreedyScheduler, info: WlInfo) -> Assignment | None:
    groups = _drain_order(sched)

    def fit(k: int) -> Assignment | None:
        out = [i for g in groups[:k] for i in g]
        undo = sched.state.simulate_removal(out)
        try:
            sched._refused = []
            asg, _ = sched.get_assignments(info)
            return asg if asg.mode() is Mode.FIT else None
        finally:
            undo()

    return _bisect(fit, len(groups))


def _bisect(fit: Callable[[int], Assignment | None], n: int) -> Assignment | None:
    """Its placement after the shortest prefix of the drain order that
    lets it fit."""
    best = fit(0)
    if best is not None:
        return best
    best = fit(n)
    if best is None:
        return None
    lo, hi = 0, n  # fit(lo) fails, fit(hi) = best
    while hi - lo > 1:
        mid = (lo + hi) // 2
        got = fit(mid)
        if got is None:
            lo = mid
        else:
            hi, best = mid, got
    return best


def _drain_order(sched: GreedyScheduler) -> list[list[WlInfo]]:
    """Running work grouped by the host it frees, least-used host first
    (ties by name, so every solve drains the same hosts); work that holds
    quota but no host comes last, lowest priority first."""
    used: dict[Leaf, int] = defaultdict(int)
    on: dict[Leaf, list[WlInfo]] = defaultdict(list)
    hostless: list[WlInfo] = []
    for per_cq in sched.state.running.values():
        for info in per_cq.values():
            if not info.tas:
                hostless.append(info)
            for t in info.tas:
                per_pod = sum(v for r, v in t.per_pod.items() if r in ACCELERATORS)
                for d in t.assignment.domains:
                    leaf = (t.flavor, d.values)
                    used[leaf] += d.count * max(per_pod, 1)
                    on[leaf].append(info)
    groups: list[list[WlInfo]] = []
    taken: set[str] = set()
    for leaf in sorted(used, key=lambda lf: (used[lf], lf)):
        group = [i for i in on[leaf] if i.key not in taken]
        taken.update(i.key for i in group)
        if group:
            groups.append(group)
    hostless.sort(key=lambda i: (i.priority, i.key))
    groups += [[i] for i in hostless]
    return groups
