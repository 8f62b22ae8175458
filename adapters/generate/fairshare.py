"""The ``fair-share`` family: teams of uneven weights competing for one pool.

Kept apart from ``families.py`` (which only registers it) so the preset that
exercises Kueue's fair sharing reads on its own.
"""

from __future__ import annotations

from placewise.adapters.generate.config import (
    GeneratorConfig,
    NodeType,
    PodShape,
    QueueConfig,
    WorkloadClass,
)


def fair_share() -> GeneratorConfig:
    """Five teams in one cohort, fair sharing on, demand ~6x the cluster.

    Most of the quota (60%) is the cohort's own pool, so what each team gets
    beyond its small nominal quota is decided by fair sharing: weights 4, 2,
    2, 1, 1.  Running work was admitted uniformly over teams, so the
    small-weight teams already borrow well beyond their fair part; every
    team has pending single pods and rack gangs far beyond capacity, with
    ``reclaimWithinCohort: Any`` so shares can be rebalanced by preemption.
    """
    return GeneratorConfig(
        name="fair-share",
        description=(
            "Fair sharing: 32 H100 hosts (256 GPUs) shared by 5 teams in one cohort "
            "with fair sharing on and weights 4, 2, 2, 1, 1; 60% of the quota is the "
            "cohort's own pool, the rest equal team nominal quotas; running work "
            "admitted uniformly over teams (low-weight teams borrow), ~150 pending "
            "single pods and rack gangs (~6x capacity) spread evenly over teams."
        ),
        blocks=1,
        racks_per_block=4,
        hosts_per_rack=8,
        node_types=(
            NodeType(
                name="h100",
                flavor="h100",
                labels={
                    "node.kubernetes.io/instance-type": "a3-highgpu-8g",
                    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                },
            ),
        ),
        queues=QueueConfig(
            cluster_queues=5,
            cohorts=1,
            quota_scale=1.0,
            cpu_memory_quota_scale=1.5,
            cohort_quota_share=0.6,
            within_cluster_queue="LowerPriority",
            reclaim_within_cohort="Any",
            namespace_selector="team",
            fair_sharing=True,
            fair_weights=("4", "2", "2", "1", "1"),
        ),
        running_fill=0.6,
        running_workload_share=0.9,
        running_queue_choice="uniform",
        running_pod_shapes=(PodShape("inference", "inference", 1.0, 1, "12", "96Gi"),),
        pending=150,
        classes=(
            WorkloadClass(
                "single",
                weight=3,
                pod_counts=(1,),
                gpus_per_pod=(1, 2, 4),
                cpu_per_gpu="10",
                topology="unconstrained",
                priority_classes={"low": 1, "normal": 2},
            ),
            WorkloadClass(
                "gang",
                weight=2,
                pod_counts=(2, 4),
                gpus_per_pod=(4, 8),
                cpu_per_gpu="10",
                topology="required",
                level="rack",
                priority_classes={"normal": 2, "high": 1},
            ),
        ),
        queue_choice="round-robin",
    )
