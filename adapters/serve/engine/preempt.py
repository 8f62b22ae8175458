"""Carrying out the plan's preemptions: evictions for gangs, Kueue's way for Workloads.

Victim gangs are evicted pod by pod through ``pods/eviction`` so
PodDisruptionBudgets apply.  Before the first eviction of a victim the budgets
are checked against every member; if one would be violated (or the API says
429), nothing is evicted, the victim is marked not-preemptible for a while
and a re-solve is requested, so the solver picks other victims instead of
leaving a victim gang half-evicted.  A 429 after part of a gang is gone (a
race with another disruption) retries and then deletes: that gang is going
down either way.

Kueue Workload victims get ``Evicted=True`` (reason ``Preempted``) and
``Preempted=True`` with the plan's reason and Kueue's own message, written as a
conditional status patch; Kueue's job integration then stops the job and
releases the quota.  The preemptor waits until its victims are gone
(:meth:`placewise.adapters.serve.modes.binder.Binder.victims_left`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.serve.config import ServeConfig
from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.snapshot import SnapshotBuilder, node_of
from placewise.adapters.serve.engine.solveloop import PlanState
from placewise.adapters.serve.kube.client import ApiError, Kube, Resource
from placewise.adapters.serve.kube.events import Recorder, rfc3339
from placewise.adapters.serve.kube.informer import Cache
from placewise.models.plan import PlanPreemption
from placewise.models.scheduling import raw_requirement

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.preempt")
HUMAN_REASONS = {
    "InClusterQueue": "prioritization in the ClusterQueue",
    "InCohortReclamation": "reclamation within the cohort",
    "InCohortFairSharing": "Fair Sharing within the cohort",
    "InCohortReclaimWhileBorrowing": "reclamation within the cohort while borrowing",
}
DELETE_AFTER = 3


def selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector; a null selector matches nothing, {} everything."""
    if not isinstance(selector, dict):
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        req = raw_requirement(expr)  # an unknown operator is ignored
        if req is not None and not req.matches(labels):
            return False
    return True


def set_condition(conditions: list[JSON], cond: JSON) -> list[JSON]:
    """apimeta.SetStatusCondition: replace by type, keep the transition time
    when the status does not change."""
    out = []
    found = False
    for old in conditions:
        if old.get("type") == cond["type"]:
            found = True
            if old.get("status") == cond["status"]:
                cond = {**cond, "lastTransitionTime": old.get("lastTransitionTime")}
            out.append(cond)
        else:
            out.append(old)
    if not found:
        out.append(cond)
    return out


def conditions(obj: JSON) -> dict[str, str]:
    """A raw object's status conditions: type -> status."""
    return {
        str(c.get("type")): str(c.get("status"))
        for c in (obj.get("status") or {}).get("conditions") or []
        if isinstance(c, dict)
    }


def holds_quota(wl: JSON) -> bool:
    """The raw-object form of ``Workload.is_running`` (formats.md §1): an
    admission, QuotaReserved=True, active and not finished, as Kueue's cache
    counts usage.  An evicted Workload holds quota until its reservation is
    cleared."""
    status = wl.get("status") or {}
    if not status.get("admission") or (wl.get("spec") or {}).get("active") is False:
        return False
    conds = conditions(wl)
    return conds.get("QuotaReserved") == "True" and conds.get("Finished") != "True"


class Evictor:
    def __init__(
        self,
        kube: Kube,
        cache: Cache,
        cfg: ServeConfig,
        metrics: Metrics,
        events: Recorder,
        builder: SnapshotBuilder,
        workloads: Resource | None,
        leading: Callable[[], bool],
    ) -> None:
        self.kube, self.cache, self.cfg = kube, cache, cfg
        self.metrics, self.events, self.builder = metrics, events, builder
        self.workloads = workloads
        self.leading = leading
        self._refusals: dict[str, int] = {}
        self._evicted: dict[str, float] = {}  # pod uid -> when we evicted it

    def act(self, state: PlanState) -> None:
        admitted = {a.workload for a in state.plan.admissions}
        for p in state.plan.preemptions:
            if not self.leading():
                return
            if p.preemptor not in admitted:
                continue
            if p.workload in state.built.gangs:
                self._evict_gang(state, p)
            elif p.workload in state.built.kueue and self._still_needed(state, p):
                self.evict_workload(state, p)

    def _still_needed(self, state: PlanState, p: PlanPreemption) -> bool:
        """Kueue evicts only for a preemptor that is still pending.  A plan is
        acted on for a while after it was computed: one whose Kueue preemptor
        has been admitted since (by a newer plan), deleted, finished or
        deactivated must not evict anything for it."""
        if p.preemptor not in state.built.kueue:
            return True  # a gang: its own checks apply
        wl = self.cache.get("Workload", p.preemptor)
        if wl is None or holds_quota(wl):
            return False
        if (wl.get("spec") or {}).get("active") is False:
            return False
        return not any(
            c.get("type") == "Finished" and c.get("status") == "True"
            for c in (wl.get("status") or {}).get("conditions") or []
        )

    def _protect(self, key: str, why: str) -> None:
        log.info("victim %s refused (%s); re-planning with other victims", key, why)
        self.builder.protected[key] = time.monotonic() + self.cfg.protect_seconds
        self.metrics.preemptions.labels("pod", "blocked").inc()
        self.cache.touch()

    def budget_refuses(self, pods: list[JSON]) -> str | None:
        """A PodDisruptionBudget that evicting all of ``pods`` would violate."""
        need: dict[str, int] = {}
        budgets: dict[str, JSON] = {}
        for pdb in self.cache.items("PodDisruptionBudget"):
            budgets[
                f"{gangmod.meta(pdb).get('namespace')}/{gangmod.meta(pdb).get('name')}"
            ] = pdb
        for pod in pods:
            meta = gangmod.meta(pod)
            for key, pdb in budgets.items():
                if gangmod.meta(pdb).get("namespace") != meta.get("namespace"):
                    continue
                if selector_matches(
                    (pdb.get("spec") or {}).get("selector"), meta.get("labels") or {}
                ):
                    need[key] = need.get(key, 0) + 1
        for key, n in sorted(need.items()):
            allowed = int(
                (budgets[key].get("status") or {}).get("disruptionsAllowed") or 0
            )
            if n > allowed:
                return (
                    f"PodDisruptionBudget {key} allows {allowed} disruption(s), "
                    f"{n} needed"
                )
        return None

    def _evict_gang(self, state: PlanState, p: PlanPreemption) -> None:
        view = state.built.gangs[p.workload]
        live = []
        for pod in view.gang.pods:
            current = self.cache.get(
                "Pod", f"{view.gang.namespace}/{gangmod.meta(pod).get('name')}"
            )
            if current is not None and not gangmod.meta(current).get(
                "deletionTimestamp"
            ):
                live.append(current)
        fresh = [
            q for q in live if str(gangmod.meta(q).get("uid")) not in self._evicted
        ]
        if not fresh:
            return
        if len(fresh) == len(view.gang.pods):  # nothing evicted yet: all or nothing
            refusal = self.budget_refuses(fresh)
            if refusal is not None:
                self._protect(p.workload, refusal)
                return
        self.builder.evicting.add(p.workload)
        preemptor = state.built.gangs.get(p.preemptor)
        related = preemptor.gang.pods[0] if preemptor and preemptor.gang.pods else None
        for pod in fresh:
            if not self.leading():  # re-checked at each eviction
                return
            meta = gangmod.meta(pod)
            ns, name, uid = (
                str(meta.get("namespace")),
                str(meta.get("name")),
                str(meta.get("uid")),
            )
            try:
                if self._refusals.get(uid, 0) >= DELETE_AFTER:
                    self.kube.delete_pod(ns, name, uid)
                else:
                    self.kube.evict(ns, name, uid)
            except ApiError as exc:
                if exc.status == 404:
                    continue
                if exc.status == 429:
                    if len(fresh) == len(view.gang.pods) and pod is fresh[0]:
                        self._protect(p.workload, exc.message or "eviction refused")
                        self.builder.evicting.discard(p.workload)
                        return
                    self._refusals[uid] = self._refusals.get(uid, 0) + 1
                    continue
                log.info("evicting %s/%s: %s (retrying next tick)", ns, name, exc)
                continue
            self._evicted[uid] = time.monotonic()
            self.metrics.preemptions.labels("pod", "evicted").inc()
            node = node_of(self.cache, pod) or "?"
            who = gangmod.meta(related).get("uid") if related else p.preemptor
            self.events.event(
                pod,
                "Preempted",
                f"Preempted by pod {who} on node {node} "
                f"(gang {p.preemptor}, {p.reason})",
                action="Preempting",
                related=related,
            )
        if len(self._evicted) > 10000:
            cutoff = time.monotonic() - 600
            self._evicted = {u: t for u, t in self._evicted.items() if t > cutoff}
        if len(self._refusals) > 10000:
            self._refusals.clear()  # counts only escalate to DELETE; start over

    def _cq_path(self, state: PlanState, cq: str) -> str:
        snap = state.built.snapshot
        queue = snap.cluster_queues.get(cq)
        parts = [cq] + (snap.ancestors(queue) if queue is not None else [])
        return "/" + "/".join(reversed(parts))

    def evict_workload(self, state: PlanState, p: PlanPreemption) -> None:
        """Mark a Kueue Workload evicted the way Kueue's IssuePreemptions does."""
        if self.workloads is None:
            return
        for _ in range(3):
            wl = self.cache.get("Workload", p.workload)
            if wl is None or not self.leading():  # re-checked at each write
                return
            if not holds_quota(wl):
                # Finished (or released) since the plan was made: its room is
                # free already, and Kueue never evicts a finished Workload.
                return
            status = wl.get("status") or {}
            conds = list(status.get("conditions") or [])
            if any(
                c.get("type") == "Evicted" and c.get("status") == "True" for c in conds
            ):
                return
            snap = state.built.snapshot
            pre = snap.workloads.get(p.preemptor)
            victim = snap.workloads.get(p.workload)
            pre_cq = snap.cluster_queue_of(pre) if pre else None
            vic_cq = (
                victim.admission.cluster_queue if victim and victim.admission else ""
            )
            pre_raw = state.built.kueue.get(p.preemptor) or {}
            labels = gangmod.meta(pre_raw).get("labels") or {}
            job_uid = labels.get("kueue.x-k8s.io/job-uid", "UNKNOWN")
            pre_path = self._cq_path(state, pre_cq) if pre_cq else "UNKNOWN"
            vic_path = self._cq_path(state, vic_cq) if vic_cq else "UNKNOWN"
            message = (
                "Preempted to accommodate a workload "
                f"(UID: {pre.uid if pre else 'UNKNOWN'}, JobUID: {job_uid}) "
                f"due to {HUMAN_REASONS.get(p.reason, 'UNKNOWN')}; "
                f"preemptor path: {pre_path}; preemptee path: {vic_path}"
            )
            now = rfc3339()
            gen = gangmod.meta(wl).get("generation")
            conds = set_condition(
                conds,
                {
                    "type": "Evicted",
                    "status": "True",
                    "reason": "Preempted",
                    "message": message,
                    "lastTransitionTime": now,
                    **({"observedGeneration": gen} if gen is not None else {}),
                },
            )
            conds = set_condition(
                conds,
                {
                    "type": "Preempted",
                    "status": "True",
                    "reason": p.reason,
                    "message": message,
                    "lastTransitionTime": now,
                },
            )
            ns, name = p.workload.split("/", 1)
            body = {
                "metadata": {
                    "resourceVersion": gangmod.meta(wl).get("resourceVersion")
                },
                "status": {"conditions": conds},
            }
            try:
                updated = self.kube.patch_status(self.workloads, ns, name, body)
            except ApiError as exc:
                if exc.status == 409:
                    fresh = self.kube.get(self.workloads, ns, name)
                    if fresh is not None:
                        self.cache.apply("Workload", "MODIFIED", fresh)
                    continue
                log.info("evicting workload %s: %s", p.workload, exc)
                return
            self.cache.apply("Workload", "MODIFIED", updated)
            self.builder.evicting.add(p.workload)
            self.metrics.preemptions.labels("workload", "evicted").inc()
            self.events.event(updated, "Preempted", message, action="Preempted")
            if pre_raw:
                self.events.event(
                    pre_raw,
                    "PreemptedWorkload",
                    f"Preempted workload {p.workload} "
                    f"(UID: {victim.uid if victim else ''}) in ClusterQueue {vic_cq}",
                    action="PreemptedWorkload",
                )
            return
