"""Named benchmark families: the presets behind ``placewise generate --family``.

These values are the source of truth; ``benchmarks/configs/<name>.yaml``
holds each one written out in full by :func:`export` (a test keeps the two
in step).  The families and their intent are described in
``benchmarks/configs/README.md``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import yaml

from placewise.adapters.generate.config import (
    GeneratorConfig,
    QueueConfig,
    WorkloadClass,
)
from placewise.adapters.generate.fairshare import fair_share
from placewise.adapters.generate.helios import helios
from placewise.adapters.generate.presets import FRAGMENTING_PODS, a100, h100
from placewise.adapters.generate.replicas import kueue_tas_perf, load_10k

HEADER = (
    "# placewise generator config, family {name!r}.\n"
    "# Written by placewise.adapters.generate.families.export(); edit the preset\n"
    "# in adapters/generate/ and re-export, so the two stay equal.\n"
    "# Use: placewise generate --config {name}.yaml --seed 1 -o instance.yaml\n"
)


def default() -> GeneratorConfig:
    return GeneratorConfig()


def fragmented(nodes: int | None = None, pending: int = 100) -> GeneratorConfig:
    """Partially used hosts and gangs whose pods do not divide 8 GPUs evenly.

    The trap for a head-at-a-time scheduler: high-priority rack gangs of
    3-GPU pods arrive among gangs of whole-host (8-GPU) pods.  Kueue's BestFit
    fills the emptiest hosts of a rack first, so the small-pod gangs eat the
    few empty hosts the whole-host gangs need, while the 3-5 GPU holes left
    by running pods stay unused.  A joint plan puts the small pods into the
    holes and keeps empty hosts for the big ones.
    """
    return GeneratorConfig(
        name="fragmented" if nodes is None else f"scale-{nodes}",
        description=(
            "Fragmented TAS GPU cluster: 256 H100 hosts about half used by odd-sized "
            "plain pods, dev pods and whole-host training gangs; ~100 pending single "
            "pods and gangs whose pod sizes (3, 5, 6 GPUs) do not divide 8, whole-host "
            "gangs competing for the few empty hosts, some CPU-heavy pods; unequal "
            "team quotas so quota binds for some teams and hosts for others.  The "
            "CP-SAT target family (256 hosts / 100 pending)."
            if nodes is None
            else f"Scale sweep point: the fragmented family at {nodes} hosts and "
            f"{pending} pending workloads."
        ),
        blocks=2,
        racks_per_block=8,
        hosts_per_rack=16,
        nodes=nodes,
        node_types=(h100(),),
        unschedulable_fraction=0.01,
        tainted_fraction=0.01,
        queues=QueueConfig(
            cluster_queues=4 if nodes is None or nodes < 3000 else 8,
            cohorts=1,
            quota_scale=0.9,
            cpu_memory_quota_scale=1.5,
            share_concentration=2.0,
            borrowing_limit_fraction=0.5,
        ),
        running_fill=0.5,
        running_workload_share=0.4,
        running_pod_shapes=FRAGMENTING_PODS,
        running_classes=(
            WorkloadClass(
                "train",
                pod_counts=(2, 4),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"low": 1, "normal": 2},
            ),
            WorkloadClass(
                "dev",
                weight=2,
                pod_counts=(1,),
                gpus_per_pod=(1, 2, 3),
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
        ),
        pending=pending,
        classes=(
            WorkloadClass(
                "single",
                weight=2,
                pod_counts=(1,),
                gpus_per_pod=(3, 5, 6),
                gpus_per_pod_weights=(3, 2, 1),
                topology="unconstrained",
                priority_classes={"low": 1, "normal": 1},
            ),
            WorkloadClass(
                "cpu-heavy",
                weight=1,
                pod_counts=(1, 2),
                gpus_per_pod=(2,),
                cpu_per_gpu="56",
                memory_per_gpu="256Gi",
                topology="unconstrained",
                priority_classes={"normal": 1},
            ),
            WorkloadClass(
                "gang-small",
                weight=3,
                pod_counts=(3, 4, 6),
                gpus_per_pod=(3,),
                topology="required",
                level="rack",
                priority_classes={"normal": 1, "high": 2},
            ),
            WorkloadClass(
                "gang-wide",
                weight=3,
                pod_counts=(2, 3, 4),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"normal": 1},
            ),
            WorkloadClass(
                "gang-block",
                weight=1,
                pod_counts=(4, 6),
                gpus_per_pod=(6,),
                topology="preferred",
                level="block",
                priority_classes={"normal": 1, "high": 1},
            ),
            WorkloadClass(
                "elastic",
                weight=1,
                pod_counts=(4, 6, 8),
                gpus_per_pod=(6,),
                topology="unconstrained",
                partial_probability=0.5,
                min_count_fraction=0.5,
                priority_classes={"low": 1},
            ),
        ),
        queue_choice="share",
    )


def multi_team() -> GeneratorConfig:
    """Two GPU generations shared by eight teams with lending and borrowing limits."""
    return GeneratorConfig(
        name="multi-team",
        description=(
            "Multi-team quota: 8 ClusterQueues in two cohorts under a root cohort, two "
            "flavors (H100 block, A100 block) listed in rotating preference, lending "
            "limits "
            "at 50% and borrowing limits at 100% of nominal, team namespaceSelectors.  "
            "Running work was admitted round-robin over teams, so small teams borrow."
        ),
        blocks=2,
        racks_per_block=8,
        hosts_per_rack=16,
        node_types=(h100(0.5), a100(0.5)),
        queues=QueueConfig(
            cluster_queues=8,
            cohorts=2,
            root_cohort="org",
            quota_scale=0.9,
            cpu_memory_quota_scale=1.2,
            share_concentration=1.0,
            borrowing_limit_fraction=1.0,
            lending_limit_fraction=0.5,
            namespace_selector="team",
            namespaces_per_queue=2,
            flavor_order="rotate",
            when_can_borrow="TryNextFlavor",
        ),
        running_fill=0.6,
        running_workload_share=0.7,
        running_queue_choice="uniform",
        running_pod_shapes=FRAGMENTING_PODS[:2],
        running_classes=(
            WorkloadClass(
                "train",
                weight=2,
                pod_counts=(2, 4, 8),
                gpus_per_pod=(4, 8),
                cpu_per_gpu="10",
                topology="required",
                level="rack",
                priority_classes={"low": 1, "normal": 2},
            ),
            WorkloadClass(
                "dev",
                weight=3,
                pod_counts=(1,),
                gpus_per_pod=(1, 2),
                cpu_per_gpu="10",
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
        ),
        pending=100,
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
                weight=3,
                pod_counts=(2, 4, 8),
                gpus_per_pod=(4, 8),
                cpu_per_gpu="10",
                topology="required",
                level="rack",
                priority_classes={"normal": 2, "high": 1},
            ),
            WorkloadClass(
                "h100-only",
                weight=1,
                pod_counts=(4, 8),
                gpus_per_pod=(8,),
                cpu_per_gpu="20",
                node_types=("h100",),
                topology="preferred",
                level="rack",
                priority_classes={"high": 1},
            ),
            WorkloadClass(
                "a100-only",
                weight=1,
                pod_counts=(1, 2),
                gpus_per_pod=(2, 4),
                cpu_per_gpu="10",
                node_types=("a100",),
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
        ),
        queue_choice="uniform",
    )


def preemption_heavy() -> GeneratorConfig:
    """A full cluster of low-priority work and high-priority gangs arriving."""
    return GeneratorConfig(
        name="preemption-heavy",
        description=(
            "Preemption-heavy: 128 H100 hosts ~92% used by admitted "
            "low/normal-priority "
            "Workloads (teams borrowing from each other), pending high-priority gangs; "
            "withinClusterQueue LowerPriority, reclaimWithinCohort Any, "
            "borrowWithinCohort "
            "LowerPriority up to priority 1000.  Running Workloads' pods are emitted "
            "too, "
            "TAS-annotated."
        ),
        blocks=2,
        racks_per_block=4,
        hosts_per_rack=16,
        node_types=(h100(),),
        queues=QueueConfig(
            cluster_queues=4,
            cohorts=1,
            quota_scale=1.0,
            cpu_memory_quota_scale=1.5,
            share_concentration=4.0,
            within_cluster_queue="LowerPriority",
            reclaim_within_cohort="Any",
            borrow_within_cohort="LowerPriority",
            borrow_max_priority_threshold=1000,
        ),
        running_fill=0.92,
        running_workload_share=0.95,
        running_queue_choice="uniform",
        emit_workload_pods=True,
        running_pod_shapes=FRAGMENTING_PODS[:1],
        running_classes=(
            WorkloadClass(
                "batch",
                weight=2,
                pod_counts=(2, 4, 8),
                gpus_per_pod=(4, 8),
                topology="required",
                level="rack",
                priority_classes={"low": 2, "normal": 1},
            ),
            WorkloadClass(
                "sweep",
                weight=3,
                pod_counts=(1,),
                gpus_per_pod=(1, 2, 4),
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
        ),
        pending=60,
        classes=(
            WorkloadClass(
                "urgent",
                weight=3,
                pod_counts=(4, 8, 16),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"high": 1},
            ),
            WorkloadClass(
                "prod",
                weight=2,
                pod_counts=(2, 4),
                gpus_per_pod=(4, 8),
                topology="preferred",
                level="rack",
                priority_classes={"normal": 1, "high": 1},
            ),
            WorkloadClass(
                "retry",
                weight=1,
                pod_counts=(1,),
                gpus_per_pod=(1, 2),
                topology="unconstrained",
                priority_classes={"normal": 1},
            ),
        ),
    )


def topology_heavy() -> GeneratorConfig:
    """Whole-host gangs that need a rack and would like a block."""
    return GeneratorConfig(
        name="topology-heavy",
        description=(
            "Topology-heavy: 512 H100 hosts (4 blocks x 8 racks x 16), 40% used; large "
            "gangs of whole hosts requiring a rack, gangs preferring a block with rack "
            "slices, and block-required gangs with 2-pod host slices."
        ),
        blocks=4,
        racks_per_block=8,
        hosts_per_rack=16,
        node_types=(h100(),),
        queues=QueueConfig(
            cluster_queues=4, cohorts=1, quota_scale=1.0, cpu_memory_quota_scale=1.5
        ),
        running_fill=0.4,
        running_workload_share=0.6,
        running_pod_shapes=FRAGMENTING_PODS[:3],
        running_classes=(
            WorkloadClass(
                "train",
                weight=1,
                pod_counts=(4, 8, 12),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"normal": 1},
            ),
        ),
        pending=80,
        classes=(
            WorkloadClass(
                "rack-gang",
                weight=3,
                pod_counts=(4, 8, 12, 16),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"normal": 2, "high": 1},
            ),
            WorkloadClass(
                "block-gang",
                weight=1,
                pod_counts=(16, 24, 32),
                gpus_per_pod=(8,),
                topology="preferred",
                level="block",
                slice_level="rack",
                slice_size=8,
                priority_classes={"normal": 1, "high": 1},
            ),
            WorkloadClass(
                "block-pairs",
                weight=1,
                pod_counts=(12, 24),
                gpus_per_pod=(4,),
                topology="required",
                level="block",
                slice_level="hostname",
                slice_size=2,
                priority_classes={"normal": 1},
            ),
            WorkloadClass(
                "host-pinned",
                weight=2,
                pod_counts=(2,),
                gpus_per_pod=(4,),
                topology="required",
                level="hostname",
                priority_classes={"low": 1},
            ),
        ),
    )


def fragmented_running() -> GeneratorConfig:
    """Big gangs blocked by small running jobs scattered over the racks.

    Issue 20's case: quota is free and the racks hold enough idle GPUs in
    total, but every rack is dotted with small running jobs (1-4 GPUs,
    labelled movable, a quarter checkpointed), so no rack has the 4 empty
    hosts a half-rack gang needs.  Kueue cannot help (no topology-driven
    preemption); moving a few small jobs together frees whole hosts.
    """
    return GeneratorConfig(
        name="fragmented-running",
        description=(
            "Fragmented by running work: 64 H100 hosts (2 blocks x 4 racks x 8), a "
            "third used by small movable running jobs (1-4 GPUs) scattered over "
            "every rack, and a few whole-host training gangs; 12 pending half-rack "
            "gangs (4 x 8 GPUs, required rack) and some small jobs; quota is "
            "ample, so only fragmentation holds the gangs back."
        ),
        blocks=2,
        racks_per_block=4,
        hosts_per_rack=8,
        node_types=(h100(),),
        queues=QueueConfig(
            cluster_queues=2,
            cohorts=1,
            quota_scale=2.0,
            cpu_memory_quota_scale=2.0,
        ),
        running_fill=0.35,
        running_workload_share=1.0,
        running_queue_choice="uniform",
        running_classes=(
            WorkloadClass(
                "small",
                weight=6,
                pod_counts=(1,),
                gpus_per_pod=(1, 2, 3, 4),
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
            WorkloadClass(
                "train",
                weight=1,
                pod_counts=(1, 2),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"normal": 1},
            ),
        ),
        movable_classes=("small",),
        checkpointed_fraction=0.25,
        pending=16,
        classes=(
            WorkloadClass(
                "half-rack",
                weight=3,
                pod_counts=(4,),
                gpus_per_pod=(8,),
                topology="required",
                level="rack",
                priority_classes={"normal": 2, "high": 1},
            ),
            WorkloadClass(
                "single",
                weight=1,
                pod_counts=(1,),
                gpus_per_pod=(2, 4),
                topology="unconstrained",
                priority_classes={"low": 1},
            ),
        ),
        class_mix="proportional",
    )


SCALE_POINTS = (100, 300, 1000, 3000, 10000, 50000)
"""Host counts of the scale sweep; pending work is a fifth of the hosts."""

FAMILIES: dict[str, Callable[[], GeneratorConfig]] = {
    "default": default,
    "fragmented": fragmented,
    "fragmented-running": fragmented_running,
    "multi-team": multi_team,
    "fair-share": fair_share,
    "preemption-heavy": preemption_heavy,
    "topology-heavy": topology_heavy,
    "kueue-tas-perf": kueue_tas_perf,
    "load-10k": load_10k,
    "helios": helios,
    **{
        f"scale-{n}": functools.partial(fragmented, nodes=n, pending=n // 5)
        for n in SCALE_POINTS
    },
}


def family(name: str) -> GeneratorConfig:
    """The preset called ``name``; KeyError lists the known names."""
    try:
        return FAMILIES[name]()
    except KeyError:
        raise KeyError(
            f"unknown family {name!r}; known: {', '.join(FAMILIES)}"
        ) from None


def to_yaml(config: GeneratorConfig) -> str:
    body = yaml.dump(
        config.to_dict(),
        Dumper=yaml.CSafeDumper,
        sort_keys=False,
        default_flow_style=False,
        width=88,
    )
    return HEADER.format(name=config.name) + str(body)


def export(directory: str | Path) -> list[Path]:
    """Write every family to ``<directory>/<name>.yaml``; returns the paths."""
    out = []
    for name in FAMILIES:
        path = Path(directory) / f"{name}.yaml"
        path.write_text(to_yaml(family(name)), encoding="utf-8")
        out.append(path)
    return out
