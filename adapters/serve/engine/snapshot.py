"""The cache as a :class:`~placewise.models.snapshot.Snapshot`: the solver's model.

Every object goes through the same decoders as instance files
(:func:`placewise.adapters.io.loader.decode_objects`), cached per resourceVersion so a
re-solve only pays for what changed.  Gangs found in pods become Kueue-shaped
Workload objects first and are decoded like any other, so the solver cannot
tell them from Kueue's own:

* a gang with no member bound is *pending*;
* a gang with members bound is *running*; its admission is rebuilt from where
  its pods are (flavor from the node's labels, topology assignment from the
  nodes), and when it is half-bound the unbound members are counted on the
  nodes the binding annotation says they were meant for, so a restart never
  gives that room away;
* a gang still missing members (or its PodGroup) is left out with its reason.

Gangs outside Kueue queue in a synthesized ``placewise-default`` ClusterQueue
whose quota is the cluster's capacity and whose flavor is topology-aware down
to the hostname, so every admission comes with hosts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.serve.config import (
    ASSIGNMENT_ANNOTATION,
    GANG_ANNOTATION,
    ServeConfig,
)
from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine import synth
from placewise.adapters.serve.engine.gangs import Gang, GangSources
from placewise.adapters.serve.engine.stability import (
    Baseline,
    Facts,
    held_back,
    protect,
)
from placewise.adapters.serve.kube.informer import Cache
from placewise.models.cluster import HOSTNAME_LABEL, KUEUE_GROUP, FairSharing
from placewise.models.errors import Problem
from placewise.models.snapshot import Objects, Snapshot, build_snapshot
from placewise.models.workload import Workload

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.snapshot")

DEFAULT = synth.DEFAULT
STICKY_TIMESTAMP = "1970-01-01T00:00:00Z"
GangState = Literal["pending", "running", "partial", "waiting"]

_TABLE_OF_KIND = {
    "ResourceFlavor": "flavors",
    "ClusterQueue": "cluster_queues",
    "Cohort": "cohorts",
    "LocalQueue": "local_queues",
    "WorkloadPriorityClass": "priority_classes",
    "PriorityClass": "pod_priority_classes",
    "Topology": "topologies",
    "Namespace": "namespaces",
    "Node": "nodes",
    "Pod": "pods",
    "Workload": "workloads",
}
CACHE_KINDS = tuple(_TABLE_OF_KIND)


@dataclass
class GangView:
    """A gang with where its members are and what it is in the snapshot."""

    gang: Gang
    state: GangState
    pod_sets: list[tuple[str, list[JSON]]]
    nodes: dict[str, str] = field(default_factory=dict)
    """pod name -> node for members bound (or pinned/expected) already."""
    intent: dict[str, dict[str, int]] | None = None
    """The whole gang's ``{podSet: {node: count}}`` from a binding annotation."""

    @property
    def key(self) -> str:
        return self.gang.key


@dataclass
class Built:
    """One consistent snapshot and what each workload key stands for."""

    snapshot: Snapshot
    generation: int
    gangs: dict[str, GangView]
    kueue: dict[str, JSON]
    """Kueue Workload objects in the snapshot, by key (raw, for writes)."""
    waiting: dict[str, Gang]
    """Gangs left out of the solve (``waiting_for`` says why)."""
    facts: Facts | None = None
    """What this solve read that only the outside world changes."""
    change: str | None = None
    """Why this solve may preempt anything policy allows (a change since the
    previous plan, or the first plan); None: the previous plan's stand."""
    kept: frozenset[str] = frozenset()
    """Running workloads this solve may not preempt (nothing changed)."""


class Decoder:
    """Per-object decoding through the loader, memoised by resourceVersion."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, str, str], tuple[str, tuple[str, Any]]] = {}
        self._seen: set[tuple[str, str, str]] = set()

    def decode(self, obj: JSON) -> tuple[str, tuple[str, Any]] | None:
        """(table, (key, domain object)), or None (logged) for a bad object."""
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        memo_key = (
            str(obj.get("kind")),
            f"{meta.get('namespace') or ''}/{meta.get('name')}",
            rv,
        )
        if rv:
            self._seen.add(memo_key)
            hit = self._memo.get(memo_key)
            if hit is not None:
                return hit
        if obj.get("kind") == "Node":
            obj = synth.with_hostname(obj)
        problems: list[Problem] = []
        objects, _ = decode_objects([RawObject(obj, "cluster", None)], problems)
        if problems:
            log.warning(
                "skipping %s %s: %s",
                obj.get("kind"),
                meta.get("name"),
                "; ".join(str(p) for p in problems),
            )
            return None
        for table in _TABLE_OF_KIND.values():
            values = getattr(objects, table)
            if values:
                ((key, value),) = values.items()
                if rv:
                    self._memo[memo_key] = (table, (key, value))
                return table, (key, value)
        return None

    def prune(self) -> None:
        """Forget objects not decoded since the last prune (deleted or updated)."""
        self._memo = {k: v for k, v in self._memo.items() if k in self._seen}
        self._seen = set()


def pinned_node(pod: JSON) -> str | None:
    """A pod we ungated with a hostname pin counts as placed there."""
    annotations = gangmod.meta(pod).get("annotations") or {}
    if GANG_ANNOTATION not in annotations:
        return None
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    return str(selector[HOSTNAME_LABEL]) if HOSTNAME_LABEL in selector else None


def node_of(cache: Cache, pod: JSON) -> str | None:
    return cache.node_of(pod) or pinned_node(pod)


def _intent(pods: Iterable[JSON]) -> dict[str, dict[str, int]] | None:
    for pod in pods:
        raw = (gangmod.meta(pod).get("annotations") or {}).get(ASSIGNMENT_ANNOTATION)
        if raw:
            try:
                value = json.loads(raw)
                return {
                    str(ps): {str(n): int(c) for n, c in d.items()}
                    for ps, d in value.items()
                }
            except (ValueError, AttributeError, TypeError):
                continue
    return None


class SnapshotBuilder:
    """Cache + configuration -> :class:`Built`, one call per re-solve."""

    def __init__(
        self,
        cache: Cache,
        cfg: ServeConfig,
        managed: Callable[[JSON], bool],
        sources: Callable[[], GangSources],
    ) -> None:
        self.cache, self.cfg, self.managed, self.sources = cache, cfg, managed, sources
        self.decoder = Decoder()
        self._lock = threading.Lock()
        self.protected: dict[str, float] = {}
        """workload key -> monotonic deadline: not preemptible until then."""
        self.evicting: set[str] = set()
        """Victim workload keys whose eviction we issued (reused as victims first)."""
        self._terminating: set[str] = set()
        self.kueue_config = FairSharing()
        """From Kueue's manager ConfigMap (kueue mode; read once at start, as
        Kueue reads its configuration once)."""
        self.sticky: set[str] = set()
        """Gangs the published plan admits but that are not bound yet: they
        keep the head of their queue (as if Kueue had reserved their quota), so
        a re-solve does not hand their place to a gang created the same second."""

    # -- entry point -----------------------------------------------------------

    def build(self, now: float, baseline: Baseline | None = None) -> Built:
        """One snapshot of the cache.  With ``baseline`` (the previous plan) and
        in kueue mode, running workloads that plan kept are not preemptible
        unless something changed since (:mod:`.stability`)."""
        with self._lock:  # the solve loop and the actuator's admission gate
            return self._build(now, baseline)

    def _build(self, now: float, baseline: Baseline | None) -> Built:
        generation = self.cache.generation
        tables: dict[str, dict[str, Any]] = {t: {} for t in _TABLE_OF_KIND.values()}
        raw_kueue: dict[str, JSON] = {}
        for kind in CACHE_KINDS:
            for obj in self.cache.items(kind):
                decoded = self.decoder.decode(obj)
                if decoded is None:
                    continue
                table, (key, value) = decoded
                tables[table][key] = value
                if kind == "Workload":
                    raw_kueue[key] = obj
        if self.cfg.mode != "kueue":
            for key in [k for k, w in tables["workloads"].items() if w.is_pending]:
                del tables["workloads"][key]
                del raw_kueue[key]
        src = self.sources()
        src.kueue_workloads = set(raw_kueue)
        found = gangmod.find_gangs(self.cache.items("Pod"), src, self.managed)
        views, waiting = self._views(found)
        if any(v.gang.queue is None for v in views.values()):
            levels = [*self.cfg.default_topology, HOSTNAME_LABEL]
            for obj in synth.default_queue(tables, views, levels):
                decoded = self.decoder.decode(obj)
                if decoded is not None:
                    table, (key, value) = decoded
                    tables[table][key] = value
        for view in views.values():
            wl = self._gang_workload(view, tables)
            decoded = self.decoder.decode(wl)
            if decoded is not None:
                tables["workloads"][view.key] = decoded[1][1]
        self._mark_gang_pods(tables, views)
        self._adjust(tables["workloads"], now)
        self.decoder.prune()
        facts = replace(Facts.of(tables), refused=frozenset(self.protected))
        change, kept = held_back(tables["workloads"], baseline, facts)
        if self.cfg.mode != "kueue":
            # Gangs' binds and evictions are pod changes: not enforced there.
            change, kept = (
                change or "every plan is free outside kueue mode",
                frozenset(),
            )
        protect(tables["workloads"], kept)
        # The wall clock is the present: how long running work has run
        # prices its preemption (the snapshot's own times may lag).
        wall = datetime.now(UTC)
        snap = build_snapshot(
            Objects(**tables, fair_sharing=self.fair_sharing(), now=wall)
        )
        return Built(snap, generation, views, raw_kueue, waiting, facts, change, kept)

    def fair_sharing(self) -> FairSharing:
        """Kueue's fair-sharing settings: ``--kueue-config`` when given, else
        what the sidecar read from Kueue's manager ConfigMap, else off."""
        if self.cfg.kueue_config is not None:
            return self.cfg.kueue_config
        return self.kueue_config

    # -- gangs -----------------------------------------------------------------

    def _views(self, found: list[Gang]) -> tuple[dict[str, GangView], dict[str, Gang]]:
        views: dict[str, GangView] = {}
        waiting: dict[str, Gang] = {}
        self._terminating = set()
        for gang in found:
            nodes = {}
            for pod in gang.pods:
                node = node_of(self.cache, pod)
                if node:
                    nodes[str(gangmod.meta(pod).get("name"))] = node
            if gang.terminating and nodes:
                # Being evicted: still running (its pods hold their room until
                # they are gone) and already a victim, so it is preempted first
                # again rather than someone else on top of it.
                held = [p for p in gang.pods if gangmod.meta(p).get("name") in nodes]
                gang = dataclasses.replace(gang, pods=held)
                views[gang.key] = GangView(
                    gang, "running", gangmod.pod_sets(held), nodes, None
                )
                self._terminating.add(gang.key)
                continue
            sets = gangmod.pod_sets(gang.pods)
            if nodes and len(nodes) == len(gang.pods):
                state: GangState = "running"
            elif nodes:
                state = "partial"
            elif gang.waiting_for:
                waiting[gang.key] = gang
                continue
            else:
                state = "pending"
            views[gang.key] = GangView(gang, state, sets, nodes, _intent(gang.pods))
        return views, waiting

    def _priority(self, gang: Gang, tables: dict[str, dict[str, Any]]) -> int:
        best = 0
        for pod in gang.pods:
            wpc = (gangmod.meta(pod).get("labels") or {}).get(
                f"{KUEUE_GROUP}/priority-class"
            )
            if wpc and wpc in tables["priority_classes"]:
                return int(tables["priority_classes"][wpc].value)
            best = max(best, int((pod.get("spec") or {}).get("priority") or 0))
        return best

    def _cluster_queue(self, view: GangView, tables: dict[str, Any]) -> str:
        if view.gang.queue is None:
            return DEFAULT
        lq = tables["local_queues"].get(f"{view.gang.namespace}/{view.gang.queue}")
        return str(lq.cluster_queue) if lq is not None else ""

    def _gang_workload(self, view: GangView, tables: dict[str, Any]) -> JSON:
        gang = view.gang
        stamps = sorted(
            str(gangmod.meta(p).get("creationTimestamp") or "") for p in gang.pods
        )
        pod_sets = []
        for name, members in view.pod_sets:
            first = members[0]
            spec = first.get("spec") or {}
            template_spec = {
                k: spec[k]
                for k in (
                    "containers",
                    "initContainers",
                    "overhead",
                    "affinity",
                    "tolerations",
                    "nodeSelector",
                )
                if spec.get(k)
            }
            selector = dict(template_spec.get("nodeSelector") or {})
            if pinned_node(first) is not None:
                selector.pop(HOSTNAME_LABEL, None)  # our own pin, not the user's
                template_spec["nodeSelector"] = selector
            annotations = {
                k: v
                for k, v in (gangmod.meta(first).get("annotations") or {}).items()
                if k.startswith(f"{KUEUE_GROUP}/podset-")
            }
            pod_sets.append(
                {
                    "name": name,
                    "count": len(members),
                    "template": {
                        "metadata": {"annotations": annotations},
                        "spec": template_spec,
                    },
                }
            )
        wl: JSON = {
            "apiVersion": f"{KUEUE_GROUP}/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": gang.name,
                "namespace": gang.namespace,
                "uid": f"gang:{gang.key}",
                "creationTimestamp": STICKY_TIMESTAMP
                if gang.key in self.sticky
                else (stamps[0] if stamps and stamps[0] else None),
            },
            "spec": {
                "queueName": gang.queue or DEFAULT,
                "priority": self._priority(gang, tables),
                "podSets": pod_sets,
            },
        }
        if view.state in ("running", "partial"):
            wl["status"] = self._running_status(view, tables, wl)
        return wl

    def _running_status(self, view: GangView, tables: dict[str, Any], wl: JSON) -> JSON:
        """An admission rebuilt from where the members are (or are meant to be)."""
        decoded = self.decoder.decode({**wl, "status": {}})
        workload: Workload | None = decoded[1][1] if decoded else None
        placed: dict[str, dict[str, int]] = {}
        for name, members in view.pod_sets:
            nodes: dict[str, int] = {}
            for pod in members:
                node = view.nodes.get(str(gangmod.meta(pod).get("name")))
                if node:
                    nodes[node] = nodes.get(node, 0) + 1
            if view.state == "partial" and view.intent and name in view.intent:
                for node, want in view.intent[name].items():
                    nodes[node] = max(nodes.get(node, 0), want)
            placed[name] = nodes
        return synth.running_status(
            self._cluster_queue(view, tables), tables, placed, workload
        )

    def _mark_gang_pods(
        self, tables: dict[str, Any], views: dict[str, GangView]
    ) -> None:
        """Members of gangs whose admission carries hosts are counted there,
        not a second time as plain pods (formats.md §1, TAS-managed pods)."""
        for view in views.values():
            wl = tables["workloads"].get(view.key)
            if wl is None or wl.admission is None:
                continue
            tas = any(
                p.topology_assignment is not None
                for p in wl.admission.pod_set_assignments
            )
            for pod in view.gang.pods:
                key = f"{view.gang.namespace}/{gangmod.meta(pod).get('name')}"
                if key in tables["pods"]:
                    tables["pods"][key] = tables["pods"][key].model_copy(
                        update={"tas_managed": tas}
                    )

    def _adjust(self, workloads: dict[str, Workload], now: float) -> None:
        """PDB-protected victims are not preemptible for a while; victims we are
        already evicting are reused first (Kueue's candidate order, rule 1).

        An eviction is over once its victim holds no quota: a victim admitted
        again later is a new decision of the loop, and stability keeps it
        only if it does not read as still being evicted."""
        self.protected = {k: t for k, t in self.protected.items() if t > now}
        self.evicting.intersection_update(
            k for k, w in workloads.items() if w.is_running
        )
        for key in list(workloads):
            w = workloads[key]
            if key in self.protected and w.is_running:
                workloads[key] = w.model_copy(update={"preemptible": False})
            elif (
                (key in self.evicting or key in self._terminating)
                and w.is_running
                and not w.evicted
            ):
                workloads[key] = w.model_copy(update={"evicted": True})
