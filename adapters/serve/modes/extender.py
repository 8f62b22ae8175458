"""The kube-scheduler extender verbs: what each answers, per pod, from the plan.

Bodies are read and replies written by :mod:`placewise.adapters.serve.modes.wire`
(kube-scheduler's exact wire format); a body of the wrong shape is refused
before any decision is taken.

* filter: the pod's planned node only, once its gang can bind (victims gone,
  room free); every other node is ``FailedAndUnresolvableNodes`` "planned for
  X" so preemption does not try them.  A gang the plan leaves pending fails
  every node in ``FailedNodes`` with the pending reason.  Pods we do not
  manage pass unchanged.
* prioritize: the planned node 10, the rest 0.
* preempt: the plan's victims on the planned node, when the scheduler offered
  that node and no budget protects them; otherwise an empty map, which
  vetoes kube-scheduler's own pod-level preemption.
* bind: only a pod of a gang placewise manages, only to the node the current
  plan chose for it; it then binds the whole gang (all-or-nothing,
  :mod:`placewise.adapters.serve.modes.binder`); later calls for members already
  bound succeed.  Everything else gets an ``Error`` and nothing is written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.snapshot import SnapshotBuilder, node_of
from placewise.adapters.serve.engine.solveloop import SolveLoop
from placewise.adapters.serve.kube.client import PODS, ApiError, Kube
from placewise.adapters.serve.kube.informer import Cache
from placewise.adapters.serve.modes.actuator import Actuator
from placewise.adapters.serve.modes.binder import Binder
from placewise.adapters.serve.modes.wire import (
    BadRequest,
    BindingArgs,
    ExtenderArgs,
    binding_args,
    extender_args,
    filter_result,
    marshal,
    preemption_args,
)
from placewise.adapters.serve.server import JSON_TYPE, Reply

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.extender")
MAX_PRIORITY = 10
VERBS = ("filter", "prioritize", "preempt", "bind")


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

    def handle(self, verb: str, body: bytes) -> Reply:
        """Answer one POST.  A body kube-scheduler would never send is refused
        in the protocol's ``Error`` field where the reply type has one (filter,
        bind: kube-scheduler then shows the reason in the pod's events), else
        with a 400; either way in one log line and without acting."""
        started = time.monotonic()
        result = "ok"
        try:
            if verb == "filter":
                reply = self.filter(extender_args(body))
            elif verb == "prioritize":
                reply = self.prioritize(extender_args(body))
            elif verb == "preempt":
                reply = self.preempt(preemption_args(body))
            else:
                reply = self.bind(binding_args(body))
            return 200, reply, JSON_TYPE
        except (BadRequest, RecursionError) as exc:
            result = "error"
            why = f"placewise: bad {verb} request: {exc}"
            log.warning("%s", why)
            if verb == "filter":
                return 200, filter_result(None, [], {}, {}, why), JSON_TYPE
            if verb == "bind":
                return 200, marshal({"Error": why}), JSON_TYPE
            return 400, marshal({"error": why}), JSON_TYPE
        except Exception:
            result = "error"
            raise
        finally:
            self.metrics.extender_duration.labels(verb, result).observe(
                time.monotonic() - started
            )

    # -- the per-pod decision --------------------------------------------------------

    def decide(self, key: str, name: str) -> tuple[str, str | None, str]:
        """(verdict, node, reason): pass | node (only this one) | wait | none."""
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
        planned = gp.nodes.get(name)
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

    def filter(self, args: ExtenderArgs) -> bytes:
        names = args.candidates
        verdict, node, reason = self.decide(args.key, args.name)
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
            if node:
                others[node] = f"{reason}, which kube-scheduler filtered out"
            return filter_result(args, [], {}, others)
        return filter_result(args, [node] if node else [], {}, others)

    def prioritize(self, args: ExtenderArgs) -> bytes:
        verdict, node, _ = self.decide(args.key, args.name)
        top = node if verdict in ("node", "wait") else None
        return marshal(
            [
                {"Host": n, "Score": MAX_PRIORITY if n == top else 0}
                for n in args.candidates
            ]
        )

    def preempt(self, args: ExtenderArgs) -> bytes:
        state = self.loop.state
        gp = state.gang_of(args.key) if state is not None else None
        veto = marshal({"NodeNameToMetaVictims": {}})
        if state is None or gp is None or not gp.admitted or not gp.victims:
            return veto
        node = gp.nodes.get(args.name)
        if node is None or node not in args.offered:
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

    def bind(self, args: BindingArgs) -> bytes:
        """Bind only what the plan decided: a member of a gang placewise
        manages, to the node the current plan chose for it (and then the
        whole gang).  Anything else is refused without a write, whoever
        asks: a caller can at most make placewise carry out its own plan."""
        key, node = args.key, args.node

        def reply(error: str) -> bytes:
            return marshal({"Error": error})

        if not self.leading():
            return reply(
                f"placewise: this replica is not the leader "
                f"(leader: {self.leader_name() or 'none'})"
            )
        pod = self.cache.get("Pod", key)
        if pod is None:
            try:
                pod = self.kube.get(PODS, args.namespace, args.name)
            except ApiError as exc:
                return reply(f"placewise: reading pod {key}: {exc}")
            if pod is None:
                return reply(f"placewise: pod {key} not found")
        uid = str(gangmod.meta(pod).get("uid"))
        if args.uid and uid != args.uid:
            return reply(f"placewise: pod {key} has uid {uid}, not {args.uid}")
        bound = node_of(self.cache, pod)
        if bound is not None:
            return reply(
                ""
                if bound == node
                else f"placewise: pod {key} is already bound to {bound}"
            )
        if not self.managed(pod):
            return reply(
                f"placewise: pod {key} is not managed by placewise (its "
                f"schedulerName or resources are not the sidecar's "
                f"--scheduler-name/--managed-resource); placewise binds only "
                f"pods of the gangs it plans"
            )
        state = self.loop.state
        gp = state.gang_of(key) if state is not None else None
        if state is None or gp is None:
            return reply(f"placewise: pod {key} is not in the current plan yet")
        if not gp.admitted:
            return reply(f"gang {gp.key}: {gp.reason}")
        planned = gp.nodes.get(args.name)
        if planned != node:
            self._replan()
            return reply(
                f"gang {gp.key}: pod {args.name} is planned for {planned}, not {node}"
            )
        reason = self.binder.bind_gang(state, gp.key)
        return reply("" if reason is None else f"gang {gp.key}: {reason}")
