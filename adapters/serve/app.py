"""One sidecar replica: discovery, caches, solve loop, actuator, HTTP, lease.

``Sidecar(cfg, kube).start()`` is everything ``placewise serve`` runs; tests
start several against one emulator.  Discovery picks, per kind, the version
the cluster serves (Kueue v1beta2 before v1beta1; the Workload API's 1.35
``v1alpha1`` Workloads and the newest served ``PodGroup``), and resources the
cluster does not serve are simply not watched.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.io.loader import KUEUE_CONFIG_MAP, kueue_fair_sharing
from placewise.adapters.serve.config import GANG_ANNOTATION, ServeConfig
from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.gangs import GangSources
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.engine.preempt import Evictor
from placewise.adapters.serve.engine.snapshot import SnapshotBuilder, node_of
from placewise.adapters.serve.engine.solveloop import PlanState, SolveLoop
from placewise.adapters.serve.kube.client import Kube, Resource
from placewise.adapters.serve.kube.events import Recorder
from placewise.adapters.serve.kube.informer import Cache, Informer, key_of
from placewise.adapters.serve.kube.leader import elector
from placewise.adapters.serve.modes.actuator import Actuator
from placewise.adapters.serve.modes.binder import Binder
from placewise.adapters.serve.modes.extender import VERBS, Extender
from placewise.adapters.serve.modes.kueue_mode import KueueAdmitter
from placewise.adapters.serve.modes.mover import Mover
from placewise.adapters.serve.server import (
    JSON_TYPE,
    PROMETHEUS_TYPE,
    TEXT_TYPE,
    HttpServer,
    Reply,
    Routes,
    tls_context,
)
from placewise.models.cluster import KUEUE_GROUP

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve")
_KUEUE_KINDS = (
    ("ResourceFlavor", "resourceflavors", False),
    ("ClusterQueue", "clusterqueues", False),
    ("Cohort", "cohorts", False),
    ("LocalQueue", "localqueues", True),
    ("Workload", "workloads", True),
    ("WorkloadPriorityClass", "workloadpriorityclasses", False),
    ("Topology", "topologies", False),
)


def _text(check: tuple[bool, str]) -> Reply:
    ok, why = check
    return (200 if ok else 503), why.encode(), TEXT_TYPE


def discover(kube: Kube) -> dict[str, Resource]:
    """Cache kind -> the resource to watch, at the version the cluster serves."""
    served = kube.served_versions()
    out = {
        "Node": Resource("Node", "", "v1", "nodes", False),
        "Pod": Resource("Pod", "", "v1", "pods", True),
        "Namespace": Resource("Namespace", "", "v1", "namespaces", False),
    }

    plurals: dict[tuple[str, str], set[str]] = {}

    def pick(group: str, plural: str, prefer: tuple[str, ...]) -> str | None:
        for version in prefer:
            if version not in served.get(group, []):
                continue
            if (group, version) not in plurals:
                plurals[(group, version)] = kube.served_plurals(group, version)
            if plural in plurals[(group, version)]:
                return version
        return None

    if pick("policy", "poddisruptionbudgets", ("v1",)):
        out["PodDisruptionBudget"] = Resource(
            "PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True
        )
    if pick("scheduling.k8s.io", "priorityclasses", ("v1",)):
        out["PriorityClass"] = Resource(
            "PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses", False
        )
    for kind, plural, namespaced in _KUEUE_KINDS:
        version = pick(KUEUE_GROUP, plural, ("v1beta2", "v1beta1", "v1alpha1"))
        if version:
            out[kind] = Resource(kind, KUEUE_GROUP, version, plural, namespaced)
    if pick("scheduling.x-k8s.io", "podgroups", ("v1alpha1",)):
        out["CoschedulingPodGroup"] = Resource(
            "PodGroup",
            "scheduling.x-k8s.io",
            "v1alpha1",
            "podgroups",
            True,
            "CoschedulingPodGroup",
        )
    if pick("scheduling.k8s.io", "workloads", ("v1alpha1",)):
        out["SchedulingWorkload"] = Resource(
            "Workload",
            "scheduling.k8s.io",
            "v1alpha1",
            "workloads",
            True,
            "SchedulingWorkload",
        )
    version = pick(
        "scheduling.k8s.io", "podgroups", ("v1beta1", "v1alpha3", "v1alpha2")
    )
    if version:
        out["SchedulingPodGroup"] = Resource(
            "PodGroup",
            "scheduling.k8s.io",
            version,
            "podgroups",
            True,
            "SchedulingPodGroup",
        )
    return out


class Sidecar:
    def __init__(self, cfg: ServeConfig, kube: Kube) -> None:
        self.cfg, self.kube = cfg, kube
        kube.identify(f"placewise-serve/{cfg.identity}")
        self.metrics = Metrics()
        self.cache = Cache()
        self.resources: dict[str, Resource] = {}
        self.informers: list[Informer] = []
        self.leader = elector(
            kube,
            cfg,
            on_change=lambda on: self._on_leader(on),
            follow=cfg.lease_follow,
        )
        self.events = Recorder(kube, cfg.event_component, cfg.identity, self.may_write)
        self.builder = SnapshotBuilder(self.cache, cfg, self.managed, self._sources)
        self.loop = SolveLoop(
            self.cache, self.builder, cfg, self.metrics, [], on_plan=self._on_plan
        )
        self.binder = Binder(
            kube,
            self.cache,
            cfg,
            self.metrics,
            self.events,
            self.builder.decoder,
            self.may_write,
        )
        self.preemptor: Evictor | None = None
        self.actuator: Actuator | None = None
        self.extender: Extender | None = None
        self.http: HttpServer | None = None
        self.metrics_http: HttpServer | None = None
        self.started_at = time.monotonic()
        self._stopped = threading.Event()

    # -- who we are -----------------------------------------------------------------

    def leading(self) -> bool:
        """Whether we lead, as last renewed (no API call): health, the
        extender's refusals, /debug/plan."""
        return self.leader.holds_lease() if self.leader is not None else True

    def may_write(self) -> bool:
        """Asked right before each write (admission, eviction, binding,
        Event): an overdue renewal is re-checked through the API first."""
        return self.leader.confirm() if self.leader is not None else True

    def _on_leader(self, on: bool) -> None:
        self.metrics.is_leader.set(1 if on else 0)
        if on and self.actuator is not None:
            self.actuator.poke()

    def managed(self, pod: JSON) -> bool:
        """Pods this mode plans for (others only take up room)."""
        spec = pod.get("spec") or {}
        if self.cfg.mode == "kueue":
            return False
        if self.cfg.mode == "binder":
            gates = spec.get("schedulingGates") or []
            return (
                spec.get("schedulerName") == self.cfg.binder_scheduler_name
                or any(g.get("name") == self.cfg.gate for g in gates)
                or GANG_ANNOTATION in (gangmod.meta(pod).get("annotations") or {})
            )
        if (
            spec.get("schedulerName", "default-scheduler")
            not in self.cfg.scheduler_names
        ):
            return False
        if not self.cfg.managed_resources:
            return True
        wanted = set(self.cfg.managed_resources)
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            res = c.get("resources") or {}
            if wanted & (set(res.get("requests") or {}) | set(res.get("limits") or {})):
                return True
        return False

    def _sources(self) -> GangSources:
        return GangSources(
            podgroups={key_of(o): o for o in self.cache.items("CoschedulingPodGroup")},
            api_workloads={
                key_of(o): o for o in self.cache.items("SchedulingWorkload")
            },
            api_podgroups={
                key_of(o): o for o in self.cache.items("SchedulingPodGroup")
            },
        )

    # -- lifecycle ------------------------------------------------------------------

    def _kueue_config(self) -> None:
        """Kueue mode without ``--kueue-config``: fair sharing as Kueue's own
        manager ConfigMap sets it (a bad one stops the start, exit 2)."""
        if self.cfg.mode != "kueue" or self.cfg.kueue_config is not None:
            return
        ns, name = KUEUE_CONFIG_MAP
        cm = self.kube.get_config_map(ns, name)
        if cm is None:
            log.info("no ConfigMap %s/%s: Kueue's fair sharing off", ns, name)
            return
        fair, warnings = kueue_fair_sharing(json.dumps(cm), f"ConfigMap {ns}/{name}")
        for w in warnings:
            log.warning("%s", w)
        self.builder.kueue_config = fair
        log.info("Kueue's fair sharing from ConfigMap %s/%s: %s", ns, name, fair)

    def start(self) -> Sidecar:
        cfg = self.cfg
        self._kueue_config()
        self.resources = discover(self.kube)
        log.info(
            "watching %s",
            ", ".join(f"{r.plural}.{r.api_version}" for r in self.resources.values()),
        )
        self.loop.required = list(self.resources)
        workloads = self.resources.get("Workload")
        self.preemptor = Evictor(
            self.kube,
            self.cache,
            cfg,
            self.metrics,
            self.events,
            self.builder,
            workloads,
            self.may_write,
        )
        admitter = None
        if cfg.mode == "kueue" and workloads is not None:
            admitter = KueueAdmitter(
                self.kube,
                self.cache,
                self.metrics,
                self.events,
                workloads,
                self.binder.victims_left,
                self.may_write,
                Mover(
                    self.cache,
                    cfg,
                    self.metrics,
                    self.builder,
                    self.preemptor,
                    self.may_write,
                ),
            )
        self.actuator = Actuator(
            cfg,
            self.cache,
            self.loop,
            self.binder,
            self.preemptor,
            admitter,
            self.events,
            self.may_write,
        )
        self.extender = Extender(
            self.cache,
            self.loop,
            self.actuator,
            self.binder,
            self.builder,
            self.kube,
            self.metrics,
            self.managed,
            self.leading,
            lambda: self.leader.holder if self.leader is not None else cfg.identity,
            self.preemptor.budget_refuses,
        )
        self.http, self.metrics_http = self._listeners()
        for res in self.resources.values():
            self.informers.append(
                Informer(
                    self.kube, res, self.cache, self.metrics, cfg.watch_timeout
                ).start()
            )
        self.events.start()
        if self.leader is not None:
            self.leader.start()
        else:
            self.metrics.is_leader.set(1)
        self.loop.start()
        self.actuator.start()
        return self

    def _listeners(self) -> tuple[HttpServer, HttpServer]:
        """The extender (verbs, health, /debug/plan if enabled) and, on its own
        port, metrics and health for Prometheus and kubelet probes."""
        cfg, extender = self.cfg, self.extender
        assert extender is not None
        prefix = "/" + cfg.prefix.strip("/") if cfg.prefix.strip("/") else ""
        health: dict[str, Callable[[], Reply]] = {
            "/healthz": lambda: _text(self._healthy()),
            "/livez": lambda: _text(self._healthy()),
            "/readyz": lambda: _text(self._ready()),
        }
        debug: dict[str, Callable[[], Reply]] = {
            "/debug/plan": lambda: (
                200,
                json.dumps(self.debug(), indent=1, default=str).encode(),
                JSON_TYPE,
            )
        }
        verbs: dict[str, Callable[[bytes], Reply]] = {
            f"{prefix}/{verb}": functools.partial(extender.handle, verb)
            for verb in VERBS
        }
        tls = None
        if cfg.tls_cert_file:
            tls = tls_context(cfg.tls_cert_file, cfg.tls_key_file, cfg.client_ca_file)
        observe = self.metrics.http_rejected_observer()
        ext = HttpServer(
            *cfg.listen,
            Routes({**health, **(debug if cfg.enable_debug else {})}, verbs),
            cfg.limits,
            tls,
            "extender",
            observe,
        )

        def scrape() -> Reply:
            return 200, self.metrics.exposition(), PROMETHEUS_TYPE

        try:
            metrics = HttpServer(
                *cfg.metrics_listen,
                Routes({"/metrics": scrape, **health}),
                cfg.limits,
                None,
                "metrics",
                observe,
            )
        except OSError:
            ext.stop()
            raise
        return ext.start(), metrics.start()

    @property
    def url(self) -> str:
        """The extender listener (``https://`` with TLS)."""
        if self.http is None:
            raise RuntimeError("not started")
        return self.http.url

    @property
    def metrics_url(self) -> str:
        if self.metrics_http is None:
            raise RuntimeError("not started")
        return self.metrics_http.url

    def stop(self, release: bool = True) -> None:
        """Stop everything; ``release=False`` leaves the Lease as a crash would."""
        self._stopped.set()
        if self.leader is not None:
            self.leader.stop(release=release)
        for inf in self.informers:
            inf.stop()
        self.loop.stop()
        if self.actuator is not None:
            self.actuator.stop()
            self.actuator.join(5)
        self.loop.join(5)
        for listener in (self.http, self.metrics_http):
            if listener is not None:
                listener.stop()
        self.events.stop()
        self.binder.stop()
        for inf in self.informers:
            inf.join(2)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._ready()[0]:
                return
            time.sleep(0.02)
        raise TimeoutError(f"sidecar not ready: {self._ready()[1]}")

    # -- health -----------------------------------------------------------------------

    def _healthy(self) -> tuple[bool, str]:
        dead = [t for t in ("solve-loop", "actuator") if not self._alive(t)]
        if dead and not self._stopped.is_set():
            return False, f"threads stopped: {', '.join(dead)}\n"
        return True, "ok\n"

    def _alive(self, name: str) -> bool:
        return any(t.name == name and t.is_alive() for t in threading.enumerate())

    def _ready(self) -> tuple[bool, str]:
        if not self.cache.synced(list(self.resources)):
            return False, "caches not synced\n"
        if self.loop.state is None:
            return False, "no plan yet\n"
        return True, "ok\n"

    def _on_plan(self, state: PlanState) -> None:
        if self.actuator is not None:
            self.actuator.poke()

    def debug(self) -> JSON:
        """The current plan and every gang's status (``GET /debug/plan``)."""
        state = self.loop.state
        out: JSON = {
            "identity": self.cfg.identity,
            "leader": self.leading(),
            "mode": self.cfg.mode,
            "solves": self.loop.solves,
        }
        if state is None:
            return out
        blockers = self.actuator.blockers if self.actuator is not None else {}
        out["plan"] = state.plan.to_dict()
        out["fallback"] = state.fallback
        out["gangs"] = {
            key: {
                "admitted": gp.admitted,
                "reason": gp.reason,
                "nodes": gp.nodes,
                "victims": list(gp.victims),
                "blocker": blockers.get(key),
                "state": state.built.gangs[key].state
                if key in state.built.gangs
                else "waiting",
            }
            for key, gp in state.gangs.items()
        }
        out["running"] = sorted(
            [k for k, v in state.built.gangs.items() if self._bound_now(v.gang)]
            + [
                w.key
                for w in state.built.snapshot.running
                if w.key in state.built.kueue
            ]
        )
        out["change"] = state.built.change  # None: the previous plan's stand
        out["kept"] = sorted(state.built.kept)
        return out

    def _bound_now(self, gang: gangmod.Gang) -> bool:
        """Every member placed, per the cache now (binds do not re-solve)."""
        for pod in gang.pods:
            name = gangmod.meta(pod).get("name")
            current = self.cache.get("Pod", f"{gang.namespace}/{name}")
            if current is None or node_of(self.cache, current) is None:
                return False
        return True
