"""Gangs defined by pods alone, found the way each convention defines them.

formats.md §1: pending work is always a Workload, so the live adapter turns
pod gangs into Workloads of the same domain model.  Four conventions are read
(cluster-protocols §2): Kueue plain-pod groups (``pod-group-name`` plus the
total-count annotation), scheduler-plugins PodGroups (``minMember``), the
Kubernetes Workload API (``spec.workloadRef`` of 1.35 and
``spec.schedulingGroup`` of 1.36+, both read), and a lone pod is a gang of one.

A gang is placed only once every member it names exists; members are never
admitted partially (a PodGroup's extra members beyond ``minMember`` go with
the rest), so a gang is always bound whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from placewise.models.cluster import KUEUE_GROUP, QUEUE_NAME_LABEL

JSON = dict[str, Any]

POD_GROUP_LABEL = f"{KUEUE_GROUP}/pod-group-name"
POD_GROUP_TOTAL = f"{KUEUE_GROUP}/pod-group-total-count"
COSCHED_LABEL = "scheduling.x-k8s.io/pod-group"
_TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
    "kueue.x-k8s.io/podset-slice-size",
)


@dataclass
class Gang:
    """Pods that must be placed together, and what the gang still waits for."""

    namespace: str
    name: str
    source: str
    """kueue-pod-group | podgroup | workload-api | pod"""
    pods: list[JSON] = field(default_factory=list)
    total: int = 1
    queue: str | None = None
    """Kueue LocalQueue (pod label); None means placewise's default queue."""
    problem: str | None = None
    """Why the gang cannot be placed yet (a missing object, a bad annotation)."""
    terminating: bool = False
    """Some bound member is being deleted (evicted, preempted, rolled back)."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def waiting_for(self) -> str | None:
        """The pending reason before any solver looks, or None when complete."""
        if self.problem:
            return self.problem
        if len(self.pods) < self.total:
            return f"waiting for pods: {len(self.pods)}/{self.total} of the gang exist"
        return None


def meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def is_live(pod: JSON) -> bool:
    """Not terminated and not being deleted: a member that still needs a place."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not meta(pod).get(
        "deletionTimestamp"
    )


def holds_a_node(pod: JSON) -> bool:
    """Bound and not terminated, even if being deleted: it still takes room
    until the kubelet confirms, so its gang still counts as running."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and bool(
        (pod.get("spec") or {}).get("nodeName")
    )


def _label_or_annotation(pod: JSON, key: str) -> str | None:
    m = meta(pod)
    value = (m.get("labels") or {}).get(key) or (m.get("annotations") or {}).get(key)
    return str(value) if value else None


def _gang_policy(policy: Any) -> int | None:
    """minCount of a Workload-API ``gang`` policy; None for ``basic``/absent."""
    if isinstance(policy, dict) and isinstance(policy.get("gang"), dict):
        return int(policy["gang"].get("minCount") or 1)
    return None


@dataclass
class GangSources:
    """The gang-defining objects from the cache, keyed ``ns/name``."""

    podgroups: dict[str, JSON] = field(default_factory=dict)
    """scheduler-plugins ``scheduling.x-k8s.io`` PodGroups."""
    api_workloads: dict[str, JSON] = field(default_factory=dict)
    """``scheduling.k8s.io/v1alpha1`` Workloads (1.35 ``podGroups``)."""
    api_podgroups: dict[str, JSON] = field(default_factory=dict)
    """``scheduling.k8s.io`` PodGroups (1.36+)."""
    kueue_workloads: set[str] = field(default_factory=set)
    """Keys of Kueue Workload objects: a pod group Kueue already turned into a
    Workload is that Workload's, not a second gang."""


def _membership(pod: JSON, src: GangSources) -> tuple[str, str, int, str | None]:
    """(source, gang name, members required, problem) of one pod."""
    ns, name = str(meta(pod).get("namespace")), str(meta(pod).get("name"))
    spec = pod.get("spec") or {}
    group = _label_or_annotation(pod, POD_GROUP_LABEL)
    if group:
        raw = (meta(pod).get("annotations") or {}).get(POD_GROUP_TOTAL)
        try:
            total = int(str(raw))
            if total < 1:
                raise ValueError
        except ValueError:
            return (
                "kueue-pod-group",
                group,
                1,
                f"pod {name}: annotation {POD_GROUP_TOTAL} must be a positive integer",
            )
        return "kueue-pod-group", group, total, None
    pg = (meta(pod).get("labels") or {}).get(COSCHED_LABEL)
    if pg:
        obj = src.podgroups.get(f"{ns}/{pg}")
        if obj is None:
            return "podgroup", str(pg), 1, f"PodGroup {ns}/{pg} not found"
        return (
            "podgroup",
            str(pg),
            int((obj.get("spec") or {}).get("minMember") or 1),
            None,
        )
    ref = spec.get("workloadRef")
    if isinstance(ref, dict) and ref.get("name"):
        wl = src.api_workloads.get(f"{ns}/{ref['name']}")
        gname = f"{ref['name']}-{ref.get('podGroup', '')}"
        if ref.get("podGroupReplicaKey"):
            gname += f"-{ref['podGroupReplicaKey']}"
        if wl is None:
            return "workload-api", gname, 1, f"Workload {ns}/{ref['name']} not found"
        for group_spec in (wl.get("spec") or {}).get("podGroups") or []:
            if group_spec.get("name") == ref.get("podGroup"):
                need = _gang_policy(group_spec.get("policy"))
                if need is None:
                    break  # basic policy: every pod on its own
                return "workload-api", gname, need, None
        else:
            return (
                "workload-api",
                gname,
                1,
                f"Workload {ns}/{ref['name']} has no pod group {ref.get('podGroup')!r}",
            )
    sg = spec.get("schedulingGroup")
    if isinstance(sg, dict) and sg.get("podGroupName"):
        gname = str(sg["podGroupName"])
        obj = src.api_podgroups.get(f"{ns}/{gname}")
        if obj is None:
            return "workload-api", gname, 1, f"PodGroup {ns}/{gname} not found"
        need = _gang_policy((obj.get("spec") or {}).get("schedulingPolicy"))
        if need is not None:
            return "workload-api", gname, need, None
    return "pod", name, 1, None


def find_gangs(
    pods: Iterable[JSON], src: GangSources, managed: Callable[[JSON], bool]
) -> list[Gang]:
    """Group the live, managed pods into gangs, sorted by key."""
    gangs: dict[tuple[str, str], Gang] = {}
    for pod in sorted(
        pods, key=lambda p: (meta(p).get("namespace"), meta(p).get("name"))
    ):
        deleting = holds_a_node(pod) and not is_live(pod)
        if not (is_live(pod) or deleting) or not managed(pod):
            continue
        ns = str(meta(pod).get("namespace"))
        source, name, total, problem = _membership(pod, src)
        if source == "kueue-pod-group" and f"{ns}/{name}" in src.kueue_workloads:
            continue
        gang = gangs.get((ns, name))
        if gang is None:
            gang = gangs[(ns, name)] = Gang(ns, name, source, total=total)
        elif gang.source != source:
            gang.problem = gang.problem or (
                f"pods of {ns}/{name} disagree on their gang convention"
            )
        gang.pods.append(pod)
        gang.terminating = gang.terminating or deleting
        gang.total = max(gang.total, total)
        gang.problem = gang.problem or problem
        queue = (meta(pod).get("labels") or {}).get(QUEUE_NAME_LABEL)
        if queue and gang.queue is None:
            gang.queue = str(queue)
    for gang in gangs.values():
        gang.total = max(gang.total, len(gang.pods))
    return [gangs[k] for k in sorted(gangs)]


def shape_of(pod: JSON) -> str:
    """Pods with equal scheduling-relevant specs share a pod set."""
    spec = pod.get("spec") or {}

    def resources(containers: Any) -> list[Any]:
        return [[c.get("resources"), c.get("restartPolicy")] for c in containers or []]

    annotations = meta(pod).get("annotations") or {}
    relevant = [
        resources(spec.get("containers")),
        resources(spec.get("initContainers")),
        spec.get("overhead"),
        spec.get("nodeSelector"),
        (spec.get("affinity") or {}).get("nodeAffinity"),
        spec.get("tolerations"),
        {k: annotations[k] for k in _TAS_ANNOTATIONS if k in annotations},
    ]
    text = json.dumps(relevant, sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def pod_sets(pods: list[JSON]) -> list[tuple[str, list[JSON]]]:
    """(pod set name, member pods) in a stable order; one shape is ``main``."""
    by_shape: dict[str, list[JSON]] = {}
    for pod in sorted(pods, key=lambda p: str(meta(p).get("name"))):
        by_shape.setdefault(shape_of(pod), []).append(pod)
    if len(by_shape) == 1:
        return [("main", next(iter(by_shape.values())))]
    return [(f"ps-{shape}", members) for shape, members in sorted(by_shape.items())]
