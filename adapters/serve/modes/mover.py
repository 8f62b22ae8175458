"""Carrying out the plan's moves in kueue mode: evict, then admit again.

A move (:class:`placewise.models.plan.PlanMove`) is a running Workload the
plan evicts and admits again elsewhere in the same plan, to make room for a
blocked gang.  Live it happens in two steps that never share a write:

1. **Eviction, Kueue's way.**  The moved Workload gets ``Evicted=True``
   (reason ``Preempted``) and ``Preempted=True`` exactly as a preemption
   victim does (:meth:`Evictor.evict_workload`), naming the gang the move
   makes room for.  Kueue's job integration stops the job and clears the
   reservation; the Workload is then pending in its LocalQueue again, with
   ``Requeued=True``.
2. **Re-admission from a plan.**  The admitter writes the moved Workload's
   admission only once it is pending and its pods are gone
   (:meth:`Mover.still_up`: no admission is written for a Workload whose
   job's pods still run, nor onto the hosts they hold), through the same
   gate as every admission
   (:func:`placewise.adapters.serve.modes.kueue_mode.fits_now`).

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

from placewise.adapters.serve.config import ServeConfig
from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.preempt import Evictor, holds_quota
from placewise.adapters.serve.engine.snapshot import SnapshotBuilder
from placewise.adapters.serve.engine.solveloop import PlanState
from placewise.adapters.serve.kube.informer import Cache
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
        preemptor: Evictor,
        leading: Callable[[], bool],
    ) -> None:
        self.cache, self.cfg, self.metrics = cache, cfg, metrics
        self.builder, self.preemptor, self.leading = builder, preemptor, leading
        self._going: set[str] = set()
        """Workloads this process evicted for a move whose pods may still be
        up: their pods count against the budgets until gone."""

    def moved(self, state: PlanState) -> set[str]:
        return {m.workload for m in state.plan.moves}

    def _pods_by_owner(self) -> dict[str, list[JSON]]:
        """Live pods bound to a node, under their owners' uids and their own."""
        out: dict[str, list[JSON]] = {}
        for pod in self.cache.items("Pod"):
            if not (pod.get("spec") or {}).get("nodeName") or not gangmod.is_live(pod):
                continue
            # Under its owners and under its own uid: a pod group's Workload
            # is owned by its pods, a Job's shares the Job with them.
            for uid in _owner_uids(pod) | {str(gangmod.meta(pod).get("uid"))}:
                out.setdefault(uid, []).append(pod)
        return out

    def pods_of(
        self, wl: JSON, by_owner: dict[str, list[JSON]] | None = None
    ) -> list[JSON]:
        """The live, bound pods of the Workload's job: pods sharing an owner
        with it (a Job's), or owned by it."""
        by_owner = self._pods_by_owner() if by_owner is None else by_owner
        uids = _owner_uids(wl) | {str(gangmod.meta(wl).get("uid") or "")}
        seen: dict[str, JSON] = {}
        for uid in sorted(uids):
            for pod in by_owner.get(uid, []):
                seen[str(gangmod.meta(pod).get("uid"))] = pod
        return list(seen.values())

    def still_up(self) -> tuple[set[str], set[str]]:
        """Workloads that hold no quota but whose pods still run (evicted,
        their job not yet stopped), and the hosts those pods hold.

        Stateless (read from the cache), so a restarted sidecar knows it as
        well: such a Workload is not admitted again, and no admission is
        written onto those hosts, until the pods are gone."""
        by_owner = self._pods_by_owner()
        keys: set[str] = set()
        hosts: set[str] = set()
        if not by_owner:
            return keys, hosts
        for wl in self.cache.items("Workload"):
            if holds_quota(wl):
                continue
            pods = self.pods_of(wl, by_owner)
            if pods:
                meta = gangmod.meta(wl)
                keys.add(f"{meta.get('namespace')}/{meta.get('name')}")
                hosts |= {str(p["spec"]["nodeName"]) for p in pods}
        return keys, hosts

    def act(self, state: PlanState) -> None:
        """Evict the plan's moved Workloads (all or none), if it still holds."""
        if not state.plan.moves or not self.leading():
            return
        self._going = {
            k
            for k in self._going
            if (wl := self.cache.get("Workload", k)) and self.pods_of(wl)
        }
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
        by_owner = self._pods_by_owner()
        pods = []
        for key in sorted(self._going | set(todo)):
            wl = self.cache.get("Workload", key)
            pods += self.pods_of(wl, by_owner) if wl is not None else []
        refusal = self.preemptor.budget_refuses(pods)
        if refusal is not None:
            until = time.monotonic() + self.cfg.protect_seconds
            for key in todo:
                self.builder.protected[key] = until
            self.metrics.moves.labels("blocked").inc(len(todo))
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
            self.metrics.moves.labels("evicted").inc()
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
