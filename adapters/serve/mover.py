"""Carrying out the plan's moves in kueue mode: evict, then admit again.

A move (:class:`placewise.models.plan.PlanMove`) is a running Workload the
plan evicts and admits again elsewhere in the same plan, to make room for a
blocked gang.  Live it happens in two steps that never share a write:

1. **Eviction, Kueue's way.**  The moved Workload gets ``Evicted=True``
   (reason ``Preempted``) and ``Preempted=True`` exactly as a preemption
   victim does (:meth:`Preemptor.evict_workload`), naming the gang the move
   makes room for.  Kueue's job integration stops the job and clears the
   reservation; the Workload is then pending in its LocalQueue again, with
   ``Requeued=True``.
2. **Re-admission from a plan.**  The admitter writes the moved Workload's
   admission only once it is pending and its pods are gone
   (:meth:`Mover.pods_left`), through the same gate as every admission
   (:func:`placewise.adapters.serve.kueue_mode.fits_now`).

Nothing between the two steps lives only in this process: the "intent" is
the Workload's own status.  After a crash between them, the Workload is
evicted (Kueue releases it) or pending; a restarted sidecar re-solves from
the cluster and admits it from its fresh plan, or Kueue's queue does.  It can
be neither lost (a pending Workload stays in its queue) nor doubled (a
Workload has one admission, written with a resourceVersion precondition).

A move is carried out only while the plan still matches the cluster: every
moved Workload unchanged since the plan's snapshot (same resourceVersion, so
still on the plan's ``from`` hosts) and some gang it makes room for still
pending.  PodDisruptionBudgets: the pods of all of a plan's moves (those of
a Workload's job: pods sharing an owner with it, or owning it, as Kueue's
pod groups do) are checked together against every budget, counting the pods
of earlier moves still going; if any budget would be exceeded no move of the
plan is made (a partial set of moves may let nothing in), the refused
Workloads are not movable for ``protect_seconds`` and a re-solve picks other
moves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.serve import gangs as gangmod
from placewise.adapters.serve.config import ServeConfig
from placewise.adapters.serve.informer import Cache
from placewise.adapters.serve.metrics import Metrics
from placewise.adapters.serve.preempt import Preemptor, holds_quota
from placewise.adapters.serve.snapshot import SnapshotBuilder
from placewise.adapters.serve.solveloop import PlanState
from placewise.models.plan import PlanPreemption

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.moves")


def _evicted(wl: JSON) -> bool:
    return any(
        c.get("type") == "Evicted" and c.get("status") == "True"
        for c in (wl.get("status") or {}).get("conditions") or []
    )


def _owner_uids(obj: JSON) -> set[str]:
    return {
        str(ref.get("uid"))
        for ref in gangmod.meta(obj).get("ownerReferences") or []
        if isinstance(ref, dict) and ref.get("uid")
    }


class Mover:
    def __init__(
        self,
        cache: Cache,
        cfg: ServeConfig,
        metrics: Metrics,
        builder: SnapshotBuilder,
        preemptor: Preemptor,
        leading: Callable[[], bool],
    ) -> None:
        self.cache, self.cfg, self.metrics = cache, cfg, metrics
        self.builder, self.preemptor, self.leading = builder, preemptor, leading
        self._going: set[str] = set()
        """Workloads this process evicted for a move whose pods may still be
        up: their pods count against the budgets until gone."""

    def moved(self, state: PlanState) -> set[str]:
        return {m.workload for m in state.plan.moves}

    def pods_left(self, key: str) -> list[JSON]:
        """Live pods of the Workload's job: they still hold their nodes."""
        wl = self.cache.get("Workload", key)
        if wl is None:
            return []
        ns = gangmod.meta(wl).get("namespace")
        owners = _owner_uids(wl)
        uid = str(gangmod.meta(wl).get("uid") or "")
        out = []
        for pod in self.cache.items("Pod"):
            meta = gangmod.meta(pod)
            if meta.get("namespace") != ns or not gangmod.is_live(pod):
                continue
            if str(meta.get("uid")) in owners or (_owner_uids(pod) & (owners | {uid})):
                out.append(pod)
        return out

    def in_flight(self, state: PlanState) -> list[str]:
        """Moved Workloads evicted but not yet gone: the room the plan's
        other admissions count on is not free until they are."""
        left = []
        for key in sorted(self.moved(state)):
            wl = self.cache.get("Workload", key)
            if wl is None:
                continue
            if (holds_quota(wl) and _evicted(wl)) or (
                not holds_quota(wl) and self.pods_left(key)
            ):
                left.append(key)
        return left

    def act(self, state: PlanState) -> None:
        """Evict the plan's moved Workloads (all or none), if it still holds."""
        if not state.plan.moves or not self.leading():
            return
        self._going = {k for k in self._going if self.pods_left(k)}
        moved = self.moved(state)
        todo = []
        for move in state.plan.moves:
            wl = self.cache.get("Workload", move.workload)
            seen = state.built.kueue.get(move.workload)
            if wl is None or seen is None or not holds_quota(wl) or _evicted(wl):
                continue  # gone, already evicted, or admitted anew
            if gangmod.meta(wl).get("resourceVersion") != gangmod.meta(seen).get(
                "resourceVersion"
            ):
                return  # the cluster moved on since the plan: wait for the next
            todo.append(move.workload)
        if not todo:
            return
        beneficiary = self._beneficiary(state, moved)
        if beneficiary is None:
            return  # nothing the moves make room for is still waiting
        pods = [p for key in sorted(self._going) for p in self.pods_left(key)]
        for key in todo:
            pods += self.pods_left(key)
        refusal = self.preemptor.budget_refuses(pods)
        if refusal is not None:
            until = time.monotonic() + self.cfg.protect_seconds
            for key in todo:
                self.builder.protected[key] = until
            self.metrics.preemptions.labels("workload", "blocked").inc()
            log.info("moves of %s refused (%s); re-planning", ", ".join(todo), refusal)
            self.cache.touch()
            return
        for key in todo:
            if not self.leading():
                return
            same_cq = self._cq(state, key) == self._cq(state, beneficiary)
            self.preemptor.evict_workload(
                state,
                PlanPreemption(
                    workload=key,
                    preemptor=beneficiary,
                    reason="InClusterQueue" if same_cq else "InCohortReclamation",
                ),
            )
            self._going.add(key)
            log.info("moving workload %s to make room for %s", key, beneficiary)

    def _beneficiary(self, state: PlanState, moved: set[str]) -> str | None:
        """The first Workload the plan admits, other than the moved ones,
        that is still pending: the gang the moves make room for."""
        for adm in state.plan.admissions:
            if adm.workload in moved or adm.workload not in state.built.kueue:
                continue
            wl = self.cache.get("Workload", adm.workload)
            if wl is not None and not holds_quota(wl):
                return adm.workload
        return None

    def _cq(self, state: PlanState, key: str) -> str | None:
        snap = state.built.snapshot
        w = snap.workloads.get(key)
        return snap.cluster_queue_of(w) if w is not None else None
