"""Variants of a loaded cluster: hosts added or removed, quota, weights.

All on the one-host replay cluster (8 GPUs, one ClusterQueue ``team-cq``).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot
from placewise.benchmarks.sweep.variants import (
    Change,
    VariantError,
    apply,
    check_change,
)
from placewise.models.cluster import HOSTNAME_LABEL, Pod
from placewise.models.snapshot import Snapshot

CLUSTER = str(Path(__file__).resolve().parents[1] / "data" / "replay" / "one-host.yaml")
GPU = "nvidia.com/gpu"


@pytest.fixture(scope="module")
def base() -> Snapshot:
    return load_snapshot([CLUSTER])


def _gpu_quota(snap: Snapshot) -> int:
    rq = snap.cluster_queues["team-cq"].quota("h100", GPU)
    assert rq is not None
    return rq.nominal


def test_added_hosts_are_clones_with_their_own_names_and_quota_follows(
    base: Snapshot,
) -> None:
    snap = apply(base, [Change("add_hosts", 2, flavor="h100")])
    assert sorted(snap.nodes) == ["host-1", "host-1-sweep-0", "host-1-sweep-1"]
    new = snap.nodes["host-1-sweep-1"]
    assert new.labels[HOSTNAME_LABEL] == "host-1-sweep-1"
    assert new.allocatable == base.nodes["host-1"].allocatable
    assert _gpu_quota(snap) == 24  # 8 GPUs per host, three hosts
    assert _gpu_quota(base) == 8  # the base is untouched
    fixed = apply(base, [Change("add_hosts", 2, flavor="h100", grow_quota=False)])
    assert len(fixed.nodes) == 3 and _gpu_quota(fixed) == 8


def test_removed_hosts_take_their_pods_with_them(base: Snapshot) -> None:
    import dataclasses

    pod = Pod(namespace="team", name="p", node_name="host-1", requests={GPU: 1})
    with_pod = Snapshot(dataclasses.replace(base.objects, pods={"team/p": pod}))
    snap = apply(with_pod, [Change("add_hosts", -1, flavor="h100")])
    assert not snap.nodes and not snap.pods and _gpu_quota(snap) == 0


def test_quota_and_fair_weight_edit_the_cluster_queue(base: Snapshot) -> None:
    snap = apply(
        base,
        [
            Change("quota", 4, cluster_queue="team-cq", resource=GPU),
            Change("quota", "100Gi", cluster_queue="team-cq", resource="memory"),
            Change("fair_weight", "1.5", cluster_queue="team-cq"),
        ],
    )
    cq = snap.cluster_queues["team-cq"]
    assert _gpu_quota(snap) == 4
    mem = cq.quota("h100", "memory")
    assert mem is not None and mem.nominal == 100 * 2**30
    assert cq.fair_weight == Fraction(3, 2)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (Change("add_hosts", 1, flavor="h200"), "flavor", "unknown flavor 'h200'"),
        (Change("add_hosts", -2, flavor="h100"), "values", "cannot remove 2 hosts"),
        (
            Change("quota", 4, cluster_queue="nope", resource=GPU),
            "cluster_queue",
            "unknown ClusterQueue 'nope'",
        ),
        (Change("quota", 4, cluster_queue="team-cq", resource="x"), "flavor", "x"),
        (
            Change("quota", "lots", cluster_queue="team-cq", resource=GPU),
            "values",
            "quota 'lots'",
        ),
        (Change("fair_weight", -1, cluster_queue="team-cq"), "values", "negative"),
    ],
)
def test_bad_changes_name_the_field(
    base: Snapshot, change: Change, field: str, message: str
) -> None:
    with pytest.raises(VariantError, match=message) as info:
        check_change(base, change)
    assert info.value.field == field
