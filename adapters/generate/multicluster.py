"""The ``multi-cluster`` family: a MultiKueue manager and three regions.

GPU capacity stranded across regions: ``us-east`` is H100 and busy,
``eu-west`` is A100 and mostly idle, ``ap-south`` mixes H100 and L4 hosts
and is half used.  The same teams (namespaces, LocalQueues) exist in every
region; each region runs its own work and has a few pending workloads of
its own.  The manager holds the global queue: Workloads that reserved quota
there and wait for the MultiKueue admission check, many constrained to one
GPU model (a nodeSelector on ``nvidia.com/gpu.product``, which every
flavor selects on).  Each cluster is an ordinary generated instance
(:func:`placewise.adapters.generate.generate`), so the regions have racks,
blocks, TAS flavors, cohorts and running work like every other family.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from placewise.adapters.generate.config import (
    GeneratorConfig,
    NodeType,
    QueueConfig,
    WorkloadClass,
)
from placewise.adapters.generate.core import generate
from placewise.adapters.generate.io import write
from placewise.models.quantity import format_units, to_units

JSON = dict[str, Any]
GPU_LABEL = "nvidia.com/gpu.product"
KUEUE = "kueue.x-k8s.io/v1beta2"
TEAMS = ("team-a", "team-b", "team-c")
CHECK = "multikueue"
CONFIG = "regions"


def _type(name: str, product: str, instance: str, cpu: str, mem: str) -> NodeType:
    return NodeType(
        name=name,
        flavor=name,
        cpu=cpu,
        memory=mem,
        labels={"node.kubernetes.io/instance-type": instance, GPU_LABEL: product},
        flavor_label_keys=(GPU_LABEL,),
    )


H100 = _type("h100", "NVIDIA-H100-80GB-HBM3", "a3-highgpu-8g", "208", "1872Gi")
A100 = _type("a100", "NVIDIA-A100-SXM4-80GB", "a2-ultragpu-8g", "96", "1360Gi")
L4 = _type("l4", "NVIDIA-L4", "g2-standard-96", "96", "384Gi")


@dataclasses.dataclass(frozen=True)
class Region:
    name: str
    node_types: tuple[NodeType, ...]
    running_fill: float
    seed_offset: int


REGIONS = (
    Region("us-east", (H100,), 0.85, 0),
    Region("eu-west", (A100,), 0.30, 1),
    Region(
        "ap-south",
        (
            dataclasses.replace(H100, fraction=0.5),
            dataclasses.replace(L4, fraction=0.5),
        ),
        0.55,
        2,
    ),
)
"""Cluster order: MultiKueueConfig order and the tie-break of a race."""


def _queues() -> QueueConfig:
    return QueueConfig(
        cluster_queues=len(TEAMS),
        cohorts=1,
        names=TEAMS,
        quota_scale=1.0,
        cpu_memory_quota_scale=1.5,
        share_concentration=3.0,
        within_cluster_queue="LowerPriority",
        reclaim_within_cohort="Any",
    )


def _classes(pinned: bool) -> tuple[WorkloadClass, ...]:
    """Pending work; ``pinned``: the manager's mix, a share constrained to
    one GPU model.  Per GPU 10 CPUs and 40Gi, so a whole-host pod fits every
    GPU model's host (the A100 and L4 hosts have 96 CPUs, L4 384Gi)."""
    out = [
        dataclasses.replace(c, cpu_per_gpu="10", memory_per_gpu="40Gi")
        for c in _mix(pinned)
    ]
    return tuple(out)


def _mix(pinned: bool) -> tuple[WorkloadClass, ...]:
    prio_train: dict[str, float] = {"normal": 2, "high": 1}
    out = [
        WorkloadClass(
            "single",
            weight=3,
            pod_counts=(1,),
            gpus_per_pod=(1, 2, 4),
            gpus_per_pod_weights=(3, 2, 1),
            topology="unconstrained",
            priority_classes={"low": 1, "normal": 2},
        ),
        WorkloadClass(
            "gang",
            weight=3,
            pod_counts=(2, 4, 8),
            gpus_per_pod=(8,),
            topology="required",
            level="rack",
            priority_classes=prio_train,
        ),
        WorkloadClass(
            "large",
            weight=1,
            pod_counts=(16,),
            gpus_per_pod=(8,),
            topology="preferred",
            level="block",
            priority_classes=prio_train,
        ),
    ]
    if pinned:
        out += [
            WorkloadClass(
                "h100-gang",
                weight=2,
                pod_counts=(2, 4),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                node_types=("h100",),
                priority_classes=prio_train,
            ),
            WorkloadClass(
                "a100-tune",
                weight=1,
                pod_counts=(1, 2),
                gpus_per_pod=(4, 8),
                topology="unconstrained",
                node_types=("a100",),
                priority_classes={"low": 1, "normal": 1},
            ),
            WorkloadClass(
                "l4-infer",
                weight=1,
                pod_counts=(1,),
                gpus_per_pod=(1, 2),
                topology="unconstrained",
                node_types=("l4",),
                priority_classes={"normal": 1},
            ),
        ]
    return tuple(out)


def region_config(region: Region, hosts: int, pending: int) -> GeneratorConfig:
    return GeneratorConfig(
        name=f"multi-cluster-{region.name}",
        description=f"multi-cluster family, worker {region.name}",
        blocks=max(1, -(-hosts // 160)),
        racks_per_block=10,
        hosts_per_rack=16,
        nodes=hosts,
        node_types=region.node_types,
        queues=_queues(),
        running_fill=region.running_fill,
        running_workload_share=0.6,
        pending=pending,
        classes=_classes(False),
    )


def manager_config(pending: int) -> GeneratorConfig:
    return GeneratorConfig(
        name="multi-cluster-manager",
        description="multi-cluster family, MultiKueue manager",
        blocks=1,
        racks_per_block=1,
        hosts_per_rack=3,
        node_types=(
            dataclasses.replace(H100, fraction=1.0),
            dataclasses.replace(A100, fraction=1.0),
            dataclasses.replace(L4, fraction=1.0),
        ),
        queues=_queues(),
        running_fill=0.0,
        running_pods=0,
        pending=pending,
        classes=_classes(True),
    )


def _manager(objects: list[JSON], pending: int) -> list[JSON]:
    """The manager: its namespaces, priority classes and LocalQueues as
    generated; one ClusterQueue per team gated by the MultiKueue check; the
    generated pending Workloads as holding quota there, check Pending."""
    keep = ("Namespace", "WorkloadPriorityClass", "LocalQueue")
    out: list[JSON] = [o for o in objects if o["kind"] in keep]
    queues = {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o["spec"]["clusterQueue"]
        for o in out
        if o["kind"] == "LocalQueue"
    }
    out.append(
        {"apiVersion": KUEUE, "kind": "ResourceFlavor", "metadata": {"name": "global"}}
    )
    for team in sorted(set(queues.values())):
        out.append(
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": team},
                "spec": {
                    "namespaceSelector": {},
                    "admissionChecksStrategy": {"admissionChecks": [{"name": CHECK}]},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                            "flavors": [
                                {
                                    "name": "global",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "1000000"},
                                        {"name": "memory", "nominalQuota": "100000Ti"},
                                        {
                                            "name": "nvidia.com/gpu",
                                            "nominalQuota": "100000",
                                        },
                                    ],
                                }
                            ],
                        }
                    ],
                },
            }
        )
    out += [
        {
            "apiVersion": KUEUE,
            "kind": "AdmissionCheck",
            "metadata": {"name": CHECK},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": CONFIG,
                },
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "MultiKueueConfig",
            "metadata": {"name": CONFIG},
            "spec": {"clusters": [r.name for r in REGIONS]},
        },
    ]
    out.append(
        {
            # Kueue's own Configuration: the incremental dispatcher asks one
            # region per round, in the MultiKueueConfig's order (Kueue's
            # spillover example; Kueue accepts a step size only with it).
            "apiVersion": "config.kueue.x-k8s.io/v1beta1",
            "kind": "Configuration",
            "metadata": {"name": "kueue-config"},
            "multiKueue": {
                "dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                "incrementalDispatcherConfig": {"stepSize": 1},
            },
        }
    )
    for r in REGIONS:
        out.append(
            {
                "apiVersion": KUEUE,
                "kind": "MultiKueueCluster",
                "metadata": {"name": r.name},
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"location": f"{r.name}-kubeconfig"}
                    }
                },
                "status": {
                    "conditions": [
                        {
                            "type": "Active",
                            "status": "True",
                            "reason": "Active",
                            "message": "Connected",
                            "lastTransitionTime": "2025-12-01T00:00:00Z",
                        }
                    ]
                },
            }
        )
    for o in objects:
        if o["kind"] == "Workload" and not (o.get("status") or {}).get("admission"):
            meta = o["metadata"]
            out.append(
                _reserved(o, queues[(meta["namespace"], o["spec"]["queueName"])])
            )
    return out


def _reserved(w: JSON, cluster_queue: str) -> JSON:
    """A generated pending Workload as the manager holds it after Kueue
    reserved quota for it: named apart from the workers' own work."""
    w = {**w, "metadata": {**w["metadata"], "name": "global-" + w["metadata"]["name"]}}
    psas = []
    for ps in w["spec"]["podSets"]:
        requests: dict[str, Any] = {}
        for c in ps["template"]["spec"]["containers"]:
            requests.update((c.get("resources") or {}).get("requests") or {})
        usage = {r: _times(r, q, ps["count"]) for r, q in requests.items()}
        psas.append(
            {
                "name": ps["name"],
                "count": ps["count"],
                "flavors": {r: "global" for r in usage},
                "resourceUsage": usage,
            }
        )
    when = w["metadata"]["creationTimestamp"]
    cond = {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue",
        "lastTransitionTime": when,
    }
    w["status"] = {
        "admission": {"clusterQueue": cluster_queue, "podSetAssignments": psas},
        "conditions": [cond],
        "admissionChecks": [
            {
                "name": CHECK,
                "state": "Pending",
                "message": "",
                "lastTransitionTime": when,
            }
        ],
    }
    return w


def _times(resource: str, quantity: str, n: int) -> str:
    """``n`` pods' worth of a per-pod request."""
    return format_units(resource, to_units(resource, quantity) * n)


def multi_cluster(
    seed: int, hosts: int = 300, pending: int = 150, local_pending: int = 10
) -> dict[str, list[JSON]]:
    """{"manager": objects, region: objects, ...}, regions in cluster order."""
    out = {"manager": _manager(generate(manager_config(pending), seed), pending)}
    for r in REGIONS:
        out[r.name] = generate(
            region_config(r, hosts, local_pending), seed * 7 + r.seed_offset
        )
    return out


def write_multi_cluster(
    directory: str | Path,
    seed: int,
    hosts: int = 300,
    pending: int = 150,
    fmt: str = "yaml",
) -> dict[str, Path]:
    """Write ``manager.yaml`` and one file per region into ``directory``."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, objects in multi_cluster(seed, hosts, pending).items():
        paths[name] = folder / f"{name}.{fmt}"
        write(objects, paths[name], "json" if fmt == "json" else "yaml")
    return paths
