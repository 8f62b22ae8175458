"""Kueue mode: write Workload admissions exactly where Kueue's scheduler would.

For an admitted Workload the status gets ``admission`` (ClusterQueue, pod-set
assignments with flavors, resourceUsage, count and, for TAS flavors, the
topologyAssignment in the form of the served API version: v1beta2's
compressed slices, v1beta1's levels/domains) and the conditions Kueue's
``SetQuotaReservation`` + ``SyncAdmittedCondition`` set (QuotaReserved and
Admitted True, earlier Evicted/Preempted reset to False "Previously: ...").
Kueue's job integrations react to that alone and start the jobs.  A pending
Workload gets ``QuotaReserved=False`` reason ``Pending`` with the plan's
reason, as Kueue's ``requeueAndUpdate`` writes it.  Every write is a status
merge patch conditioned on the resourceVersion read; a 409 re-reads and, if
the Workload is still pending, retries.

A plan is acted on for a while after it was computed, and it may rely on
room its preemptions free — including room of victims it credits to another
preemptor.  So an admission is written only when it fits the cluster as it
is *now*: its own victims are gone, and together with the admissions written
before it in this round it passes the validator against a fresh snapshot in
which every unreleased victim still holds its quota and nodes
(:func:`fits_now`).  That is what keeps the loop from overcommitting a node
or a quota, whatever the plan's age; the rest wait, pending, for the next
round.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.preempt import holds_quota, set_condition
from placewise.adapters.serve.engine.solveloop import PlanState
from placewise.adapters.serve.kube.client import ApiError, Kube, Resource
from placewise.adapters.serve.kube.events import Recorder, rfc3339
from placewise.adapters.serve.kube.informer import Cache
from placewise.adapters.serve.modes.mover import Mover
from placewise.models.moves import HOSTNAME
from placewise.models.plan import Plan, PlanAdmission, PlanPending, SolverInfo
from placewise.models.quantity import format_units
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.kueue")

PODS_STILL_UP = "Pending: evicted pods still to go"
"""The pending message of an admission held back by a moved Workload's pods
still running (the Workload's own, or one on the hosts the admission names)."""


def _common_prefix(values: list[str]) -> str:
    """The longest prefix every value shares, character by character."""
    first = min(values)
    last = max(values)
    n = 0
    while n < len(first) and first[n] == last[n]:
        n += 1
    return first[:n]


def compress(levels: list[str], domains: list[tuple[list[str], int]]) -> JSON:
    """v1beta2 topologyAssignment: one slice, shared prefix/suffix factored out."""
    domains = sorted(domains)
    per_level: list[JSON] = []
    for li in range(len(levels)):
        column = [values[li] for values, _ in domains]
        if len(set(column)) == 1:
            per_level.append({"universal": column[0]})
            continue
        shortest = min(len(v) for v in column)
        prefix = _common_prefix(column)[: max(shortest - 1, 0)]
        rest = [v[len(prefix) :] for v in column]
        suffix = _common_prefix([r[::-1] for r in rest])[::-1]
        suffix = suffix[: max(min(len(r) for r in rest) - 1, 0)]
        individual: JSON = {}
        if prefix:
            individual["prefix"] = prefix
        if suffix:
            individual["suffix"] = suffix
        individual["roots"] = [r[: len(r) - len(suffix)] if suffix else r for r in rest]
        per_level.append({"individual": individual})
    counts = [c for _, c in domains]
    pod_counts: JSON = (
        {"universal": counts[0]} if len(set(counts)) == 1 else {"individual": counts}
    )
    return {
        "levels": list(levels),
        "slices": [
            {
                "domainCount": len(domains),
                "valuesPerLevel": per_level,
                "podCounts": pod_counts,
            }
        ],
    }


def admission_body(adm: PlanAdmission, version: str) -> JSON:
    psas = []
    for psa in adm.pod_set_assignments:
        out: JSON = {
            "name": psa.name,
            "flavors": dict(sorted(psa.flavors.items())),
            "resourceUsage": {
                r: format_units(r, v) for r, v in sorted(psa.resource_usage.items())
            },
            "count": psa.count,
        }
        ta = psa.topology_assignment
        if ta is not None:
            domains = [(list(d.values), d.count) for d in ta.domains]
            if version == "v1beta1":
                out["topologyAssignment"] = {
                    "levels": list(ta.levels),
                    "domains": [{"values": v, "count": c} for v, c in sorted(domains)],
                }
            else:
                out["topologyAssignment"] = compress(list(ta.levels), domains)
        psas.append(out)
    return {"clusterQueue": adm.cluster_queue, "podSetAssignments": psas}


def fits_now(
    snap: Snapshot, admissions: list[PlanAdmission]
) -> tuple[list[PlanAdmission], dict[str, str]]:
    """The admissions (in order) that fit ``snap`` together, and why not the rest.

    The validator judges them all at once, with nothing preempted: room a
    victim still holds is not free yet.  Each violation names the admissions
    it involves; the last of them in plan order is held back and the rest is
    judged again, until the validator has nothing to say.  So it takes one
    validation when everything fits and a few more when something does not,
    and what is held back is retried (against the cluster as it is then) in
    the next round.
    """
    pending = {w.key for w in snap.pending}
    chosen = [a for a in admissions if a.workload in pending]
    refused: dict[str, str] = {}
    while chosen:
        keys = {a.workload for a in chosen}
        plan = Plan(
            solver=SolverInfo(name="admission-gate", status="FEASIBLE"),
            admissions=tuple(chosen),
            pending=tuple(
                PlanPending(workload=k, reason="-") for k in sorted(pending - keys)
            ),
        )
        problems = validate(snap, plan)
        if not problems:
            break
        order = {a.workload: i for i, a in enumerate(chosen)}
        for v in problems:
            named = [k.strip() for k in v.workload.split(",") if k.strip() in order]
            last = max(named, key=order.__getitem__) if named else chosen[-1].workload
            refused.setdefault(last, str(v))
        chosen = [a for a in chosen if a.workload not in refused]
    return chosen, refused


def hosts_of(adm: PlanAdmission) -> set[str]:
    """The hosts a TAS admission names (its hostname level), if it names any."""
    out: set[str] = set()
    for psa in adm.pod_set_assignments:
        ta = psa.topology_assignment
        if ta is not None and ta.levels and ta.levels[-1] == HOSTNAME:
            out |= {d.values[-1] for d in ta.domains}
    return out


def _condition(conds: list[JSON], kind: str) -> JSON | None:
    return next((c for c in conds if c.get("type") == kind), None)


def _reset(conds: list[JSON], kind: str, gen: Any, now: str) -> list[JSON]:
    """Kueue's resetActiveCondition: a True condition becomes False, 'Previously'."""
    prev = _condition(conds, kind)
    if prev is None or prev.get("status") != "True":
        return conds
    return set_condition(
        conds,
        {
            "type": kind,
            "status": "False",
            "reason": "QuotaReserved",
            "message": f"Previously: {prev.get('message', '')}"[:32768],
            "lastTransitionTime": now,
            **_gen(gen),
        },
    )


def _gen(gen: Any) -> JSON:
    return {"observedGeneration": gen} if gen is not None else {}


class KueueAdmitter:
    def __init__(
        self,
        kube: Kube,
        cache: Cache,
        metrics: Metrics,
        events: Recorder,
        workloads: Resource,
        victims_left: Callable[[PlanState, tuple[str, ...]], list[str]],
        leading: Callable[[], bool],
        mover: Mover | None = None,
    ) -> None:
        self.kube, self.cache, self.metrics, self.events = kube, cache, metrics, events
        self.res = workloads
        self.victims_left = victims_left
        self.leading = leading
        self.mover = mover
        """Carries out the plan's moves; None: plans with moves are not acted
        on beyond their ordinary admissions."""
        self._refused: dict[str, str] = {}
        self._gated: tuple[int, int, tuple[str, ...]] | None = None
        """Workload -> the last reason the gate gave (logged once)."""

    def act(self, state: PlanState, current: Callable[[], Snapshot]) -> None:
        """Write what the plan admits and fits now; ``current`` snapshots the
        cache (only called when there is something to admit)."""
        victims: dict[str, tuple[str, ...]] = {}
        for p in state.plan.preemptions:
            victims[p.preemptor] = (*victims.get(p.preemptor, ()), p.workload)
        up: tuple[set[str], set[str]] = (set(), set())
        if self.mover is not None:
            if state.plan.moves:
                self.mover.act(state)
            up = self.mover.still_up()
        ready: list[PlanAdmission] = []
        for adm in state.plan.admissions:
            if adm.workload not in state.built.kueue or not self.leading():
                continue
            wl = self.cache.get("Workload", adm.workload)
            if wl is None or holds_quota(wl):
                continue  # gone, or admitted already (by an earlier round)
            if adm.workload in up[0] or hosts_of(adm) & up[1]:
                self._pending(adm.workload, PODS_STILL_UP)
                continue
            left = self.victims_left(state, victims.get(adm.workload, ()))
            if left:
                self._pending(
                    adm.workload, f"Pending the preemption of {len(left)} workload(s)"
                )
            else:
                ready.append(adm)
        if len(self._refused) > 10000:
            self._refused.clear()
        gate = (id(state.plan), self.cache.generation, tuple(a.workload for a in ready))
        if ready and gate != self._gated:  # same plan, same cluster: same answer
            fits, refused = fits_now(current(), ready)
            # Only a round that wrote nothing is remembered: a failed write
            # is retried on the next tick.
            self._gated = None if fits else gate
            for adm in fits:
                if self.leading():
                    self._admit(adm)
            for key, why in refused.items():
                if self._refused.get(key) != why:
                    log.info("not admitting %s yet: %s", key, why)
                self._refused[key] = why
                if self.leading():
                    self._pending(key, "Waiting for room the plan expects to be freed")
        for pending in state.plan.pending:
            if pending.workload in state.built.kueue and self.leading():
                self._pending(pending.workload, pending.reason)

    def _write(self, key: str, build: Callable[[JSON], JSON | None]) -> JSON | None:
        """Conditional status patch with re-read-and-retry on 409."""
        ns, name = key.split("/", 1)
        for _ in range(3):
            wl = self.cache.get("Workload", key)
            if wl is None or not self.leading():  # re-checked at each write
                return None
            status = build(wl)
            if status is None:
                return None
            body = {
                "metadata": {
                    "resourceVersion": gangmod.meta(wl).get("resourceVersion")
                },
                "status": status,
            }
            try:
                updated = self.kube.patch_status(self.res, ns, name, body)
            except ApiError as exc:
                if exc.status == 409:
                    fresh = self.kube.get(self.res, ns, name)
                    if fresh is None:
                        return None
                    self.cache.apply("Workload", "MODIFIED", fresh)
                    continue
                log.info("status of workload %s: %s", key, exc)
                return None
            self.cache.apply("Workload", "MODIFIED", updated)
            return updated
        return None

    def _admit(self, adm: PlanAdmission) -> None:
        def build(wl: JSON) -> JSON | None:
            status = wl.get("status") or {}
            conds = list(status.get("conditions") or [])
            reserved = _condition(conds, "QuotaReserved")
            if (
                status.get("admission")
                and reserved
                and reserved.get("status") == "True"
            ):
                return None  # admitted meanwhile (by us or by Kueue): nothing to do
            now, gen = rfc3339(), gangmod.meta(wl).get("generation")
            conds = set_condition(
                conds,
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": f"Quota reserved in ClusterQueue {adm.cluster_queue}",
                    "lastTransitionTime": now,
                    **_gen(gen),
                },
            )
            conds = _reset(conds, "Evicted", gen, now)
            conds = _reset(conds, "Preempted", gen, now)
            conds = set_condition(
                conds,
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "The workload is admitted",
                    "lastTransitionTime": now,
                    **_gen(gen),
                },
            )
            return {
                "admission": admission_body(adm, self.res.version),
                "conditions": conds,
            }

        updated = self._write(adm.workload, build)
        if updated is None:
            return
        self.metrics.admissions_written.inc()
        created = gangmod.meta(updated).get("creationTimestamp")
        waited = 0.0
        with contextlib.suppress(ValueError):
            waited = (
                datetime.now(UTC)
                - datetime.fromisoformat(str(created).replace("Z", "+00:00"))
            ).total_seconds()
        cq = adm.cluster_queue
        self.events.event(
            updated,
            "QuotaReserved",
            f"Quota reserved in ClusterQueue {cq}, wait time since queued "
            f"was {max(waited, 0):.0f}s",
            action="QuotaReserved",
        )
        self.events.event(
            updated,
            "Admitted",
            f"Admitted by ClusterQueue {cq}, wait time since reservation was 0s",
            action="Admitted",
        )
        log.info("admitted workload %s in ClusterQueue %s", adm.workload, cq)
        if adm.replaces:
            self._finish_replaced(adm.replaces, updated)

    def _finish_replaced(self, key: str, successor: JSON) -> None:
        """Kueue's scheduler finishes the slice an admitted elastic slice
        replaces (``replaceWorkloadSlice``): the job keeps its pods, the old
        Workload stops holding quota; not an eviction."""
        uid = gangmod.meta(successor).get("uid", "")
        message = (
            f"Replaced to accommodate a workload (UID: {uid}, JobUID: ) due to "
            "workload slice aggregation"
        )

        def build(wl: JSON) -> JSON | None:
            conds = list((wl.get("status") or {}).get("conditions") or [])
            done = _condition(conds, "Finished")
            if done is not None and done.get("status") == "True":
                return None
            conds = set_condition(
                conds,
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": "WorkloadSliceReplaced",
                    "message": message,
                    "lastTransitionTime": rfc3339(),
                    **_gen(gangmod.meta(wl).get("generation")),
                },
            )
            return {"conditions": conds}

        updated = self._write(key, build)
        if updated is not None:
            self.events.event(
                updated, "WorkloadSliceReplaced", message, action="Replaced"
            )
            log.info("finished workload slice %s (replaced)", key)

    def _pending(self, key: str, reason: str) -> None:
        def build(wl: JSON) -> JSON | None:
            status = wl.get("status") or {}
            conds = list(status.get("conditions") or [])
            reserved = _condition(conds, "QuotaReserved")
            if reserved is not None and reserved.get("status") == "True":
                return None  # running: not ours to touch
            if (
                reserved is not None
                and reserved.get("reason") == "Pending"
                and reserved.get("message") == reason
            ):
                return None
            conds = set_condition(
                conds,
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": reason[:32768],
                    "lastTransitionTime": rfc3339(),
                    **_gen(gangmod.meta(wl).get("generation")),
                },
            )
            return {"conditions": conds}

        updated = self._write(key, build)
        if updated is not None:
            self.events.event(
                updated, "Pending", reason, action="Pending", type_="Warning"
            )
