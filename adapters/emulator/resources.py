"""The table of resources the emulator serves, and API discovery built from it.

One row per served (group, version, plural). Rows of the same (group, plural)
share storage, the way a CRD with several served versions is one set of
objects in etcd; the emulator only rewrites ``apiVersion`` when serving another
version (no field conversion). Kinds met in instance files that are not in the
table get a row of their own under a derived plural, so nothing the user loads
is dropped.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from placewise.models.cluster import KUEUE_GROUP

JSON = dict[str, Any]

# Field selectors real storage strategies accept beyond metadata.name/namespace.
_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

# events.k8s.io/v1 selectable fields -> the core/v1 label of the shared storage.
_EVENTS_V1_FIELDS = (
    *(
        (f"regarding.{f}", f"involvedObject.{f}")
        for f in (
            "kind",
            "namespace",
            "name",
            "uid",
            "apiVersion",
            "resourceVersion",
            "fieldPath",
        )
    ),
    ("reason", "reason"),
    ("reportingController", "reportingComponent"),
    ("source", "source"),
    ("type", "type"),
)

VERBS = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
]


@dataclass(frozen=True)
class ResourceType:
    """How one served resource behaves; the flags select real-apiserver strategies."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    builtin: bool = True  # built-ins accept strategic merge patch; CRDs do not
    status: bool = False  # has a /status subresource (status is split off)
    generation: bool = False  # metadata.generation tracks spec changes
    returns_object_on_delete: bool = False  # else a Status is returned
    short_names: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    # Another group's storage this row serves a view of (events.k8s.io/v1 Events are
    # the core Events), and how its field-selector labels name the stored fields.
    storage_group: str | None = None
    field_aliases: tuple[tuple[str, str], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage(self) -> tuple[str, str]:
        group = self.group if self.storage_group is None else self.storage_group
        return (group, self.plural)

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def kind_qualified(self) -> str:
        """``Pod`` or ``Workload.kueue.x-k8s.io``: the subject of Invalid messages."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def field_labels(self) -> tuple[str, ...]:
        base: tuple[str, ...] = ("metadata.name",)
        if self.namespaced:
            base += ("metadata.namespace",)
        return base + self.fields


def _core(plural: str, kind: str, namespaced: bool = True, **kw: Any) -> ResourceType:
    return ResourceType("", "v1", plural, kind, namespaced, **kw)


def _crd(
    group: str,
    versions: tuple[str, ...],
    plural: str,
    kind: str,
    namespaced: bool,
    status: bool = True,
    short: tuple[str, ...] = (),
) -> list[ResourceType]:
    subs = ("status",) if status else ()
    return [
        ResourceType(
            group,
            v,
            plural,
            kind,
            namespaced,
            builtin=False,
            status=status,
            generation=True,
            short_names=short,
            subresources=subs,
        )
        for v in versions
    ]


def _builtin(
    group: str,
    versions: tuple[str, ...],
    plural: str,
    kind: str,
    namespaced: bool,
    status: bool = True,
    short: tuple[str, ...] = (),
) -> list[ResourceType]:
    subs = ("status",) if status else ()
    return [
        ResourceType(
            group,
            v,
            plural,
            kind,
            namespaced,
            status=status,
            generation=status,
            short_names=short,
            subresources=subs,
        )
        for v in versions
    ]


_KUEUE_V = ("v1beta2", "v1beta1")
_WORKLOAD_API_V = ("v1alpha2", "v1alpha3", "v1beta1")


def builtin_table() -> list[ResourceType]:
    """The rows a fresh emulator serves, preferred version first within a group."""
    rows: list[ResourceType] = [
        _core(
            "pods",
            "Pod",
            status=True,
            generation=True,
            returns_object_on_delete=True,
            short_names=("po",),
            fields=_POD_FIELDS,
            subresources=("binding", "eviction", "status"),
        ),
        _core(
            "nodes",
            "Node",
            False,
            status=True,
            short_names=("no",),
            fields=("spec.unschedulable",),
            subresources=("status",),
        ),
        _core(
            "namespaces",
            "Namespace",
            False,
            status=True,
            short_names=("ns",),
            fields=("status.phase",),
            subresources=("status",),
        ),
        _core("events", "Event", short_names=("ev",), fields=_EVENT_FIELDS),
        _core(
            "services",
            "Service",
            status=True,
            returns_object_on_delete=True,
            short_names=("svc",),
            subresources=("status",),
        ),
        _core("configmaps", "ConfigMap", short_names=("cm",)),
        _core("secrets", "Secret", fields=("type",)),
        _core(
            "serviceaccounts",
            "ServiceAccount",
            returns_object_on_delete=True,
            short_names=("sa",),
        ),
        _core("endpoints", "Endpoints", short_names=("ep",)),
        _core("limitranges", "LimitRange", short_names=("limits",)),
        _core(
            "resourcequotas",
            "ResourceQuota",
            status=True,
            returns_object_on_delete=True,
            short_names=("quota",),
            subresources=("status",),
        ),
        _core(
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            status=True,
            returns_object_on_delete=True,
            short_names=("pvc",),
            subresources=("status",),
        ),
        _core(
            "persistentvolumes",
            "PersistentVolume",
            False,
            status=True,
            returns_object_on_delete=True,
            short_names=("pv",),
            subresources=("status",),
        ),
        _core("podtemplates", "PodTemplate", returns_object_on_delete=True),
    ]
    rows += _builtin(
        "policy",
        ("v1",),
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        True,
        short=("pdb",),
    )
    rows += _builtin(
        "coordination.k8s.io", ("v1",), "leases", "Lease", True, status=False
    )
    rows.append(
        ResourceType(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            True,
            short_names=("ev",),
            fields=tuple(label for label, _ in _EVENTS_V1_FIELDS),
            storage_group="",
            field_aliases=_EVENTS_V1_FIELDS,
        )
    )
    rows += _builtin(
        "scheduling.k8s.io",
        ("v1",),
        "priorityclasses",
        "PriorityClass",
        False,
        status=False,
        short=("pc",),
    )
    rows += _builtin(
        "scheduling.k8s.io",
        ("v1alpha1", *_WORKLOAD_API_V),
        "workloads",
        "Workload",
        True,
    )
    rows += _builtin(
        "scheduling.k8s.io", _WORKLOAD_API_V, "podgroups", "PodGroup", True
    )
    rows += _builtin(
        "scheduling.k8s.io",
        ("v1alpha3", "v1beta1"),
        "compositepodgroups",
        "CompositePodGroup",
        True,
    )
    for plural, kind in (
        ("deployments", "Deployment"),
        ("statefulsets", "StatefulSet"),
        ("daemonsets", "DaemonSet"),
        ("replicasets", "ReplicaSet"),
    ):
        rows += _builtin("apps", ("v1",), plural, kind, True)
    rows += _builtin("batch", ("v1",), "jobs", "Job", True)
    rows += _builtin("batch", ("v1",), "cronjobs", "CronJob", True, short=("cj",))
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "resourceflavors",
        "ResourceFlavor",
        False,
        status=False,
        short=("rf", "flavor", "flavors"),
    )
    rows += _crd(
        KUEUE_GROUP, _KUEUE_V, "clusterqueues", "ClusterQueue", False, short=("cq",)
    )
    rows += _crd(
        KUEUE_GROUP, (*_KUEUE_V, "v1alpha1"), "cohorts", "Cohort", False, short=("co",)
    )
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "localqueues",
        "LocalQueue",
        True,
        short=("queue", "queues", "lq"),
    )
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "workloads",
        "Workload",
        True,
        short=("kwl", "kueueworkload", "kueueworkloads"),
    )
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "workloadpriorityclasses",
        "WorkloadPriorityClass",
        False,
        status=False,
        short=("wpc",),
    )
    rows += _crd(
        KUEUE_GROUP,
        (*_KUEUE_V, "v1alpha1"),
        "topologies",
        "Topology",
        False,
        status=False,
        short=("topo",),
    )
    rows += _crd(
        KUEUE_GROUP, _KUEUE_V, "admissionchecks", "AdmissionCheck", False, short=("ac",)
    )
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "multikueueclusters",
        "MultiKueueCluster",
        False,
        short=("mkc",),
    )
    rows += _crd(
        KUEUE_GROUP,
        _KUEUE_V,
        "multikueueconfigs",
        "MultiKueueConfig",
        False,
        status=False,
        short=("mkconf",),
    )
    rows += _crd(
        "scheduling.x-k8s.io",
        ("v1alpha1",),
        "podgroups",
        "PodGroup",
        True,
        short=("pg", "pgs"),
    )
    rows += _crd(
        "scheduling.x-k8s.io",
        ("v1alpha1",),
        "elasticquotas",
        "ElasticQuota",
        True,
        short=("eq", "eqs"),
    )
    rows += _crd(
        "scheduling.volcano.sh",
        ("v1beta1",),
        "podgroups",
        "PodGroup",
        True,
        short=("pg", "podgroup-v1beta1"),
    )
    rows += _crd(
        "scheduling.volcano.sh",
        ("v1beta1",),
        "queues",
        "Queue",
        False,
        short=("q", "queue-v1beta1"),
    )
    return rows


def derive_plural(kind: str) -> str:
    """English pluralisation as the CRD tooling and kubectl's RESTMapper guess it."""
    low = kind.lower()
    if low.endswith(("s", "x", "z", "ch", "sh")):
        return low + "es"
    if low.endswith("y") and len(low) > 1 and low[-2] not in "aeiou":
        return low[:-1] + "ies"
    return low + "s"


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


@dataclass
class ResourceTable:
    """Lookup by path (group, version, plural) or (apiVersion, kind); thread-safe."""

    rows: list[ResourceType] = field(default_factory=builtin_table)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def by_path(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            for row in self.rows:
                if (row.group, row.version, row.plural) == (group, version, plural):
                    return row
        return None

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        group, version = split_api_version(api_version)
        with self._lock:
            for row in self.rows:
                if (row.group, row.version, row.kind) == (group, version, kind):
                    return row
        return None

    def kind_known_elsewhere(self, group: str, kind: str) -> ResourceType | None:
        """A row of the same group and kind under another version (for diagnostics)."""
        with self._lock:
            for row in self.rows:
                if row.group == group and row.kind == kind:
                    return row
        return None

    def ensure(self, api_version: str, kind: str, namespaced: bool) -> ResourceType:
        """The row for a loaded object, adding a CRD-like row for unknown kinds."""
        found = self.by_kind(api_version, kind)
        if found is not None:
            return found
        group, version = split_api_version(api_version)
        sibling = self.kind_known_elsewhere(group, kind)
        with self._lock:
            if sibling is not None:
                row = ResourceType(
                    group,
                    version,
                    sibling.plural,
                    kind,
                    sibling.namespaced,
                    builtin=sibling.builtin,
                    status=sibling.status,
                    generation=sibling.generation,
                    subresources=sibling.subresources,
                )
            else:
                row = ResourceType(
                    group,
                    version,
                    derive_plural(kind),
                    kind,
                    namespaced,
                    builtin=group == "",
                    status=True,
                    generation=True,
                    subresources=("status",),
                )
            self.rows.append(row)
            return row

    def storages(self) -> set[tuple[str, str]]:
        with self._lock:
            return {row.storage for row in self.rows}

    def snapshot(self) -> list[ResourceType]:
        with self._lock:
            return list(self.rows)
