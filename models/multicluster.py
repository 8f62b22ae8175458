"""Several clusters as one snapshot: the naming rules and the dispatch facts.

A MultiKueue manager hands each of its dispatchable Workloads to one of its
worker clusters.  placewise decides that choice with every worker in view by
merging the workers into one :class:`MultiSnapshot`: each worker object is
renamed into its cluster (cluster-scoped names ``c1/node-7``, namespaces
``c1.team-a``), every Node carries :data:`CLUSTER_LABEL` and every Topology
has it as its top level, so the clusters share nothing (no quota, no node,
no cohort) and the optimizer sees them as the top topology level.  Each
dispatchable manager Workload becomes one pending copy per worker that has
its LocalQueue; the copies share an ``exclusive`` group, so at most one of
them is admitted.  Every solver and the validator work on this one snapshot
unchanged; only the naming rules below are needed to read a plan back.

Kubernetes names cannot contain ``/`` and namespaces (DNS labels) cannot
contain ``.``, so both prefixes split back unambiguously, whatever the
cluster names are.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from placewise.models.snapshot import Objects, Snapshot

CLUSTER_LABEL = "placewise.io/cluster"
"""Node label and top Topology level naming a node's worker cluster."""
PREFERRED_ANNOTATION = "placewise.io/preferred-clusters"
"""On a manager Workload: ``a,b`` — clusters it would rather run in."""
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
"""``spec.controllerName`` of a MultiKueue AdmissionCheck."""
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
"""Set by MultiKueue on the copies it creates in a worker."""
DEFAULT_STEP = 3
"""Kueue's incremental dispatcher nominates this many clusters per round."""


def scoped(cluster: str, name: str) -> str:
    """A cluster-scoped object's name inside the combined snapshot."""
    return f"{cluster}/{name}"


def scoped_namespace(cluster: str, namespace: str) -> str:
    return f"{cluster}.{namespace}"


def scoped_key(cluster: str, key: str) -> str:
    """``ns/name`` of a worker's namespaced object -> ``cluster.ns/name``."""
    namespace, _, name = key.partition("/")
    return f"{scoped_namespace(cluster, namespace)}/{name}"


def split_name(name: str) -> tuple[str, str]:
    """``c1/node-7`` -> (``c1``, ``node-7``); ("", name) when not scoped."""
    cluster, sep, rest = name.partition("/")
    return (cluster, rest) if sep else ("", name)


def split_key(key: str) -> tuple[str, str]:
    """``c1.team-a/job`` -> (``c1``, ``team-a/job``); ("", key) when not scoped."""
    namespace, _, name = key.partition("/")
    cluster, sep, ns = namespace.rpartition(".")
    return (cluster, f"{ns}/{name}") if sep else ("", key)


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One dispatchable manager Workload and its copies."""

    workload: str
    """The manager's ``namespace/name``."""
    order: tuple[str, ...]
    """Workers it may go to (given, Active), in its MultiKueueConfig's order
    (Kueue's incremental dispatcher nominates in this order); some may lack
    its LocalQueue, and then hold no copy."""
    copies: Mapping[str, str]
    """worker -> the copy's key in the combined snapshot (workers that have
    its LocalQueue; the others cannot admit it)."""
    nominated: tuple[str, ...] = ()
    """``status.nominatedClusterNames`` as read."""


@dataclass(frozen=True, slots=True)
class Dispatching:
    """What the combined snapshot adds to the objects: the cluster facts."""

    clusters: tuple[str, ...]
    """Workers in command-line order (the tie-break of a same-cycle race)."""
    dispatch: Mapping[str, Dispatch] = field(default_factory=dict)
    """manager key -> its dispatch."""
    unplaced: Mapping[str, str] = field(default_factory=dict)
    """Dispatchable manager Workloads no worker can take, with why (pending)."""
    costs: Mapping[str, int] = field(default_factory=dict)
    """copy key -> what admitting that copy costs (cluster cost, preference);
    the optimizer minimises it after the priority tiers."""
    step: int = DEFAULT_STEP
    """Clusters per round of Kueue's incremental dispatcher."""


class MultiSnapshot(Snapshot):
    """A combined snapshot of several worker clusters plus the dispatch facts."""

    def __init__(self, objects: Objects, facts: Dispatching) -> None:
        super().__init__(objects)
        self.facts = facts

    @property
    def clusters(self) -> tuple[str, ...]:
        return self.facts.clusters

    def cluster_of(self, key: str) -> str:
        """The worker of a combined namespaced key (``""`` if unscoped)."""
        return split_key(key)[0]

    def group_of(self, key: str) -> str | None:
        w = self.workloads.get(key)
        return w.exclusive if w is not None else None


def dispatch_costs(snapshot: Snapshot) -> Mapping[str, int]:
    """Per copy, the cost of admitting it (empty for a single cluster)."""
    if isinstance(snapshot, MultiSnapshot):
        return snapshot.facts.costs
    return {}
