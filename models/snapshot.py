"""The snapshot: every object of an instance, with references resolved.

References follow Kueue, not strict validation (formats.md §1): a dangling
reference makes a queue inactive or a workload pending, with one warning
naming the object and a pending reason on each affected workload.  The
snapshot is built once and then read-only; solvers compile it into their own
index arrays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from placewise.models.cluster import (
    ClusterQueue,
    Cohort,
    FairSharing,
    LocalQueue,
    Namespace,
    Node,
    Pod,
    PriorityClass,
    ResourceFlavor,
    Topology,
)
from placewise.models.errors import Location, Problem
from placewise.models.timing import RunTime, aware, newest, run_times
from placewise.models.workload import Workload


@dataclass(frozen=True)
class Objects:
    """Raw decoded objects, keyed by name (namespaced ones by ``ns/name``)."""

    flavors: Mapping[str, ResourceFlavor] = field(default_factory=dict)
    cluster_queues: Mapping[str, ClusterQueue] = field(default_factory=dict)
    cohorts: Mapping[str, Cohort] = field(default_factory=dict)
    local_queues: Mapping[str, LocalQueue] = field(default_factory=dict)
    priority_classes: Mapping[str, PriorityClass] = field(default_factory=dict)
    pod_priority_classes: Mapping[str, PriorityClass] = field(default_factory=dict)
    topologies: Mapping[str, Topology] = field(default_factory=dict)
    namespaces: Mapping[str, Namespace] = field(default_factory=dict)
    nodes: Mapping[str, Node] = field(default_factory=dict)
    pods: Mapping[str, Pod] = field(default_factory=dict)
    workloads: Mapping[str, Workload] = field(default_factory=dict)
    fair_sharing: FairSharing = field(default_factory=FairSharing)
    """From Kueue's Configuration object, when the instance has one."""
    now: datetime | None = None
    """When the snapshot holds (``solve --now``, the sidecar's clock); None:
    the newest timestamp in it (see :attr:`Snapshot.now`)."""


NOT_MODELLED_ANNOTATIONS: dict[str, str] = {}
"""Kueue annotations with default-on behaviour placewise does not reproduce:
one warning per workload carrying one, so a plan never hides the gap."""

SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
"""Kueue's ElasticJobsViaWorkloadSlices (beta, on by default): a scale-up
slice names the ``namespace/name`` of the running slice it replaces
(``Workload.replaces``)."""

ADMISSION_GATED_BY = "kueue.x-k8s.io/admission-gated-by"
"""Kueue's AdmissionGatedBy gate (on by default): a non-empty value keeps the
workload out of its queue (``workload.IsAdmissible``) until it is cleared."""


class Snapshot:
    """Resolved, immutable view of one instance."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self.warnings: list[Problem] = []
        self.flavors = objects.flavors
        self.topologies = objects.topologies
        self.namespaces = objects.namespaces
        self.nodes = objects.nodes
        self.pods = objects.pods
        self.local_queues = objects.local_queues
        self.cluster_queues = objects.cluster_queues
        self.fair_sharing = objects.fair_sharing
        self.now: datetime | None = aware(objects.now) or newest(
            objects.workloads.values(), objects.pods.values()
        )
        """The present, for how long running work has run; None: no time
        is known (nothing in the dump carries one)."""
        self.cohorts: dict[str, Cohort] = dict(objects.cohorts)
        self._add_implicit_cohorts()
        self.cohort_in_cycle = self._find_cycles()
        self.inactive: dict[str, str] = self._inactive_queues()
        self.workloads: dict[str, Workload] = {
            k: self._resolve_priority(w) for k, w in sorted(objects.workloads.items())
        }
        self._check_running()
        _ = self._targets  # resolve queues now, so their warnings come with the load
        self._check_slices()

    # -- cohort tree -------------------------------------------------------

    def _warn(self, kind: str, name: str, message: str, namespace: str = "") -> None:
        self.warnings.append(
            Problem(Location(kind=kind, namespace=namespace, name=name), message)
        )

    def _add_implicit_cohorts(self) -> None:
        """A cohort named but never defined is an implicit empty cohort."""
        wanted: list[tuple[str, str, str]] = []
        for cq in self.cluster_queues.values():
            if cq.cohort:
                wanted.append((cq.cohort, "ClusterQueue", cq.name))
        for co in list(self.cohorts.values()):
            if co.parent:
                wanted.append((co.parent, "Cohort", co.name))
        for name, kind, referrer in wanted:
            if name not in self.cohorts:
                self.cohorts[name] = Cohort(name=name, implicit=True)
                if kind == "Cohort":
                    self._warn(
                        kind,
                        referrer,
                        f"parent cohort {name!r} has no Cohort object; "
                        "using an implicit cohort without quota",
                    )

    def _find_cycles(self) -> set[str]:
        """Cohorts whose parent chain loops (their whole tree is disabled)."""
        bad: set[str] = set()
        for start in self.cohorts:
            seen: list[str] = []
            node: str | None = start
            while node is not None and node not in seen:
                seen.append(node)
                node = self.cohorts[node].parent if node in self.cohorts else None
            if node is not None:
                bad.update(seen[seen.index(node) :])
        # Everything under a cycle is in the same broken tree.
        changed = True
        while changed:
            changed = False
            for name, co in self.cohorts.items():
                if name not in bad and co.parent in bad:
                    bad.add(name)
                    changed = True
        for name in sorted(bad):
            self._warn("Cohort", name, "cohort tree contains a cycle; members inactive")
        return bad

    def cohort_parent(self, cohort: str) -> str | None:
        co = self.cohorts.get(cohort)
        return co.parent if co else None

    def ancestors(self, cq: ClusterQueue) -> list[str]:
        """Cohorts from the queue's own cohort up to the root."""
        out: list[str] = []
        node = cq.cohort
        while node is not None and node not in out:
            out.append(node)
            node = self.cohort_parent(node)
        return out

    def root_of(self, cq: ClusterQueue) -> str:
        """Name of the tree root; a standalone queue is its own root."""
        chain = self.ancestors(cq)
        return chain[-1] if chain else f"cq:{cq.name}"

    @cached_property
    def cohort_children(self) -> dict[str, tuple[list[str], list[str]]]:
        """cohort -> (child cohorts, child queues), both sorted by name."""
        out: dict[str, tuple[list[str], list[str]]] = {
            n: ([], []) for n in self.cohorts
        }
        for name, co in sorted(self.cohorts.items()):
            if co.parent in out:
                out[co.parent][0].append(name)
        for name, cq in sorted(self.cluster_queues.items()):
            if cq.cohort in out:
                out[cq.cohort][1].append(name)
        return out

    # -- queues ------------------------------------------------------------

    def _inactive_queues(self) -> dict[str, str]:
        """Queue -> why it is inactive.  The reason names the queue (it is a
        workload's pending reason); the warning, located at the queue, does not
        say its name twice."""
        out: dict[str, str] = {}
        for name, cq in sorted(self.cluster_queues.items()):
            why = None
            missing = sorted({f for f in cq.flavor_names if f not in self.flavors})
            if cq.stop_policy not in ("", "None"):
                why = f"stopped ({cq.stop_policy})"
            elif missing:
                why = f"inactive: flavor {', '.join(missing)} not found"
            else:
                for f in cq.flavor_names:
                    topo = self.flavors[f].topology_name
                    if topo is not None and topo not in self.topologies:
                        why = f"inactive: flavor {f} names missing Topology {topo}"
                        break
            if why is None and cq.cohort in self.cohort_in_cycle:
                why = "inactive: its cohort tree has a cycle"
            if why is not None:
                out[name] = f"ClusterQueue {name} is {why}"
                self._warn("ClusterQueue", name, why)
        return out

    def is_active(self, cq_name: str) -> bool:
        return cq_name in self.cluster_queues and cq_name not in self.inactive

    # -- workloads ---------------------------------------------------------

    def _resolve_priority(self, w: Workload) -> Workload:
        if w.priority_set or w.priority_class is None:
            return w
        ref = w.priority_class
        table = (
            self.objects.priority_classes
            if ref.kueue
            else self.objects.pod_priority_classes
        )
        pc = table.get(ref.name)
        if pc is None:
            kind = "WorkloadPriorityClass" if ref.kueue else "PriorityClass"
            self._warn(
                "Workload",
                w.name,
                f"{kind} {ref.name!r} not found; priority 0",
                namespace=w.namespace,
            )
            return w
        return w.model_copy(update={"priority": pc.value})

    def _check_running(self) -> None:
        for w in self.workloads.values():
            for key, what in NOT_MODELLED_ANNOTATIONS.items():
                if key in w.annotations:
                    self._warn("Workload", w.name, what, namespace=w.namespace)
            if w.is_running and w.admission is not None:
                cq = w.admission.cluster_queue
                if cq not in self.cluster_queues:
                    self._warn(
                        "Workload",
                        w.name,
                        f"admitted to missing ClusterQueue {cq}; its usage is ignored",
                        namespace=w.namespace,
                    )

    def _check_slices(self) -> None:
        """A slice whose link does not hold is scheduled on its own (as in
        Kueue, which finds nothing to replace); say so, it is likely stale."""
        for w in self.pending:
            if w.replaces is not None and self.replaced_slice(w) is None:
                self._warn(
                    "Workload",
                    w.name,
                    f"workload slice replaces {w.replaces!r}, which is not running "
                    "in its ClusterQueue and namespace: scheduled as a workload "
                    "of its own",
                    namespace=w.namespace,
                )

    @cached_property
    def running(self) -> list[Workload]:
        """Quota-holding workloads whose ClusterQueue exists, sorted by key."""
        return [
            w
            for w in self.workloads.values()
            if w.is_running
            and w.admission is not None
            and w.admission.cluster_queue in self.cluster_queues
        ]

    @cached_property
    def run_times(self) -> dict[str, RunTime]:
        """Running workload key -> since when it runs and how long it may
        still run (:mod:`.timing`)."""
        return run_times(self.running, self.pods.values(), self.now)

    @cached_property
    def pending(self) -> list[Workload]:
        """Every workload the plan must account for, sorted by key."""
        return [w for w in self.workloads.values() if w.is_pending]

    def local_queue_of(self, w: Workload) -> LocalQueue | None:
        if not w.queue_name:
            return None
        return self.local_queues.get(f"{w.namespace}/{w.queue_name}")

    @cached_property
    def _targets(self) -> dict[str, tuple[str | None, str | None]]:
        """pending key -> (ClusterQueue name or None, blocking reason or None)."""
        out: dict[str, tuple[str | None, str | None]] = {}
        warned: set[str] = set()
        for w in self.pending:
            out[w.key] = self._target(w, warned)
        return out

    def _target(self, w: Workload, warned: set[str]) -> tuple[str | None, str | None]:
        if w.annotations.get(ADMISSION_GATED_BY):
            return None, f"Admission is gated by: {w.annotations[ADMISSION_GATED_BY]}"
        if not w.queue_name:
            return None, "workload has no spec.queueName"
        lq = self.local_queue_of(w)
        if lq is None:
            return None, f"LocalQueue {w.namespace}/{w.queue_name} doesn't exist"
        if lq.stop_policy not in ("", "None"):
            return None, f"LocalQueue {w.namespace}/{w.queue_name} is stopped"
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            if lq.name + lq.namespace not in warned:
                warned.add(lq.name + lq.namespace)
                self._warn(
                    "LocalQueue",
                    lq.name,
                    f"ClusterQueue {lq.cluster_queue} doesn't exist",
                    namespace=lq.namespace,
                )
            return None, f"ClusterQueue {lq.cluster_queue} doesn't exist"
        if cq.name in self.inactive:
            return cq.name, self.inactive[cq.name]
        ns = self.namespaces.get(w.namespace)
        labels = ns.labels if ns is not None else {}
        if cq.namespace_selector is None or not cq.namespace_selector.matches(labels):
            return cq.name, (
                f"namespace {w.namespace} doesn't match the namespaceSelector "
                f"of ClusterQueue {cq.name}"
            )
        for ps in w.pod_sets:
            if ps.topology.invalid:
                return cq.name, f"pod set {ps.name}: {ps.topology.invalid}"
        return cq.name, None

    def cluster_queue_of(self, w: Workload) -> str | None:
        """The ClusterQueue a pending workload is queued in, if it resolves."""
        if w.admission is not None and w.is_running:
            return w.admission.cluster_queue
        return self._targets.get(w.key, (None, None))[0]

    def replaced_slice(self, w: Workload) -> Workload | None:
        """The running slice a pending elastic slice replaces, if the link
        holds as Kueue's ``ReplacedWorkloadSlice`` reads it: the old slice is
        a quota holder of the ClusterQueue the new one is queued in, in the
        same namespace.  Otherwise the new slice is a workload of its own."""
        if w.replaces is None or not w.is_pending:
            return None
        old = self.workloads.get(w.replaces)
        cq = self.cluster_queue_of(w)
        if (
            old is None
            or not old.is_running
            or old.admission is None
            or old.admission.cluster_queue != cq
            or old.namespace != w.namespace
        ):
            return None
        return old

    def blocked_reason(self, w: Workload) -> str | None:
        """Why a pending workload cannot be admitted by any solver, if so."""
        return self._targets.get(w.key, (None, "not pending"))[1]

    def admissible(self) -> list[Workload]:
        """Pending workloads whose queue resolves to an active, matching CQ."""
        return [w for w in self.pending if self.blocked_reason(w) is None]

    # -- nodes ---------------------------------------------------------------

    def flavor_nodes(self, flavor: ResourceFlavor) -> list[Node]:
        """Nodes of a TAS flavor: Ready, schedulable, labelled for every level."""
        topo = self.topologies.get(flavor.topology_name or "")
        if topo is None:
            return []
        out = []
        for node in self.nodes.values():
            if not node.ready or node.unschedulable:
                continue
            if any(node.labels.get(k) != v for k, v in flavor.node_labels.items()):
                continue
            if any(level not in node.labels for level in topo.levels):
                continue
            out.append(node)
        return sorted(out, key=lambda n: n.name)

    @cached_property
    def pod_usage_by_node(self) -> dict[str, dict[str, int]]:
        """Requests of bound, live, non-TAS pods per node (plus ``pods``)."""
        out: dict[str, dict[str, int]] = {}
        for pod in self.pods.values():
            if not pod.consumes_node or pod.node_name is None:
                continue
            acc = out.setdefault(pod.node_name, {})
            for r, v in pod.requests.items():
                acc[r] = acc.get(r, 0) + v
            acc["pods"] = acc.get("pods", 0) + 1
        return out


def build_snapshot(
    objects: Objects, extra_warnings: Iterable[Problem] = ()
) -> Snapshot:
    """Resolve references; loader warnings come first, then resolution ones."""
    snap = Snapshot(objects)
    snap.warnings[:0] = list(extra_warnings)
    return snap
