"""Who gets a reservation: the head-of-line workload that kept losing.

Kueue admits whatever fits each cycle, so a large gang waits while smaller
work keeps taking every host that frees up: replayed over hours, the
largest jobs' delay grows without bound (issue 19, item 5).  Slurm's
backfill answers this with a reservation for the head of the queue and
backfill that does not delay it; placewise does the same once a workload
has waited ``Policy.starvation_minutes`` (its wait counted from its queue
order time, which a requeue after an eviction resets).

The choice is a function of the snapshot alone (wait times and the
cluster's occupancy), never of solver memory: every re-solve, the replay's
and the sidecar's, a restart and a new leader all reserve for the same
workload until it runs, and the reservation cannot outlive its reason.
One workload at a time, as Slurm reserves for its top job first: several
reservations would split the room the first one is draining.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from placewise.models.snapshot import Snapshot
from placewise.models.timing import aware
from placewise.models.workload import Workload
from placewise.solver.policy import Policy


@dataclass(frozen=True, slots=True)
class Reservation:
    """Room held for one starving workload, as every solver honours it."""

    workload: str
    priority: int
    leaves: frozenset[tuple[str, tuple[str, ...]]]
    """(TAS flavor, topologyAssignment domain values) of the held hosts."""

    def shuts_out(self, key: str, priority: int) -> bool:
        """Whether a pending workload may not use the held hosts: everyone of
        its priority or lower but the workload itself."""
        return key != self.workload and priority <= self.priority


CANDIDATES = 4
"""Starving workloads tried in order; one that cannot fit even on an
emptied cluster (more than its quota allows) yields to the next."""


def waited_seconds(w: Workload, now: datetime) -> int:
    """How long ``w`` has waited since it was (re)queued; never negative."""
    since = aware(w.queue_order_timestamp)
    assert since is not None
    return max(0, int((now - since).total_seconds()))


def starving(snapshot: Snapshot, pol: Policy) -> list[Workload]:
    """Pending workloads past the threshold, in reservation order: highest
    priority first (a reservation never holds room against higher
    priority work), then the longest wait, then the key."""
    now = snapshot.now
    if pol.starvation_minutes <= 0 or now is None:
        return []
    limit = pol.starvation_minutes * 60
    waits = [(w, waited_seconds(w, now)) for w in snapshot.pending]
    late = [(w, s) for w, s in waits if s >= limit]
    late.sort(key=lambda ws: (-ws[0].priority, -ws[1], ws[0].key))
    return [w for w, _ in late[:CANDIDATES]]
