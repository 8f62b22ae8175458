"""All-or-nothing gang binding, and the rollback when a bind breaks midway.

A gang is bound only after a check against the *current* cache: every member
exists with the uid the plan saw, no member sits on another node, every
victim is gone and every planned node has room for the members planned
there.  Members are then bound one by one (the API has no multi-pod
binding); transient failures (5xx, 429, transport) and 409s that a re-read
shows harmless are retried, anything else is permanent and the bound part is
evicted again, so a gang is never left half-bound on purpose.  Every binding
carries the gang and its whole assignment as annotations: a replica that takes
over (or restarts) mid-gang finds the decision on the bound half and finishes
it (:meth:`Binder.complete`).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from placewise.adapters.serve.config import (
    ASSIGNMENT_ANNOTATION,
    GANG_ANNOTATION,
    ServeConfig,
)
from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.placement import (
    Usage,
    add,
    fits,
    member_rules,
    refusal,
)
from placewise.adapters.serve.engine.preempt import holds_quota
from placewise.adapters.serve.engine.snapshot import Decoder, GangView, node_of
from placewise.adapters.serve.engine.solveloop import PlanState
from placewise.adapters.serve.kube.client import PODS, ApiError, Kube
from placewise.adapters.serve.kube.events import Recorder
from placewise.adapters.serve.kube.informer import Cache
from placewise.models.cluster import HOSTNAME_LABEL, Node
from placewise.models.cluster import PODS as POD_COUNT

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.binder")
RETRIES = 4
SETTLE = 2.0
"""Seconds after our own bind/rollback of a gang before a half-bound view of it
is trusted (the watch may still be catching up with our writes)."""


class BindError(Exception):
    """A member could not be bound and retrying will not help."""


class Aborted(Exception):
    """Leadership was lost mid-gang: stop without undoing (the next leader
    finishes the gang from the recorded assignment)."""


class Binder:
    def __init__(
        self,
        kube: Kube,
        cache: Cache,
        cfg: ServeConfig,
        metrics: Metrics,
        events: Recorder,
        decoder: Decoder,
        leading: Callable[[], bool],
    ) -> None:
        self.kube, self.cache, self.cfg = kube, cache, cfg
        self.metrics, self.events, self.decoder = metrics, events, decoder
        self.leading = leading
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._pool = ThreadPoolExecutor(8, thread_name_prefix="bind")
        self._touched: dict[str, float] = {}
        """gang key -> when this process last bound or rolled it back."""

    def stop(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def prune(self, live: set[str]) -> None:
        """Forget per-gang bookkeeping of gangs that no longer exist (a long-
        running sidecar sees millions of gangs come and go)."""
        with self._guard:
            for key in [k for k in self._locks if k not in live]:
                if not self._locks[key].locked():
                    del self._locks[key]
            now = time.monotonic()
            self._touched = {
                k: t for k, t in self._touched.items() if k in live or now - t < SETTLE
            }

    def lock(self, key: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    # -- the current state of the cluster -------------------------------------------

    def requests(self, pod: JSON) -> dict[str, int]:
        decoded = self.decoder.decode(pod)
        if decoded is None:
            return {POD_COUNT: 1}
        return {**decoded[1][1].requests, POD_COUNT: 1}

    def usage(self) -> Usage:
        """Requests of every live pod on (or bound/pinned by us to) each node."""
        usage: Usage = {}
        for pod in self.cache.items("Pod"):
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            node = node_of(self.cache, pod)
            if node:
                add(usage.setdefault(node, {}), self.requests(pod))
        return usage

    def victims_left(self, state: PlanState, victims: tuple[str, ...]) -> list[str]:
        """Victims that still hold room: pods still present, quota still reserved."""
        left = []
        for key in victims:
            view = state.built.gangs.get(key)
            if view is not None:
                ns = view.gang.namespace
                if any(
                    self.cache.get("Pod", f"{ns}/{gangmod.meta(p).get('name')}")
                    for p in view.gang.pods
                ):
                    left.append(key)
                continue
            wl = self.cache.get("Workload", key)
            if wl is not None and holds_quota(wl):
                left.append(key)
        return left

    def blocker(
        self, state: PlanState, key: str, usage: Usage | None = None
    ) -> str | None:
        """Why the gang cannot be bound right now, or None when it can."""
        gp = state.gangs.get(key)
        view = state.built.gangs.get(key)
        if gp is None or view is None or not gp.admitted:
            return gp.reason if gp is not None else "not in the current plan"
        left = self.victims_left(state, gp.victims)
        if left:
            names = ", ".join(left)
            return f"waiting for {len(left)} preempted workload(s) to go: {names}"
        usage = self.usage() if usage is None else usage
        extra: Usage = {}  # this gang's own members, on top of the shared usage
        rules = member_rules(state.built, state.plan, key)
        for pod in view.gang.pods:
            name = str(gangmod.meta(pod).get("name"))
            current = self.cache.get("Pod", f"{view.gang.namespace}/{name}")
            if current is None or not gangmod.is_live(current):
                return f"member {name} is gone"
            if gangmod.meta(current).get("uid") != gangmod.meta(pod).get("uid"):
                return f"member {name} was recreated"
            target = gp.nodes.get(name)
            placed = node_of(self.cache, current)
            if placed is not None:
                if placed != target:
                    return f"member {name} is on {placed}, planned for {target}"
                continue
            node = self.live_node(target or "")
            if node is None:
                return f"planned node {target} is gone"
            if node.unschedulable:
                return f"node {node.name} is cordoned"
            if name in rules:
                why = refusal(node, *rules[name])
                if why is not None:
                    return f"node {node.name} {why} (member {name})"
            mine = extra.setdefault(node.name, {})
            request = self.requests(current)
            combined = {r: mine.get(r, 0) + v for r, v in request.items()}
            if not fits(node, usage.get(node.name, {}), combined):
                return f"node {node.name} has no room yet for {name}"
            add(mine, request)
        return None

    def live_node(self, name: str) -> Node | None:
        """The node as the cache has it now, not as the plan saw it: a taint,
        label or capacity change since the plan must stop a bind."""
        raw = self.cache.get("Node", name)
        decoded = self.decoder.decode(raw) if raw is not None else None
        if decoded is None or not isinstance(decoded[1][1], Node):
            return None
        return decoded[1][1]

    # -- binding ---------------------------------------------------------------------

    def bind_gang(self, state: PlanState, key: str) -> str | None:
        """Bind every member to its planned node; None on success, else why not."""
        with self.lock(key):
            reason = self.blocker(state, key)
            if reason is not None:
                return reason
            gp, view = state.gangs[key], state.built.gangs[key]
            return self._bind_members(view, gp.nodes, gp.assignment)

    def complete(self, view: GangView) -> str | None:
        """Finish a half-bound gang from the assignment its bound half carries.

        Only gangs bound by placewise (our annotation on a bound member) are
        touched; a member that disappeared makes the gang uncompletable.
        """
        with self.lock(view.key):
            if time.monotonic() - self._touched.get(view.key, -1e9) < SETTLE:
                return None  # our own bind just ran: let the cache catch up first
            current: dict[str, JSON | None] = {}
            placed: dict[str, str] = {}
            ours = False
            for pod in view.gang.pods:
                name = str(gangmod.meta(pod).get("name"))
                now = self.cache.get("Pod", f"{view.gang.namespace}/{name}")
                current[name] = (
                    now if now is not None and gangmod.is_live(now) else None
                )
                node = (
                    node_of(self.cache, now)
                    if now is not None and current[name]
                    else None
                )
                if node is not None and now is not None:
                    placed[name] = node
                    ours = ours or GANG_ANNOTATION in (
                        gangmod.meta(now).get("annotations") or {}
                    )
            if not placed or len(placed) == len(view.gang.pods) or not ours:
                return None
            if any(v is None for v in current.values()):
                return self._rollback(view, "a member of the half-bound gang is gone")
            view = GangView(view.gang, "partial", view.pod_sets, placed, view.intent)
            if view.intent is None:
                return self._rollback(view, "half-bound gang without a recorded plan")
            remaining = {ps: dict(nodes) for ps, nodes in view.intent.items()}
            targets: dict[str, str] = {}
            unbound: list[tuple[str, JSON]] = []
            for ps, members in view.pod_sets:
                for pod in members:
                    name = str(gangmod.meta(pod).get("name"))
                    node = view.nodes.get(name)
                    slots = remaining.get(ps, {})
                    if node is not None:
                        if slots.get(node, 0) > 0:
                            slots[node] -= 1
                        targets[name] = node
                    else:
                        unbound.append((ps, pod))
            usage = self.usage()
            touched: set[str] = set()
            for ps, pod in unbound:
                name = str(gangmod.meta(pod).get("name"))
                slots = remaining.get(ps, {})
                node = next((n for n in sorted(slots) if slots[n] > 0), None)
                if node is None:
                    return self._rollback(view, f"no recorded node left for {name}")
                slots[node] -= 1
                targets[name] = node
                touched.add(node)
                add(usage.setdefault(node, {}), self.requests(pod))
            for node in sorted(touched):
                raw = self.cache.get("Node", node)
                decoded = self.decoder.decode(raw) if raw is not None else None
                if decoded is None or not fits(decoded[1][1], {}, usage[node]):
                    return self._rollback(view, f"node {node} no longer has room")
            return self._bind_members(view, targets, view.intent)

    def _bind_members(
        self,
        view: GangView,
        targets: dict[str, str],
        assignment: dict[str, dict[str, int]],
    ) -> str | None:
        annotations = {
            GANG_ANNOTATION: view.key,
            ASSIGNMENT_ANNOTATION: json.dumps(
                assignment, sort_keys=True, separators=(",", ":")
            ),
        }
        bound: list[JSON] = []
        if all(
            node_of(
                self.cache, self.cache.get("Pod", f"{view.gang.namespace}/{n}") or {}
            )
            == targets.get(n)
            for n in (str(gangmod.meta(p).get("name")) for p in view.gang.pods)
        ):
            return None  # already whole where planned: nothing to do, nothing to count
        todo = []
        for pod in view.gang.pods:
            name = str(gangmod.meta(pod).get("name"))
            current = self.cache.get("Pod", f"{view.gang.namespace}/{name}") or pod
            if node_of(self.cache, current) != targets[name]:
                todo.append(current)
        # Members bind concurrently; the verdict waits for all of them, so a
        # failure rolls back everything that did bind.
        futures = [
            self._pool.submit(
                self._bind_one,
                p,
                targets[str(gangmod.meta(p).get("name"))],
                annotations,
            )
            for p in todo
        ]
        errors = []
        for pod, future in zip(todo, futures, strict=True):
            try:
                future.result()
                bound.append(pod)
            except (BindError, Aborted) as exc:
                errors.append(exc)
        if any(isinstance(e, Aborted) for e in errors):
            self.metrics.binds.labels("aborted").inc()
            return "lost leadership mid-gang; the next leader finishes it"
        if errors:
            self.metrics.binds.labels("failed").inc()
            return self._rollback(view, str(errors[0]))
        self.metrics.binds.labels("bound").inc()
        for pod in bound:
            meta = gangmod.meta(pod)
            self.events.event(
                pod,
                "Scheduled",
                f"Successfully assigned {meta.get('namespace')}/{meta.get('name')} "
                f"to {targets[str(meta.get('name'))]} (gang {view.key})",
                action="Binding",
            )
        log.info("bound gang %s (%d pods)", view.key, len(view.gang.pods))
        return None

    def _bind_one(self, pod: JSON, node: str, annotations: dict[str, str]) -> None:
        meta = gangmod.meta(pod)
        ns, name, uid = (
            str(meta.get("namespace")),
            str(meta.get("name")),
            str(meta.get("uid")),
        )
        delay = 0.05
        for attempt in range(RETRIES):
            if not self.leading():
                raise Aborted(name)
            try:
                if self._gated(pod):
                    self._ungate(pod, node, annotations)
                    if (pod.get("spec") or {}).get(
                        "schedulerName"
                    ) != self.cfg.binder_scheduler_name:
                        self.cache.expect_bound(uid, node)
                        return  # kube-scheduler binds it inside the pin
                # Expect it first: the watch event may beat the reply, and must
                # not look like news that calls for a re-solve.
                self.cache.expect_bound(uid, node)
                self.kube.bind(ns, name, uid, node, annotations)
                return
            except ApiError as exc:
                self.cache.forget_bound(uid)
                if exc.status == 409:
                    fresh = self.kube.get(PODS, ns, name)
                    if fresh is None:
                        raise BindError(f"{name}: deleted") from None
                    placed = (fresh.get("spec") or {}).get("nodeName")
                    if placed == node:
                        self.cache.expect_bound(uid, node)
                        return
                    if (
                        placed
                        or gangmod.meta(fresh).get("uid") != uid
                        or gangmod.meta(fresh).get("deletionTimestamp")
                    ):
                        raise BindError(f"{name}: {exc.message or exc}") from None
                    pod = fresh
                elif exc.status == 404:
                    raise BindError(f"{name}: deleted") from None
                elif not exc.transient:
                    raise BindError(f"{name}: {exc}") from None
                if attempt == RETRIES - 1:
                    raise BindError(f"{name}: {exc}") from None
                time.sleep(delay)
                delay *= 2

    def _gated(self, pod: JSON) -> bool:
        gates = (pod.get("spec") or {}).get("schedulingGates") or []
        return any(g.get("name") == self.cfg.gate for g in gates)

    def _ungate(self, pod: JSON, node: str, annotations: dict[str, str]) -> None:
        """Remove our gate and pin the hostname in one patch (binder mode)."""
        meta, spec = gangmod.meta(pod), pod.get("spec") or {}
        ns, name = str(meta.get("namespace")), str(meta.get("name"))
        gates = spec.get("schedulingGates") or []
        index = next(i for i, g in enumerate(gates) if g.get("name") == self.cfg.gate)
        ops: list[JSON] = [
            {
                "op": "test",
                "path": f"/spec/schedulingGates/{index}/name",
                "value": self.cfg.gate,
            },
            {"op": "remove", "path": f"/spec/schedulingGates/{index}"},
        ]
        if spec.get("nodeSelector"):
            ops.append(
                {
                    "op": "add",
                    "path": "/spec/nodeSelector/"
                    + HOSTNAME_LABEL.replace("~", "~0").replace("/", "~1"),
                    "value": node,
                }
            )
        else:
            ops.append(
                {
                    "op": "add",
                    "path": "/spec/nodeSelector",
                    "value": {HOSTNAME_LABEL: node},
                }
            )
        if meta.get("annotations"):
            for k, v in annotations.items():
                ops.append(
                    {
                        "op": "add",
                        "path": "/metadata/annotations/"
                        + k.replace("~", "~0").replace("/", "~1"),
                        "value": v,
                    }
                )
        else:
            ops.append(
                {
                    "op": "add",
                    "path": "/metadata/annotations",
                    "value": dict(annotations),
                }
            )
        updated = self.kube.patch_pod(ns, name, ops)
        self.cache.apply("Pod", "MODIFIED", updated)
        pod.clear()
        pod.update(updated)

    # -- rollback ---------------------------------------------------------------------

    def _rollback(self, view: GangView, why: str) -> str:
        """Evict every placed member (DELETE if a budget refuses): no half gang."""
        self._touched[view.key] = time.monotonic()
        undone = 0
        for pod in view.gang.pods:
            meta = gangmod.meta(pod)
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            current = self.cache.get("Pod", key) or pod
            if node_of(self.cache, current) is None:
                continue
            if not self.leading():  # the next leader finishes the rollback
                break
            ns, name = str(meta.get("namespace")), str(meta.get("name"))
            uid = str(meta.get("uid"))
            try:
                try:
                    self.kube.evict(ns, name, uid)
                except ApiError as exc:
                    if exc.status != 429:
                        raise
                    self.kube.delete_pod(ns, name, uid)
                undone += 1
            except ApiError as exc:
                if exc.status != 404:
                    log.warning("rollback of %s: %s", key, exc)
        message = f"bind failed ({why}); rolled back {undone} placed pod(s)"
        if undone == 0 and "gone" in why:
            log.info("gang %s: %s", view.key, message)
            return message  # nothing was placed any more: not a failed bind
        self.metrics.bind_failures.labels(_cause(why)).inc()
        log.warning("gang %s: %s", view.key, message)
        for pod in view.gang.pods:
            self.events.event(
                pod,
                "FailedScheduling",
                f"gang {view.key}: {message}",
                action="Scheduling",
                type_="Warning",
            )
        return message


def _cause(why: str) -> str:
    for cause in ("deleted", "recreated", "room", "recorded", "Conflict", "leadership"):
        if cause in why:
            return cause.lower()
    return "error"
