"""Renaming one worker's objects into its cluster (models/multicluster.py).

Every reference is renamed with the object it points to — flavors in queues
and admissions, cohorts, topologies, LocalQueue -> ClusterQueue, pods and
admissions -> nodes, hostname label values in node selectors, affinities
and topology assignments — so the renamed worker is the same cluster under
other names, and merging several of them shares nothing.  Labels other than
the hostname keep their values: namespace selectors, flavor node labels and
topology levels match exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from placewise.models.cluster import (
    HOSTNAME_LABEL,
    ClusterQueue,
    Cohort,
    FairSharing,
    FlavorQuotas,
    LocalQueue,
    Namespace,
    Node,
    Pod,
    PriorityClass,
    ResourceFlavor,
    ResourceGroup,
    Topology,
)
from placewise.models.multicluster import (
    CLUSTER_LABEL,
    scoped,
    scoped_key,
    scoped_namespace,
)
from placewise.models.scheduling import NodeSelectorTerm, PodPlacement, Requirement
from placewise.models.snapshot import Objects
from placewise.models.workload import (
    Admission,
    PodSet,
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
    Workload,
)

T = TypeVar("T")


class Renamer:
    """Renames one worker's objects into ``cluster``."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster

    def name(self, name: str) -> str:
        return scoped(self.cluster, name)

    def namespace(self, namespace: str) -> str:
        return scoped_namespace(self.cluster, namespace)

    def key(self, key: str) -> str:
        """Namespaced keys (``ns/name``) and cluster-scoped names alike."""
        return scoped_key(self.cluster, key) if "/" in key else self.name(key)

    # -- cluster objects ----------------------------------------------------------

    def groups(self, groups: tuple[ResourceGroup, ...]) -> tuple[ResourceGroup, ...]:
        return tuple(
            g.model_copy(
                update={
                    "flavors": tuple(
                        FlavorQuotas(name=self.name(f.name), resources=f.resources)
                        for f in g.flavors
                    )
                }
            )
            for g in groups
        )

    def flavor(self, f: ResourceFlavor) -> ResourceFlavor:
        return f.model_copy(
            update={
                "name": self.name(f.name),
                "node_labels": {**f.node_labels, CLUSTER_LABEL: self.cluster},
                "topology_name": None
                if f.topology_name is None
                else self.name(f.topology_name),
            }
        )

    def cluster_queue(self, cq: ClusterQueue) -> ClusterQueue:
        return cq.model_copy(
            update={
                "name": self.name(cq.name),
                "cohort": None if cq.cohort is None else self.name(cq.cohort),
                "resource_groups": self.groups(cq.resource_groups),
            }
        )

    def cohort(self, co: Cohort) -> Cohort:
        return co.model_copy(
            update={
                "name": self.name(co.name),
                "parent": None if co.parent is None else self.name(co.parent),
                "resource_groups": self.groups(co.resource_groups),
            }
        )

    def local_queue(self, lq: LocalQueue) -> LocalQueue:
        return lq.model_copy(
            update={
                "namespace": self.namespace(lq.namespace),
                "cluster_queue": self.name(lq.cluster_queue),
            }
        )

    def topology(self, t: Topology) -> Topology:
        return t.model_copy(
            update={"name": self.name(t.name), "levels": (CLUSTER_LABEL, *t.levels)}
        )

    def node(self, n: Node) -> Node:
        labels = dict(n.labels)
        if HOSTNAME_LABEL in labels:
            labels[HOSTNAME_LABEL] = self.name(labels[HOSTNAME_LABEL])
        labels[CLUSTER_LABEL] = self.cluster
        return n.model_copy(update={"name": self.name(n.name), "labels": labels})

    def pod(self, p: Pod) -> Pod:
        return p.model_copy(
            update={
                "namespace": self.namespace(p.namespace),
                "node_name": None if p.node_name is None else self.name(p.node_name),
            }
        )

    # -- workloads --------------------------------------------------------------------

    def _requirement(self, r: Requirement, keys: tuple[str, ...]) -> Requirement:
        if r.key not in keys:
            return r
        return r.model_copy(update={"values": tuple(self.name(v) for v in r.values)})

    def placement(self, p: PodPlacement) -> PodPlacement:
        """Node names (hostname label, ``metadata.name`` fields) follow the nodes."""
        selector = tuple(
            (k, self.name(v) if k == HOSTNAME_LABEL else v) for k, v in p.node_selector
        )
        terms = None
        if p.required_terms is not None:
            terms = tuple(
                NodeSelectorTerm(
                    match_expressions=tuple(
                        self._requirement(r, (HOSTNAME_LABEL,))
                        for r in t.match_expressions
                    ),
                    match_fields=tuple(
                        self._requirement(r, ("metadata.name",)) for r in t.match_fields
                    ),
                )
                for t in p.required_terms
            )
        return p.model_copy(update={"node_selector": selector, "required_terms": terms})

    def pod_set(self, ps: PodSet) -> PodSet:
        return ps.model_copy(update={"placement": self.placement(ps.placement)})

    def assignment(self, ta: TopologyAssignment) -> TopologyAssignment:
        """Hostname-only assignments rename the hosts; full paths get the
        cluster as their new top level (Kueue's form for the new Topology)."""
        hostname_only = ta.levels == (HOSTNAME_LABEL,)
        levels = ta.levels if hostname_only else (CLUSTER_LABEL, *ta.levels)
        domains = []
        for d in ta.domains:
            values = tuple(
                self.name(v) if level == HOSTNAME_LABEL else v
                for level, v in zip(ta.levels, d.values, strict=False)
            )
            if not hostname_only:
                values = (self.cluster, *values)
            domains.append(TopologyDomain(values=values, count=d.count))
        return TopologyAssignment(levels=levels, domains=tuple(domains))

    def pod_set_assignment(self, psa: PodSetAssignment) -> PodSetAssignment:
        ta = psa.topology_assignment
        return psa.model_copy(
            update={
                "flavors": {r: self.name(f) for r, f in psa.flavors.items()},
                "topology_assignment": None if ta is None else self.assignment(ta),
            }
        )

    def admission(self, adm: Admission) -> Admission:
        return Admission(
            cluster_queue=self.name(adm.cluster_queue),
            pod_set_assignments=tuple(
                self.pod_set_assignment(p) for p in adm.pod_set_assignments
            ),
        )

    def workload(self, w: Workload) -> Workload:
        """A workload whose priority is already resolved (kept as set)."""
        return w.model_copy(
            update={
                "namespace": self.namespace(w.namespace),
                "priority_set": True,
                "pod_sets": tuple(self.pod_set(ps) for ps in w.pod_sets),
                "admission": None
                if w.admission is None
                else self.admission(w.admission),
                "replaces": None if w.replaces is None else self.key(w.replaces),
            }
        )

    # -- everything -----------------------------------------------------------------

    def objects(self, objs: Objects, workloads: Mapping[str, Workload]) -> Objects:
        """The worker renamed; ``workloads`` (priorities resolved) replace the
        raw ones."""
        return Objects(
            flavors=_table(objs.flavors, self.flavor, self.key),
            cluster_queues=_table(objs.cluster_queues, self.cluster_queue, self.key),
            cohorts=_table(objs.cohorts, self.cohort, self.key),
            local_queues=_table(objs.local_queues, self.local_queue, self.key),
            priority_classes=_table(objs.priority_classes, self.priority, self.key),
            pod_priority_classes=_table(
                objs.pod_priority_classes, self.priority, self.key
            ),
            topologies=_table(objs.topologies, self.topology, self.key),
            namespaces=_table(objs.namespaces, self.namespace_object, self.namespace),
            nodes=_table(objs.nodes, self.node, self.key),
            pods=_table(objs.pods, self.pod, self.key),
            workloads=_table(workloads, self.workload, self.key),
            fair_sharing=objs.fair_sharing,
        )

    def priority(self, pc: PriorityClass) -> PriorityClass:
        return pc.model_copy(update={"name": self.name(pc.name)})

    def namespace_object(self, ns: Namespace) -> Namespace:
        return ns.model_copy(update={"name": self.namespace(ns.name)})


def _table(
    table: Mapping[str, T], fn: Callable[[T], T], key: Callable[[str], str]
) -> dict[str, T]:
    return {key(k): fn(v) for k, v in table.items()}


def merge(parts: list[Objects]) -> Objects:
    """Renamed workers into one set of objects (their keys never collide)."""
    tables: dict[str, dict[str, object]] = {}
    for part in parts:
        for name in Objects.__dataclass_fields__:
            table = getattr(part, name)
            if isinstance(table, Mapping):
                tables.setdefault(name, {}).update(table)
    # Each worker runs its own Kueue: one fair-sharing setting holds for the
    # combined problem only when every worker has it.
    settings = {part.fair_sharing for part in parts}
    fair = settings.pop() if len(settings) == 1 else FairSharing()
    return Objects(**tables, fair_sharing=fair)  # type: ignore[arg-type]
