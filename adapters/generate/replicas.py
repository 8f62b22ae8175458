"""Families that replicate another benchmark's instances: Kueue's own TAS
performance test and the loader benchmark's 10,000-node dump.

Registered in :mod:`.families`; kept apart because they copy another
generator's shapes number for number rather than describe a cluster of
ours.
"""

from __future__ import annotations

from placewise.adapters.generate.config import (
    GeneratorConfig,
    NodeType,
    PodShape,
    QueueConfig,
    WorkloadClass,
)
from placewise.adapters.generate.presets import a100, h100


def _perf_class(
    name: str,
    weight: int,
    request: str,
    pods: int,
    priority: int,
    interval_ms: int,
    constraint: str,
    slice_size: int | None = None,
) -> WorkloadClass:
    """One workload class of Kueue's TAS performance test, as its generator makes it."""
    balanced = constraint == "balanced"
    return WorkloadClass(
        name=name,
        weight=weight,
        pod_counts=(pods,),
        gpus_per_pod=(0,),
        cpu_per_pod=request,
        cpu_per_gpu="0",
        memory_per_pod="0",
        memory_per_gpu="0",
        topology="none"
        if balanced
        else ("required" if constraint == "required" else "preferred"),
        level="rack",
        slice_level="rack" if balanced else None,
        slice_size=slice_size if balanced else None,
        priority=priority,
        creation_interval_ms=interval_ms,
        image="registry.k8s.io/pause:3.10",
    )


def kueue_tas_perf() -> GeneratorConfig:
    """Kueue's own TAS performance test (test/performance/scheduler/configs/tas)."""
    return GeneratorConfig(
        name="kueue-tas-perf",
        description=(
            "Kueue's TAS performance test: 1 block x 10 racks x 64 CPU nodes (96 CPU, "
            "256Gi, label tas-node-group=tas), 5 cohorts x 6 ClusterQueues (cpu "
            "nominal 20, "
            "borrowingLimit 100, reclaimWithinCohort Any, withinClusterQueue "
            "LowerPriority), "
            "500 workloads per queue in its nine classes (2/4/8-pod gangs; required, "
            "preferred and balanced rack) = 15,000 pending.  Mirrors "
            "kubernetes-sigs/kueue "
            "test/performance/scheduler/configs/tas/generator.yaml."
        ),
        blocks=1,
        racks_per_block=10,
        hosts_per_rack=64,
        naming="kueue-perf",
        topology_name="default-topology",
        node_types=(
            NodeType(
                name="tas",
                flavor="tas-flavor",
                gpus=0,
                cpu="96",
                memory="256Gi",
                pods=110,
                reserved_cpu="0",
                reserved_memory="0",
                labels={"tas-node-group": "tas"},
                flavor_label_keys=("tas-node-group",),
            ),
        ),
        queues=QueueConfig(
            cluster_queues=30,
            cohorts=5,
            names=tuple(f"cq-0-{k // 5}-cohort-{k % 5}" for k in range(30)),
            covered_resources=("cpu",),
            nominal_quota={"cpu": "20"},
            borrowing_limit={"cpu": "100"},
            reclaim_within_cohort="Any",
            within_cluster_queue="LowerPriority",
        ),
        priority_classes=(),
        running_fill=0.0,
        running_pod_shapes=(),
        pending=15000,
        class_mix="proportional",
        queue_choice="round-robin",
        classes=(
            _perf_class("small-required-rack", 120, "500m", 2, 50, 100, "required"),
            _perf_class("small-preferred-rack", 120, "500m", 2, 50, 100, "preferred"),
            _perf_class("small-balanced-rack", 110, "500m", 2, 50, 100, "balanced", 1),
            _perf_class("medium-required-rack", 34, "1250m", 4, 100, 500, "required"),
            _perf_class("medium-preferred-rack", 33, "1250m", 4, 100, 500, "preferred"),
            _perf_class(
                "medium-balanced-rack", 33, "1250m", 4, 100, 500, "balanced", 2
            ),
            _perf_class("large-required-rack", 17, "2500m", 8, 200, 1200, "required"),
            _perf_class("large-preferred-rack", 17, "2500m", 8, 200, 1200, "preferred"),
            _perf_class(
                "large-balanced-rack", 16, "2500m", 8, 200, 1200, "balanced", 4
            ),
        ),
    )


def load_10k() -> GeneratorConfig:
    """The loader benchmark dump: 10,000 nodes, 20,000 pods, 2,000 pending."""
    return GeneratorConfig(
        name="load-10k",
        description=(
            "Load/greedy benchmark dump: 10,000 GPU nodes (25 blocks x 25 racks x 16; "
            "70% "
            "H100, 30% A100), exactly 20,000 running plain pods (~47% of GPUs), 2,000 "
            "pending TAS Workloads in 4 ClusterQueues of one cohort."
        ),
        blocks=25,
        racks_per_block=25,
        hosts_per_rack=16,
        node_types=(h100(0.7), a100(0.3)),
        unschedulable_fraction=0.005,
        not_ready_fraction=0.002,
        queues=QueueConfig(
            cluster_queues=4,
            cohorts=1,
            quota_scale=1.0,
            cpu_memory_quota_scale=1.5,
            share_concentration=4.0,
            borrowing_limit_fraction=0.5,
            flavor_order="rotate",
        ),
        running_pods=20000,
        running_pod_shapes=(
            PodShape("inference", "inference", 3.0, 1, "10", "96Gi"),
            PodShape("inference-large", "inference", 2.0, 2, "20", "192Gi"),
            PodShape("batch", "batch", 2.0, 4, "40", "384Gi"),
            PodShape("etl", "data", 1.0, 0, "24", "128Gi"),
        ),
        running_workload_share=0.0,
        pending=2000,
        classes=(
            WorkloadClass(
                "single",
                weight=4,
                pod_counts=(1,),
                gpus_per_pod=(1, 2, 4),
                cpu_per_gpu="10",
                topology="unconstrained",
                priority_classes={"low": 1, "normal": 2},
            ),
            WorkloadClass(
                "gang-rack",
                weight=3,
                pod_counts=(2, 4, 8),
                gpus_per_pod=(4, 8),
                cpu_per_gpu="10",
                topology="required",
                level="rack",
                priority_classes={"normal": 2, "high": 1},
            ),
            WorkloadClass(
                "gang-block",
                weight=1,
                pod_counts=(16, 32),
                gpus_per_pod=(8,),
                cpu_per_gpu="10",
                topology="preferred",
                level="block",
                slice_level="rack",
                slice_size=8,
                priority_classes={"normal": 1, "high": 1},
            ),
        ),
    )
