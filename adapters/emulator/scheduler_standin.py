"""A kube-scheduler stand-in that drives a scheduler extender over the real wire format.

It schedules pending pods of one ``schedulerName`` through the API (never the
emulator's internals): a simplified default filter, then the extender's
filter / prioritize / preempt / bind verbs called exactly as kube-scheduler
calls them (POST ``<urlPrefix>/<verb>``, Go-marshalled ``ExtenderArgs``,
``null`` for the unused of ``Nodes``/``NodeNames``), then binding through the
extender's bind verb or pods/binding. Deliberately simple: one pod at a time,
no backoff queue, ties broken by node name instead of at random.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from placewise.adapters.emulator import extender, fit, gojson
from placewise.adapters.emulator.extender import ExtenderConfig, ExtenderError
from placewise.adapters.emulator.selectors import (
    from_label_selector_object,
    labels_match,
)

JSON = dict[str, Any]
log = logging.getLogger("placewise.emulator.scheduler")
MAX_NODE_SCORE, MAX_EXTENDER_PRIORITY = 100, 10


@dataclass(frozen=True)
class Outcome:
    """One attempt's result: ``bound``, ``nominated``, ``unschedulable``, ``error``."""

    pod: str
    result: str
    node: str | None = None
    message: str = ""


def _meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def _ident(obj: JSON) -> tuple[str, str]:
    """(name, namespace) as the client's positional arguments want them."""
    return str(_meta(obj).get("name", "")), str(_meta(obj).get("namespace", ""))


def _key(pod: JSON) -> str:
    return f"{_meta(pod).get('namespace', '')}/{_meta(pod).get('name', '')}"


@dataclass
class _Pass:
    """The snapshot one scheduling pass works on."""

    nodes: dict[str, JSON]
    states: dict[str, fit.NodeState]
    pdbs: list[JSON] = field(default_factory=list)


class SchedulerStandin:
    """Schedules through the official client against an API server (an Emulator)."""

    def __init__(
        self,
        target: Any,
        extenders: list[ExtenderConfig] | None = None,
        scheduler_name: str = "default-scheduler",
    ) -> None:
        self.api: client.ApiClient = (
            target.api_client() if hasattr(target, "api_client") else target
        )
        self.core = client.CoreV1Api(self.api)
        self.policy = client.PolicyV1Api(self.api)
        self.extenders = list(extenders or [])
        self.scheduler_name = scheduler_name
        self.outcomes: list[Outcome] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: Any = None  # kubernetes.watch.Watch (untyped upstream)

    # -- API access (raw JSON, as an informer would hold it) ---------------------------

    @staticmethod
    def _items(resp: Any) -> tuple[list[JSON], str]:
        doc = json.loads(resp.data)
        return list(doc.get("items") or []), str(
            doc["metadata"].get("resourceVersion", "")
        )

    def _snapshot(self) -> tuple[list[JSON], _Pass, str]:
        nodes, _ = self._items(self.core.list_node(_preload_content=False))
        pods, rv = self._items(
            self.core.list_pod_for_all_namespaces(_preload_content=False)
        )
        pdbs, _ = self._items(
            self.policy.list_pod_disruption_budget_for_all_namespaces(
                _preload_content=False
            )
        )
        by_name = {str(_meta(n).get("name")): n for n in nodes}
        return pods, _Pass(by_name, fit.cluster_state(nodes, pods), pdbs), rv

    # -- one pass ----------------------------------------------------------------------

    def run_once(self) -> list[Outcome]:
        """Try every pending pod once, highest priority first; returns what happened."""
        outcomes, _ = self._run_once()
        return outcomes

    def _run_once(self) -> tuple[list[Outcome], str]:
        pods, snap, rv = self._snapshot()
        queue = []
        for pod in pods:
            spec = pod.get("spec") or {}
            if (
                spec.get("schedulerName", "default-scheduler") != self.scheduler_name
                or spec.get("nodeName")
                or _meta(pod).get("deletionTimestamp")
                or fit.is_terminal(pod)
            ):
                continue
            if spec.get("schedulingGates"):
                self._condition(
                    pod,
                    "SchedulingGated",
                    "Scheduling is blocked due to non-empty scheduling gates",
                )
                continue
            queue.append(pod)
        queue.sort(
            key=lambda p: (
                -fit.priority(p),
                str(_meta(p).get("creationTimestamp")),
                _key(p),
            )
        )
        outcomes = [self._schedule(pod, snap) for pod in queue]
        self.outcomes += outcomes
        return outcomes, rv

    def _schedule(self, pod: JSON, snap: _Pass) -> Outcome:
        feasible, failed = fit.filter_nodes(pod, snap.states)
        unresolvable = {n for n in failed if fit.static_reasons(pod, snap.nodes[n])}
        try:
            for ext in self.extenders:
                if not feasible:
                    break
                if ext.filter_verb and ext.interested(pod):
                    feasible = self._filter(
                        ext, pod, feasible, snap, failed, unresolvable
                    )
        except ExtenderError as exc:
            return Outcome(_key(pod), "error", None, str(exc))
        if not feasible:
            return self._unschedulable(pod, snap, failed, unresolvable)
        node = (
            feasible[0] if len(feasible) == 1 else self._prioritize(pod, feasible, snap)
        )
        try:
            self._bind(pod, node)
        except (ExtenderError, client.ApiException) as exc:
            return Outcome(_key(pod), "error", node, str(exc))
        snap.states[node].add(
            {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": node}}
        )
        return Outcome(
            _key(pod), "bound", node, f"Successfully assigned {_key(pod)} to {node}"
        )

    def _filter(
        self,
        ext: ExtenderConfig,
        pod: JSON,
        feasible: list[str],
        snap: _Pass,
        failed: dict[str, str],
        unresolvable: set[str],
    ) -> list[str]:
        body = gojson.extender_args(
            pod, [snap.nodes[n] for n in feasible], ext.node_cache_capable
        )
        try:
            reply = extender.post(ext, ext.filter_verb, body) or {}
            if reply.get("Error"):
                raise ExtenderError(str(reply["Error"]))
        except ExtenderError:
            if ext.ignorable:
                return feasible
            raise
        if ext.node_cache_capable and reply.get("NodeNames") is not None:
            names = [str(n) for n in reply["NodeNames"]]
            for name in names:
                if name not in feasible:
                    raise ExtenderError(
                        f'extender "{ext.url_prefix}" claims a filtered node '
                        f'"{name}" which is not found in the input node list'
                    )
        elif reply.get("Nodes") is not None:
            names = [
                str(_meta(n).get("name")) for n in reply["Nodes"].get("items") or []
            ]
        else:
            names = []
        hard = reply.get("FailedAndUnresolvableNodes") or {}
        soft = reply.get("FailedNodes") or {}
        for name in feasible:
            if name in names:
                continue
            if name in hard or name not in soft:
                unresolvable.add(name)
            failed[name] = str(
                hard.get(name)
                or soft.get(name)
                or "node(s) didn't pass the extender filter"
            )
        return [n for n in feasible if n in names]

    def _prioritize(self, pod: JSON, feasible: list[str], snap: _Pass) -> str:
        scores = {n: fit.least_allocated(pod, snap.states[n]) for n in feasible}
        for ext in self.extenders:
            if not (ext.prioritize_verb and ext.interested(pod)):
                continue
            body = gojson.extender_args(
                pod, [snap.nodes[n] for n in feasible], ext.node_cache_capable
            )
            try:
                reply = extender.post(ext, ext.prioritize_verb, body) or []
            except ExtenderError as exc:
                log.info("prioritize ignored: %s", exc)
                continue
            for hp in reply:
                host = str(hp.get("Host"))
                if host in scores:
                    scores[host] += (
                        int(hp.get("Score") or 0)
                        * ext.weight
                        * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)
                    )
        best = max(scores.values())
        return next(n for n in feasible if scores[n] == best)

    def _bind(self, pod: JSON, node: str) -> None:
        for ext in self.extenders:
            if ext.bind_verb and ext.interested(pod):
                try:
                    reply = (
                        extender.post(
                            ext, ext.bind_verb, gojson.binding_args(pod, node)
                        )
                        or {}
                    )
                    if reply.get("Error"):
                        raise ExtenderError(str(reply["Error"]))
                    return
                except ExtenderError:
                    if not ext.ignorable:
                        raise
        meta = _meta(pod)
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(
                name=meta.get("name"),
                namespace=meta.get("namespace"),
                uid=meta.get("uid"),
            ),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        name, ns = _ident(pod)
        resp: Any = self.core.create_namespaced_pod_binding(
            name, ns, binding, _preload_content=False
        )
        if resp.status != 201:
            raise ExtenderError(f"binding returned {resp.status}")

    # -- failure paths -----------------------------------------------------------------

    def _condition(self, pod: JSON, reason: str, message: str) -> None:
        for cond in (pod.get("status") or {}).get("conditions") or []:
            if (
                cond.get("type") == "PodScheduled"
                and cond.get("reason") == reason
                and cond.get("message") == message
            ):
                return
        body = {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": reason,
                        "message": message,
                        "lastProbeTime": None,
                    }
                ]
            }
        }
        try:
            self.core.patch_namespaced_pod_status(
                *_ident(pod),
                body,
                _preload_content=False,
            )
        except client.ApiException as exc:
            log.info("could not update pod condition: %s", exc)

    def _unschedulable(
        self, pod: JSON, snap: _Pass, failed: dict[str, str], unresolvable: set[str]
    ) -> Outcome:
        if (pod.get("spec") or {}).get("preemptionPolicy") != "Never":
            try:
                node = self._preempt(pod, snap, unresolvable)
            except (ExtenderError, client.ApiException) as exc:
                return Outcome(_key(pod), "error", None, f"preemption: {exc}")
            if node is not None:
                return Outcome(
                    _key(pod), "nominated", node, f"preempted victims on {node}"
                )
        message = fit.unschedulable_message(len(snap.states), failed)
        self._condition(pod, "Unschedulable", message)
        return Outcome(_key(pod), "unschedulable", None, message)

    def _pdb_violations(self, victims: list[JSON], pdbs: list[JSON]) -> int:
        budget = {
            id(p): int((p.get("status") or {}).get("disruptionsAllowed") or 0)
            for p in pdbs
        }
        count = 0
        for victim in victims:
            for pdb in pdbs:
                if _meta(pdb).get("namespace") != _meta(victim).get("namespace"):
                    continue
                sel = from_label_selector_object(
                    (pdb.get("spec") or {}).get("selector")
                )
                if sel is not None and labels_match(sel, _meta(victim).get("labels")):
                    budget[id(pdb)] -= 1
                    if budget[id(pdb)] < 0:
                        count += 1
        return count

    def _preempt(self, pod: JSON, snap: _Pass, unresolvable: set[str]) -> str | None:
        candidates: dict[str, tuple[list[JSON], int]] = {}
        for name, state in sorted(snap.states.items()):
            if name in unresolvable:
                continue
            victims = fit.victims_on(pod, state)
            if victims:
                candidates[name] = (victims, self._pdb_violations(victims, snap.pdbs))
        for ext in self.extenders:
            if not candidates:
                break
            if ext.preempt_verb and ext.interested(pod):
                candidates = self._extender_preempt(ext, pod, candidates, snap)
        if not candidates:
            return None
        node = min(
            candidates,
            key=lambda n: (
                candidates[n][1],
                max(fit.priority(v) for v in candidates[n][0]),
                sum(fit.priority(v) for v in candidates[n][0]),
                len(candidates[n][0]),
                n,
            ),
        )
        for victim in candidates[node][0]:
            self._evict_for_preemption(victim)
        self.core.patch_namespaced_pod_status(
            *_ident(pod),
            {"status": {"nominatedNodeName": node}},
            _preload_content=False,
        )
        return node

    def _extender_preempt(
        self,
        ext: ExtenderConfig,
        pod: JSON,
        candidates: dict[str, tuple[list[JSON], int]],
        snap: _Pass,
    ) -> dict[str, tuple[list[JSON], int]]:
        body = gojson.preemption_args(pod, candidates, ext.node_cache_capable)
        try:
            reply = extender.post(ext, ext.preempt_verb, body) or {}
        except ExtenderError:
            if ext.ignorable:
                return candidates
            raise
        out: dict[str, tuple[list[JSON], int]] = {}
        for node, meta_victims in (reply.get("NodeNameToMetaVictims") or {}).items():
            if node not in snap.states:
                raise ExtenderError(f"extender named unknown node {node!r}")
            on_node = {str(_meta(p).get("uid")): p for p in snap.states[node].pods}
            uids = [str(v.get("UID")) for v in meta_victims.get("Pods") or []]
            if any(u not in on_node for u in uids):
                raise ExtenderError(
                    f"extender named a victim that is not on node {node!r}"
                )
            if not uids:
                if ext.ignorable:
                    continue
                raise ExtenderError(
                    f"expected at least one victim pod on node {node!r}"
                )
            out[node] = (
                [on_node[u] for u in uids],
                int(meta_victims.get("NumPDBViolations") or 0),
            )
        return out

    def _evict_for_preemption(self, victim: JSON) -> None:
        name, ns = _ident(victim)
        cond = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": f"{self.scheduler_name}: preempting to accommodate a higher "
            "priority pod",
            "lastProbeTime": None,
        }
        try:
            self.core.patch_namespaced_pod_status(
                name, ns, {"status": {"conditions": [cond]}}, _preload_content=False
            )
            self.core.delete_namespaced_pod(name, ns, _preload_content=False)
        except client.ApiException as exc:
            if exc.status != 404:
                raise

    # -- background loop ---------------------------------------------------------------

    def start(self) -> SchedulerStandin:
        """Schedule continuously, woken by a pod watch (and at least once a second)."""
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, name="scheduler-standin", daemon=True
        )
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                _, rv = self._run_once()
            except Exception as exc:
                log.warning("scheduling pass failed: %s", exc)
                self._stop.wait(0.2)
                continue
            self._watch = watch.Watch()  # type: ignore[no-untyped-call]
            try:
                for ev in self._watch.stream(
                    self.core.list_pod_for_all_namespaces,
                    resource_version=rv,
                    timeout_seconds=1,
                    _request_timeout=5,
                ):
                    if (
                        ev["type"] in ("ADDED", "MODIFIED", "DELETED")
                        or self._stop.is_set()
                    ):
                        break
            except Exception as exc:
                log.info("pod watch ended: %s", exc)
                self._stop.wait(0.1)
            finally:
                self._watch.stop()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
