"""Small manager/worker instances for the multi-cluster tests, built in code.

A worker is ``hosts`` nodes of one GPU model (8 GPUs each) behind one
ClusterQueue ``cq`` (optionally TAS, one rack per 2 hosts) with a LocalQueue
``team/lq``; the manager holds dispatchable Workloads: quota reserved in the
manager, the MultiKueue admission check Pending.
"""

from __future__ import annotations

from typing import Any

from placewise.adapters.io.loader import RawObject
from placewise.adapters.multicluster import ClusterCosts, Federation
from placewise.adapters.multicluster.combine import federation_from_raws

JSON = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"
T0 = "2026-01-01T10:00:00Z"
NS = "team"


def _cond(kind: str, status: str = "True") -> JSON:
    return {
        "type": kind,
        "status": status,
        "reason": kind,
        "message": "",
        "lastTransitionTime": T0,
    }


def worker(
    model: str,
    hosts: int = 2,
    *,
    gpus: int | None = None,
    tas: bool = False,
    queue: str = "lq",
    preemption: str = "LowerPriority",
) -> list[JSON]:
    """One worker cluster: ``hosts`` hosts of GPU ``model``, quota ``gpus``."""
    quota = gpus if gpus is not None else 8 * hosts
    flavor: JSON = {"nodeLabels": {"gpu.product": model}}
    objs: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    ]
    if tas:
        flavor["topologyName"] = "topo"
        objs.append(
            {
                "apiVersion": KUEUE,
                "kind": "Topology",
                "metadata": {"name": "topo"},
                "spec": {
                    "levels": [
                        {"nodeLabel": "rack"},
                        {"nodeLabel": "kubernetes.io/hostname"},
                    ]
                },
            }
        )
    objs += [
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": model.lower()},
            "spec": flavor,
        },
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": preemption},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": model.lower(),
                                "resources": [
                                    {"name": "cpu", "nominalQuota": str(64 * hosts)},
                                    {
                                        "name": "nvidia.com/gpu",
                                        "nominalQuota": str(quota),
                                    },
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": queue, "namespace": NS},
            "spec": {"clusterQueue": "cq"},
        },
    ]
    for i in range(hosts):
        name = f"{model.lower()}-{i}"
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "gpu.product": model,
                        "rack": f"r{i // 2}",
                    },
                },
                "status": {
                    "allocatable": {
                        "cpu": "64",
                        "memory": "512Gi",
                        "nvidia.com/gpu": "8",
                        "pods": "110",
                    },
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    return objs


def job(
    name: str,
    gpus: int,
    count: int = 1,
    *,
    priority: int = 100,
    model: str | None = None,
    queue: str = "lq",
    dispatched: bool = True,
    created: str = T0,
    annotations: dict[str, str] | None = None,
    rack: bool = False,
) -> JSON:
    """A Workload of ``count`` pods of ``gpus`` GPUs; ``dispatched``: as the
    manager holds it (quota reserved, MultiKueue check Pending)."""
    spec: JSON = {
        "containers": [
            {
                "name": "c",
                "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)}},
            }
        ]
    }
    if model is not None:
        spec["nodeSelector"] = {"gpu.product": model}
    ps: JSON = {"name": "main", "count": count, "template": {"spec": spec}}
    if rack:
        ps["topologyRequest"] = {"required": "rack"}
    meta: JSON = {"name": name, "namespace": NS, "creationTimestamp": created}
    if annotations:
        meta["annotations"] = annotations
    out: JSON = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": meta,
        "spec": {"queueName": queue, "priority": priority, "podSets": [ps]},
    }
    if dispatched:
        out["status"] = {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": count,
                        "flavors": {"cpu": "any", "nvidia.com/gpu": "any"},
                        "resourceUsage": {
                            "cpu": str(count),
                            "nvidia.com/gpu": str(gpus * count),
                        },
                    }
                ],
            },
            "conditions": [_cond("QuotaReserved")],
            "admissionChecks": [
                {
                    "name": "mk",
                    "state": "Pending",
                    "message": "",
                    "lastTransitionTime": T0,
                }
            ],
        }
    return out


def running(w: JSON, flavor: str, hosts: list[str] | None = None) -> JSON:
    """``w`` admitted in a worker on ``flavor`` (on ``hosts`` when TAS)."""
    ps = w["spec"]["podSets"][0]
    gpus = int(
        ps["template"]["spec"]["containers"][0]["resources"]["requests"][
            "nvidia.com/gpu"
        ]
    )
    psa: JSON = {
        "name": "main",
        "count": ps["count"],
        "flavors": {"cpu": flavor, "nvidia.com/gpu": flavor},
        "resourceUsage": {
            "cpu": str(ps["count"]),
            "nvidia.com/gpu": str(gpus * ps["count"]),
        },
    }
    if hosts:
        psa["topologyAssignment"] = {
            "levels": ["kubernetes.io/hostname"],
            "domains": [{"values": [h], "count": 1} for h in hosts],
        }
    return {
        **w,
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [psa]},
            "conditions": [_cond("QuotaReserved"), _cond("Admitted")],
        },
    }


def manager(
    clusters: list[str],
    workloads: list[JSON],
    *,
    inactive: tuple[str, ...] = (),
    step: int | None = None,
) -> list[JSON]:
    """The manager: its queue, the MultiKueue check, config and clusters."""
    objs: list[JSON] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "any"}},
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "admissionChecksStrategy": {"admissionChecks": [{"name": "mk"}]},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "any",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "10000"},
                                    {"name": "nvidia.com/gpu", "nominalQuota": "10000"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": NS},
            "spec": {"clusterQueue": "cq"},
        },
        {
            "apiVersion": KUEUE,
            "kind": "AdmissionCheck",
            "metadata": {"name": "mk"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": "config",
                },
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "MultiKueueConfig",
            "metadata": {"name": "config"},
            "spec": {"clusters": list(clusters)},
        },
    ]
    for c in clusters:
        objs.append(
            {
                "apiVersion": KUEUE,
                "kind": "MultiKueueCluster",
                "metadata": {"name": c},
                "spec": {"clusterSource": {"kubeConfig": {"location": c}}},
                "status": {
                    "conditions": [
                        _cond("Active", "False" if c in inactive else "True")
                    ]
                },
            }
        )
    if step is not None:
        objs.append(
            {
                "apiVersion": "config.kueue.x-k8s.io/v1beta1",
                "kind": "Configuration",
                "metadata": {"name": "kueue"},
                "multiKueue": {"incrementalDispatcherConfig": {"stepSize": step}},
            }
        )
    return objs + workloads


def federation(
    manager_objs: list[JSON],
    workers: dict[str, list[JSON]],
    costs: ClusterCosts | None = None,
) -> Federation:
    return federation_from_raws(
        [RawObject(o, "manager", None) for o in manager_objs],
        {c: [RawObject(o, c, None) for o in objs] for c, objs in workers.items()},
        costs,
    )
