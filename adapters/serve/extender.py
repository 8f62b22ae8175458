"""The kube-scheduler extender verbs, in kube-scheduler's exact wire format.

``k8s.io/kube-scheduler/extender/v1`` structs carry no json tags, so the keys
are the capitalized Go field names, in struct order, ``null`` for unset
pointers (cluster-protocols §1.2).  Requests are read leniently (Go's decoder
matches keys case-insensitively); replies are written exactly.

What each verb answers, per pod, from the current plan:

* filter: the pod's planned node only, once its gang can bind (victims gone,
  room free); every other node is ``FailedAndUnresolvableNodes`` "planned for
  X" so preemption does not try them.  A gang the plan leaves pending fails
  every node in ``FailedNodes`` with the pending reason.  Pods we do not
  manage pass unchanged.
* prioritize: the planned node 10, the rest 0.
* preempt: the plan's victims on the planned node, when the scheduler offered
  that node and no budget protects them; otherwise an empty map, which
  vetoes kube-scheduler's own pod-level preemption.
* bind: binds the whole gang (all-or-nothing, :mod:`placewise.adapters.serve.binder`);
  later calls for members already bound succeed.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.serve import gangs as gangmod
from placewise.adapters.serve.actuator import Actuator
from placewise.adapters.serve.binder import Binder
from placewise.adapters.serve.informer import Cache
from placewise.adapters.serve.kube import PODS, ApiError, Kube
from placewise.adapters.serve.metrics import Metrics
from placewise.adapters.serve.snapshot import SnapshotBuilder, node_of
from placewise.adapters.serve.solveloop import SolveLoop

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.extender")
MAX_PRIORITY = 10


def field(doc: Any, name: str) -> Any:
    """A struct field as Go's decoder finds it: exact, else case-insensitive."""
    if not isinstance(doc, dict):
        return None
    if name in doc:
        return doc[name]
    low = name.lower()
    return next((v for k, v in doc.items() if k.lower() == low), None)


_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def marshal(value: Any) -> bytes:
    """Go's ``json.Marshal``: compact, UTF-8, HTML-safe escapes, struct order as
    built (callers sort map keys, as Go does)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, esc in _GO_ESCAPES:
        text = text.replace(raw, esc)
    return text.encode()


def _sorted_map(m: dict[str, str]) -> dict[str, str]:
    return dict(sorted(m.items()))


def filter_result(
    args: JSON,
    survivors: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
    error: str = "",
) -> bytes:
    """``ExtenderFilterResult`` in the shape the request used (names or Nodes)."""
    nodes = field(args, "Nodes")
    if nodes is not None and field(args, "NodeNames") is None:
        keep = set(survivors)
        items = [
            n
            for n in nodes.get("items") or []
            if (n.get("metadata") or {}).get("name") in keep
        ]
        return marshal(
            {
                "Nodes": {"metadata": {}, "items": items},
                "NodeNames": None,
                "FailedNodes": _sorted_map(failed),
                "FailedAndUnresolvableNodes": _sorted_map(unresolvable),
                "Error": error,
            }
        )
    return marshal(
        {
            "Nodes": None,
            "NodeNames": survivors,
            "FailedNodes": _sorted_map(failed),
            "FailedAndUnresolvableNodes": _sorted_map(unresolvable),
            "Error": error,
        }
    )


def candidate_names(args: JSON) -> list[str]:
    names = field(args, "NodeNames")
    if names is not None:
        return [str(n) for n in names]
    nodes = field(args, "Nodes") or {}
    return [
        str((n.get("metadata") or {}).get("name")) for n in nodes.get("items") or []
    ]


class Extender:
    def __init__(
        self,
        cache: Cache,
        loop: SolveLoop,
        actuator: Actuator,
        binder: Binder,
        builder: SnapshotBuilder,
        kube: Kube,
        metrics: Metrics,
        managed: Callable[[JSON], bool],
        leading: Callable[[], bool],
        leader_name: Callable[[], str],
        budget_refuses: Callable[[list[JSON]], str | None],
    ) -> None:
        self.cache, self.loop, self.actuator, self.binder = (
            cache,
            loop,
            actuator,
            binder,
        )
        self.builder, self.kube, self.metrics = builder, kube, metrics
        self.managed, self.leading, self.leader_name = managed, leading, leader_name
        self.budget_refuses = budget_refuses
        self._replan_at = 0.0

    def handle(self, verb: str, body: bytes) -> bytes:
        """Dispatch one POST; a malformed body is an ``Error`` reply, not a 500."""
        started = time.monotonic()
        result = "ok"
        try:
            args = json.loads(body or b"null")
            if not isinstance(args, dict):
                raise ValueError("expected a JSON object")
            handler = {
                "filter": self.filter,
                "prioritize": self.prioritize,
                "preempt": self.preempt,
                "bind": self.bind,
            }[verb]
            return handler(args)
        except (ValueError, KeyError, TypeError) as exc:
            result = "error"
            log.warning("bad %s request: %s", verb, exc)
            if verb == "prioritize":
                return b"[]"
            if verb == "preempt":
                return marshal({"NodeNameToMetaVictims": {}})
            return (
                marshal({"Error": f"placewise: bad request: {exc}"})
                if verb == "bind"
                else filter_result({}, [], {}, {}, f"placewise: bad request: {exc}")
            )
        finally:
            self.metrics.extender_duration.labels(verb, result).observe(
                time.monotonic() - started
            )

    # -- the per-pod decision --------------------------------------------------------

    def decide(self, pod: JSON) -> tuple[str, str | None, str]:
        """(verdict, node, reason): pass | node (only this one) | wait | none."""
        meta = gangmod.meta(pod)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        cached = self.cache.get("Pod", key)
        if cached is None:
            return "none", None, "placewise has not observed this pod yet"
        bound = node_of(self.cache, cached)
        if bound is not None:
            return "node", bound, f"pod {key}: bound to {bound}"
        if not self.managed(cached):
            return "pass", None, ""
        state = self.loop.state
        if state is None:
            return "none", None, "placewise has no plan yet"
        gp = state.gang_of(key)
        if gp is None:
            return "none", None, "waiting for the next plan"
        if not gp.admitted:
            return "none", None, f"gang {gp.key}: {gp.reason}"
        planned = gp.nodes.get(str(meta.get("name")))
        if gp.key in self.actuator.blockers:
            blocker = self.actuator.blockers[gp.key]
        else:
            blocker = self.binder.blocker(state, gp.key)
        if blocker is not None:
            return "wait", planned, f"gang {gp.key}: {blocker}"
        return "node", planned, f"gang {gp.key}: planned for {planned}"

    def _replan(self) -> None:
        """The scheduler disagrees with the plan: re-solve (at most once a second)."""
        now = time.monotonic()
        if now - self._replan_at > 1.0:
            self._replan_at = now
            self.cache.touch()

    # -- verbs -------------------------------------------------------------------------

    def filter(self, args: JSON) -> bytes:
        pod = field(args, "Pod") or {}
        names = candidate_names(args)
        verdict, node, reason = self.decide(pod)
        if verdict == "pass":
            return filter_result(args, names, {}, {})
        if verdict == "none":
            return filter_result(args, [], {n: reason for n in names}, {})
        label = reason.split(": ", 1)[0]
        others = {n: f"{label}: planned for {node}" for n in names if n != node}
        if verdict == "wait":
            failed = {node: reason} if node in names else {}
            return filter_result(args, [], failed, others)
        if node not in names:
            self._replan()
            return filter_result(
                args,
                [],
                {},
                {
                    **others,
                    **(
                        {node: f"{reason}, which kube-scheduler filtered out"}
                        if node
                        else {}
                    ),
                },
            )
        return filter_result(args, [node] if node else [], {}, others)

    def prioritize(self, args: JSON) -> bytes:
        names = candidate_names(args)
        verdict, node, _ = self.decide(field(args, "Pod") or {})
        top = node if verdict in ("node", "wait") else None
        return marshal(
            [{"Host": n, "Score": MAX_PRIORITY if n == top else 0} for n in names]
        )

    def preempt(self, args: JSON) -> bytes:
        pod = field(args, "Pod") or {}
        offered = set((field(args, "NodeNameToMetaVictims") or {}).keys()) | set(
            (field(args, "NodeNameToVictims") or {}).keys()
        )
        meta = gangmod.meta(pod)
        key = f"{meta.get('namespace')}/{meta.get('name')}"
        state = self.loop.state
        gp = state.gang_of(key) if state is not None else None
        veto = marshal({"NodeNameToMetaVictims": {}})
        if state is None or gp is None or not gp.admitted or not gp.victims:
            return veto
        node = gp.nodes.get(str(meta.get("name")))
        if node is None or node not in offered:
            return veto
        uids = []
        for victim in gp.victims:
            view = state.built.gangs.get(victim)
            if view is None:
                continue
            live = []
            for member in view.gang.pods:
                name = gangmod.meta(member).get("name")
                current = self.cache.get("Pod", f"{view.gang.namespace}/{name}")
                if current is not None:
                    live.append(current)
            if victim in self.builder.protected or self.budget_refuses(live):
                return veto  # a budget protects it: the sidecar re-plans instead
            uids += [
                str(gangmod.meta(p).get("uid"))
                for p in live
                if node_of(self.cache, p) == node
            ]
        if not uids:
            return veto
        return marshal(
            {
                "NodeNameToMetaVictims": {
                    node: {
                        "Pods": [{"UID": u} for u in sorted(uids)],
                        "NumPDBViolations": 0,
                    }
                }
            }
        )

    def bind(self, args: JSON) -> bytes:
        name = str(field(args, "PodName") or "")
        ns = str(field(args, "PodNamespace") or "")
        uid = str(field(args, "PodUID") or "")
        node = str(field(args, "Node") or "")

        def reply(error: str) -> bytes:
            return marshal({"Error": error})

        if not self.leading():
            return reply(
                f"placewise: this replica is not the leader "
                f"(leader: {self.leader_name() or 'none'})"
            )
        key = f"{ns}/{name}"
        pod = self.cache.get("Pod", key)
        if pod is None:
            try:
                pod = self.kube.get(PODS, ns, name)
            except ApiError as exc:
                return reply(f"placewise: reading pod {key}: {exc}")
            if pod is None:
                return reply(f"pod {key} not found")
        if uid and gangmod.meta(pod).get("uid") != uid:
            return reply(f"pod {key} has uid {gangmod.meta(pod).get('uid')}, not {uid}")
        bound = node_of(self.cache, pod)
        if bound is not None:
            return reply(
                "" if bound == node else f"pod {key} is already bound to {bound}"
            )
        if not self.managed(pod):
            try:
                self.kube.bind(
                    ns, name, uid or str(gangmod.meta(pod).get("uid")), node, {}
                )
            except ApiError as exc:
                return reply(f"binding {key}: {exc}")
            self.cache.expect_bound(str(gangmod.meta(pod).get("uid")), node)
            return reply("")
        state = self.loop.state
        gp = state.gang_of(key) if state is not None else None
        if state is None or gp is None:
            return reply(f"pod {key}: not in the current plan yet")
        if not gp.admitted:
            return reply(f"gang {gp.key}: {gp.reason}")
        planned = gp.nodes.get(name)
        if planned != node:
            self._replan()
            return reply(
                f"gang {gp.key}: pod {name} is planned for {planned}, not {node}"
            )
        reason = self.binder.bind_gang(state, gp.key)
        return reply("" if reason is None else f"gang {gp.key}: {reason}")
