"""``serve --mode multikueue``: placewise as MultiKueue's external dispatcher.

Kueue's MultiKueue copies a manager Workload to the workers named in its
``status.nominatedClusterNames`` and keeps the first that admits it
(``status.clusterName``).  With the Kueue Configuration's
``multiKueue.dispatcherName`` set to anything but its two built-in
dispatchers, nobody nominates: this loop does.  It watches the manager
(Workloads, queues, AdmissionChecks, MultiKueueConfigs, MultiKueueClusters)
and every worker (nodes, pods, queues, Workloads), solves them as one
combined snapshot (:mod:`placewise.adapters.multicluster`) and writes
``nominatedClusterNames: [chosen]`` on each dispatchable Workload the plan
admits somewhere.

* **Conditional and idempotent.**  Each write is a status merge patch with
  the resourceVersion read (a 409 waits for the next round); a Workload that
  already names the chosen cluster is not written.
* **Leader-only.**  Only the holder of the Lease on the manager writes.
* **Never takes back its own decision.**  A Workload nominated here stays
  pinned to its cluster in later solves (the others plan around it) until
  that worker is gone, not Active, or has not admitted it within
  ``renominate_after`` seconds (Kueue's incremental dispatcher waits 5
  minutes per round); then that cluster is left out for it and the next
  solve nominates another.
* **Never a worker that cannot take it.**  A worker whose MultiKueueCluster
  is not Active, or that does not answer (probed before each solve, its
  caches not synced), is left out of the solve.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from placewise.adapters.io.loader import NAMESPACED, RawObject
from placewise.adapters.multicluster import (
    Federation,
    federation_from_raws,
    user_plan,
)
from placewise.adapters.serve.app import discover
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.kube.client import ApiError, Kube, Resource
from placewise.adapters.serve.kube.informer import Cache, Informer
from placewise.adapters.serve.kube.leader import elector
from placewise.models.cluster import KUEUE_GROUP
from placewise.models.errors import InstanceError, Location
from placewise.models.plan import Plan, PlanAdmission
from placewise.solver.solve import SolveParams, solve

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.multikueue")
MANAGER = "manager"
MK_KINDS = (
    ("AdmissionCheck", "admissionchecks"),
    ("MultiKueueConfig", "multikueueconfigs"),
    ("MultiKueueCluster", "multikueueclusters"),
)
MANAGER_KINDS = (
    "Namespace",
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "Workload",
    "WorkloadPriorityClass",
    "PriorityClass",
)
WORKER_KINDS = (*MANAGER_KINDS, "Node", "Pod", "Topology")


@dataclass(frozen=True)
class DispatchConfig:
    """How the dispatcher behaves; defaults suit a real manager cluster."""

    solver: str = "auto"
    time_limit: float = 10.0
    workers: int = 1
    """CP-SAT workers (one keeps a core for the watches)."""
    debounce: float = 0.5
    """Quiet time after a change before re-solving."""
    resync: float = 5.0
    """Re-solve at least this often: timeouts and reachability change
    without any watch event."""
    renominate_after: float = 300.0
    """A nominated worker that has not admitted the Workload after this long
    is left out for it (Kueue's incremental dispatcher round timeout)."""
    probe_timeout: float = 2.0
    """A worker that does not answer discovery within this is unreachable."""
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str = "placewise-dispatcher"
    identity: str = field(
        default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}"
    )
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    watch_timeout: int = 300
    request_timeout: float = 30.0


@dataclass
class Nomination:
    cluster: str
    since: float


def _ident(loc: Location) -> tuple[str, str, str, str]:
    """(cluster, kind, namespace, name) a problem names; worker problems
    carry ``cluster NAME: NAME`` as their file (see ``in_cluster``)."""
    cluster = loc.file.rpartition(": ")[2] if loc.file else ""
    return (cluster, loc.kind, loc.namespace, loc.name)


def _ident_of(raw: RawObject, cluster: str) -> tuple[str, str, str, str]:
    meta = raw.obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind = str(raw.obj.get("kind") or "")
    ns = str(meta.get("namespace") or ("default" if kind in NAMESPACED else ""))
    return (cluster, kind, ns, str(meta.get("name") or ""))


class Dispatcher:
    """One replica of the dispatcher: caches, solve loop, lease."""

    def __init__(
        self, cfg: DispatchConfig, manager: Kube, workers: dict[str, Kube]
    ) -> None:
        self.cfg, self.manager, self.workers = cfg, manager, workers
        self.metrics = Metrics()
        self.caches: dict[str, Cache] = {MANAGER: Cache()}
        self.caches.update({w: Cache() for w in workers})
        self.resources: dict[str, dict[str, Resource]] = {}
        self.informers: dict[str, list[Informer]] = {}
        self.nominations: dict[str, Nomination] = {}
        """manager Workload -> the cluster we nominated (or found nominated)."""
        self.tried: dict[str, set[str]] = {}
        """manager Workload -> clusters that did not admit it in time."""
        self.reachable: dict[str, bool] = {}
        self.last: tuple[Federation, Plan] | None = None
        self.decisions: dict[str, PlanAdmission] = {}
        """manager Workload -> the plan's admission (workers' names) when we
        nominated its cluster."""
        self.solves = 0
        self.writes = 0
        self.leader = elector(manager, cfg)
        self._last_run = 0.0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="dispatch-loop", daemon=True
        )

    def leading(self) -> bool:
        """Asked before each round and each nomination: an overdue renewal is
        re-checked through the API (a paused replica must not nominate)."""
        return self.leader.confirm() if self.leader is not None else True

    # -- lifecycle ------------------------------------------------------------------

    def start(self, loop: bool = True) -> Dispatcher:
        """Discover, watch, campaign; ``loop=False`` leaves the rounds to
        :meth:`run_once` calls (tests)."""
        res = discover(self.manager)
        served = self.manager.served_versions()
        for kind, plural in MK_KINDS:
            for version in ("v1beta2", "v1beta1"):
                if version in served.get(KUEUE_GROUP, []) and plural in (
                    self.manager.served_plurals(KUEUE_GROUP, version)
                ):
                    res[kind] = Resource(kind, KUEUE_GROUP, version, plural, False)
                    break
        self.resources[MANAGER] = {
            k: r for k, r in res.items() if k in MANAGER_KINDS or k in dict(MK_KINDS)
        }
        self._watch(MANAGER, self.manager)
        for name, kube in self.workers.items():
            self._connect(name, kube)
        if self.leader is not None:
            self.leader.start()
        if loop:
            self._thread.start()
        return self

    def _connect(self, name: str, kube: Kube) -> bool:
        """Discover a worker's resources and watch them; False if it does
        not answer (tried again before each solve)."""
        if name in self.resources:
            return True
        try:
            res = discover(kube)
        except ApiError as exc:
            log.warning("worker %s unreachable: %s", name, exc)
            return False
        self.resources[name] = {k: r for k, r in res.items() if k in WORKER_KINDS}
        self._watch(name, kube)
        return True

    def _watch(self, name: str, kube: Kube) -> None:
        self.informers[name] = [
            Informer(kube, r, self.caches[name], self.metrics, self.cfg.watch_timeout)
            for r in self.resources[name].values()
        ]
        for inf in self.informers[name]:
            inf.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self.leader is not None:
            self.leader.stop(release=True)
        for infs in self.informers.values():
            for inf in infs:
                inf.stop()
        if self._thread.is_alive():
            self._thread.join(5)

    def alive(self) -> bool:
        """The round loop runs (health)."""
        return self._thread.is_alive() or self._stop.is_set()

    def poke(self) -> None:
        """Re-solve now (tests; a change the watches cannot see)."""
        self._wake.set()

    # -- the loop -------------------------------------------------------------------

    def _generation(self) -> int:
        return sum(c.generation for c in self.caches.values())

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            due = time.monotonic() - self._last_run >= self.cfg.resync
            if self._generation() == seen and not self._wake.is_set() and not due:
                self._wake.wait(0.05)
                continue
            self._wake.clear()
            self._stop.wait(self.cfg.debounce)  # let a burst of changes settle
            seen = self._generation()
            try:
                self.run_once()
            except Exception:  # the loop must survive any one round
                log.exception("dispatch round failed")

    def run_once(self) -> Plan | None:
        """One round: solve what is reachable, nominate what the plan admits."""
        self._last_run = time.monotonic()
        if not self.leading() or not self.caches[MANAGER].synced(
            list(self.resources.get(MANAGER, {}))
        ):
            return None
        live = [w for w in self.workers if self._live(w)]
        manager = self._raws(MANAGER)
        workers = {w: self._raws(w) for w in live}
        allowed = self._allowed(manager, live)
        try:
            fed = federation_from_raws(manager, workers, allowed=allowed)
        except InstanceError as exc:
            # A malformed object must not stop dispatch: leave it out, say so.
            bad = {_ident(p.location) for p in exc.problems}
            for p in exc.problems:
                log.warning("left out of the solve: %s", p)
            manager = [r for r in manager if _ident_of(r, MANAGER) not in bad]
            workers = {
                w: [r for r in raws if _ident_of(r, w) not in bad]
                for w, raws in workers.items()
            }
            fed = federation_from_raws(manager, workers, allowed=allowed)
        plan = solve(
            fed.snapshot,
            SolveParams.of(self.cfg),
        )
        self.solves += 1
        self.last = (fed, plan)
        shown = {
            a.workload: a
            for a in user_plan(fed.snapshot, plan).admissions
            if a.workload in fed.snapshot.facts.dispatch
        }
        for key, adm in shown.items():
            assert adm.cluster is not None
            if self._nominate(key, adm.cluster):
                self.decisions[key] = adm
        return plan

    def _live(self, name: str) -> bool:
        """Answers a probe now and its caches are synced."""
        kube = self.workers[name]
        try:
            kube.served_versions()
            ok = self._connect(name, kube) and self.caches[name].synced(
                list(self.resources[name])
            )
        except ApiError as exc:
            log.debug("worker %s unreachable: %s", name, exc)
            ok = False
        before = self.reachable.get(name)
        if ok != before:
            if ok:
                log.log(
                    logging.INFO if before is None else logging.WARNING,
                    "worker %s reachable",
                    name,
                )
            else:
                log.warning("worker %s unreachable: left out until it answers", name)
        self.reachable[name] = ok
        return ok

    def _raws(self, cluster: str) -> list[RawObject]:
        cache = self.caches[cluster]
        return [
            RawObject(obj, cluster, None)
            for kind in self.resources.get(cluster, {})
            for obj in cache.items(kind)
        ]

    def _allowed(
        self, manager: list[RawObject], live: list[str]
    ) -> dict[str, set[str]]:
        """Our nominations stay pinned; timed-out or lost clusters are left
        out for their Workload."""
        now = time.monotonic()
        status: dict[str, JSON] = {}
        for raw in manager:
            meta, st = raw.obj.get("metadata"), raw.obj.get("status")
            if raw.obj.get("kind") == "Workload" and isinstance(meta, dict):
                key = f"{meta.get('namespace')}/{meta.get('name')}"
                status[key] = st if isinstance(st, dict) else {}
        allowed: dict[str, set[str]] = {}
        for key in list(self.nominations):
            st = status.get(key)
            if st is None or st.get("clusterName"):
                del self.nominations[key]  # gone or admitted: done
                self.tried.pop(key, None)
        for key, st in status.items():
            names = st.get("nominatedClusterNames") or []
            if (
                key not in self.nominations
                and isinstance(names, list)
                and len(names) == 1
                and not st.get("clusterName")
            ):
                self.nominations[key] = Nomination(str(names[0]), now)  # adopt
        for key, nom in list(self.nominations.items()):
            expired = now - nom.since > self.cfg.renominate_after
            if expired or nom.cluster not in live:
                log.info(
                    "%s: %s %s; nominating elsewhere",
                    key,
                    nom.cluster,
                    "did not admit in time" if expired else "is unreachable",
                )
                self.tried.setdefault(key, set()).add(nom.cluster)
                del self.nominations[key]
                continue
            allowed[key] = {nom.cluster}
        for key, tried in self.tried.items():
            if key in allowed:
                continue
            rest = set(live) - tried
            if not rest:
                tried.clear()  # every cluster had its turn: start over
                rest = set(live)
            allowed[key] = rest
        return allowed

    def _nominate(self, key: str, cluster: str) -> bool:
        """Nominate ``cluster`` for ``key``; True when we wrote it."""
        obj = self.caches[MANAGER].get("Workload", key)
        if obj is None:
            return False
        status = obj.get("status") or {}
        if status.get("clusterName"):
            return False
        if list(status.get("nominatedClusterNames") or []) == [cluster]:
            self.nominations.setdefault(key, Nomination(cluster, time.monotonic()))
            return False
        if not self.leading():
            return False
        meta = obj.get("metadata") or {}
        body = {
            "metadata": {"resourceVersion": meta.get("resourceVersion")},
            "status": {"nominatedClusterNames": [cluster]},
        }
        try:
            self.manager.patch_status(
                self.resources[MANAGER]["Workload"],
                str(meta.get("namespace")),
                str(meta.get("name")),
                body,
            )
        except ApiError as exc:
            if exc.status not in (404, 409):
                log.warning("nominating %s for %s failed: %s", cluster, key, exc)
            return False  # a conflict or a deletion: the next round sees the news
        self.writes += 1
        self.nominations[key] = Nomination(cluster, time.monotonic())
        log.info("%s: nominated %s", key, cluster)
        return True
