"""Kueue objects placewise makes up: the default queue, running-gang admissions.

Gangs outside Kueue need a ClusterQueue to be admitted through; gangs already
bound need an admission that says where they are.  Both are written as the
Kueue objects Kueue itself would hold, and decoded like any other.
"""

from __future__ import annotations

from typing import Any

from placewise.models.cluster import (
    HOSTNAME_LABEL,
    KUEUE_GROUP,
    PODS,
    ClusterQueue,
    Node,
    ResourceFlavor,
    Topology,
)
from placewise.models.quantity import format_units
from placewise.models.workload import Workload

JSON = dict[str, Any]
DEFAULT = "placewise-default"


def default_queue(
    tables: dict[str, dict[str, Any]], views: dict[str, Any], levels: list[str]
) -> list[JSON]:
    """The ``placewise-default`` Topology, flavor, ClusterQueue and LocalQueues
    for gangs outside Kueue: quota = the cluster's capacity (nodes bind first),
    topology-aware down to the hostname so every admission names hosts."""
    totals: dict[str, int] = {}
    for node in tables["nodes"].values():
        for r, v in node.allocatable.items():
            totals[r] = totals.get(r, 0) + v
    for view in views.values():
        for _, members in view.pod_sets:
            for r in _requested(members[0]):
                totals.setdefault(r, 0)
    objs: list[JSON] = [
        {
            "apiVersion": f"{KUEUE_GROUP}/v1beta2",
            "kind": "Topology",
            "metadata": {"name": DEFAULT},
            "spec": {"levels": [{"nodeLabel": lvl} for lvl in levels]},
        },
        {
            "apiVersion": f"{KUEUE_GROUP}/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": DEFAULT},
            "spec": {"topologyName": DEFAULT},
        },
        {
            "apiVersion": f"{KUEUE_GROUP}/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": DEFAULT},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": sorted(totals),
                        "flavors": [
                            {
                                "name": DEFAULT,
                                "resources": [
                                    {"name": r, "nominalQuota": format_units(r, v)}
                                    for r, v in sorted(totals.items())
                                ],
                            }
                        ],
                    }
                ],
            },
        },
    ]
    for ns in sorted({v.gang.namespace for v in views.values() if not v.gang.queue}):
        objs.append(
            {
                "apiVersion": f"{KUEUE_GROUP}/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": DEFAULT, "namespace": ns},
                "spec": {"clusterQueue": DEFAULT},
            }
        )
    return objs


def running_status(
    cq_name: str,
    tables: dict[str, Any],
    placed: dict[str, dict[str, int]],
    workload: Workload | None,
) -> JSON:
    """``status`` of a running gang: pod set -> {node: pods} as an admission."""
    cq: ClusterQueue | None = tables["cluster_queues"].get(cq_name)
    psas = []
    for name, nodes in placed.items():
        count = sum(nodes.values())
        ps = workload.pod_set(name) if workload else None
        requests = dict(ps.requests) if ps else {}
        if cq is not None and cq.group_of(PODS) is not None:
            requests[PODS] = 1
        any_node: Node | None = tables["nodes"].get(next(iter(nodes), ""))
        flavors = _infer_flavors(cq, tables["flavors"], any_node, requests)
        psa: JSON = {
            "name": name,
            "count": count,
            "flavors": flavors,
            "resourceUsage": {
                r: format_units(r, v * count)
                for r, v in sorted(requests.items())
                if r in flavors
            },
        }
        ta = _topology_assignment(flavors, tables, nodes)
        if ta is not None:
            psa["topologyAssignment"] = ta
        psas.append(psa)
    return {
        "admission": {"clusterQueue": cq_name, "podSetAssignments": psas},
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "bound pods",
            }
        ],
    }


def with_hostname(node: JSON) -> JSON:
    """TAS needs the hostname label; a node without it is still a host."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if HOSTNAME_LABEL in labels:
        return node
    name = str((node.get("metadata") or {}).get("name"))
    meta = {**(node.get("metadata") or {}), "labels": {**labels, HOSTNAME_LABEL: name}}
    return {**node, "metadata": meta}


def _requested(pod: JSON) -> set[str]:
    spec = pod.get("spec") or {}
    out: set[str] = set()
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        out |= set(res.get("requests") or {}) | set(res.get("limits") or {})
    return out


def _infer_flavors(
    cq: ClusterQueue | None,
    flavors: dict[str, ResourceFlavor],
    node: Node | None,
    requests: dict[str, int],
) -> dict[str, str]:
    """The flavor of each resource: the first of its group the node matches."""
    if cq is None:
        return {}
    out: dict[str, str] = {}
    labels = node.labels if node is not None else {}
    for resource in requests:
        group = cq.group_of(resource)
        if group is None:
            continue
        names = [f.name for f in cq.resource_groups[group].flavors]
        chosen = names[0] if names else None
        for name in names:
            fl = flavors.get(name)
            if fl is not None and all(
                labels.get(k) == v for k, v in fl.node_labels.items()
            ):
                chosen = name
                break
        if chosen is not None:
            out[resource] = chosen
    return out


def _topology_assignment(
    flavors: dict[str, str], tables: dict[str, Any], placed: dict[str, int]
) -> JSON | None:
    """Kueue's logical form for the nodes the pods are on (TAS flavors only)."""
    for flavor_name in sorted(set(flavors.values())):
        flavor: ResourceFlavor | None = tables["flavors"].get(flavor_name)
        if flavor is None or flavor.topology_name is None:
            continue
        topo: Topology | None = tables["topologies"].get(flavor.topology_name)
        if topo is None:
            return None
        levels = [HOSTNAME_LABEL] if topo.hostname_leaves else list(topo.levels)
        domains = []
        for node_name, count in sorted(placed.items()):
            node: Node | None = tables["nodes"].get(node_name)
            if node is None or any(lvl not in node.labels for lvl in levels):
                return None
            domains.append(
                {"values": [node.labels[lvl] for lvl in levels], "count": count}
            )
        return {"levels": levels, "domains": domains}
    return None
