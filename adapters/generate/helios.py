"""The ``helios`` family: the cluster the Helios trace is replayed on.

The Helios trace (SenseTime, SC'21; ``shared/data/helios-15k``) records jobs
but no cluster: about 740 GPUs are busy on average and 958 at the peak, and
multi-host jobs hold 8 GPUs per pod.  So the replay cluster is 128 hosts of
8 GPUs (1,024 GPUs) in one block of 8 racks, empty at the start (the trace
starts from nothing running), shared by four teams whose ClusterQueues lend
to each other in one cohort, with the usual three priority classes.  Kept
apart from ``families.py`` (which only registers it) so that the replay's
cluster reads on its own; ``placewise simulate --family helios`` uses it.
"""

from __future__ import annotations

from placewise.adapters.generate.config import GeneratorConfig, QueueConfig
from placewise.adapters.generate.presets import h100


def helios() -> GeneratorConfig:
    """128 empty H100 hosts, 4 teams in one cohort, no pending work."""
    return GeneratorConfig(
        name="helios",
        description=(
            "Helios replay cluster: 128 H100 hosts (1 block x 8 racks x 16, 1,024 "
            "GPUs), empty at the start; 4 teams with equal quota in one cohort "
            "(borrowing unlimited, reclaimWithinCohort Any, withinClusterQueue "
            "LowerPriority); priorities low/normal/high.  No pending work: the "
            "jobs come from a trace (placewise simulate --job-trace)."
        ),
        blocks=1,
        racks_per_block=8,
        hosts_per_rack=16,
        node_types=(h100(),),
        queues=QueueConfig(
            cluster_queues=4,
            cohorts=1,
            quota_scale=1.0,
            cpu_memory_quota_scale=1.5,
            within_cluster_queue="LowerPriority",
            reclaim_within_cohort="Any",
        ),
        running_fill=0.0,
        running_workload_share=0.0,
        running_pods=0,
        pending=0,
    )
