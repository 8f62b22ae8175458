"""Flavor-eligibility rules (kueue-semantics §4.2)."""

from __future__ import annotations

from typing import Any

import pytest

from placewise.models.snapshot import Snapshot
from tests.models.validate_builders import (
    admission,
    check,
    load,
    plan,
    pod_set,
    psa,
    rules,
    workload,
)

CPU_MEM = {"cpu": "1", "memory": "1Gi"}
RACK = "kueue.x-k8s.io/podset-required-topology"


def one(
    snap: Snapshot,
    flavors: dict[str, str],
    usage: dict[str, str] | None = None,
    key: str = "default/w",
    cq: str = "cq",
    **kw: Any,
) -> list[str]:
    """Rules broken by admitting the single pending workload with ``flavors``."""
    entry = psa("main", flavors, usage or CPU_MEM, **kw)
    return rules(check(snap, plan([admission(key, cq, entry)])))


def flat(*pod_sets: dict[str, Any]) -> Snapshot:
    return load("flat.yaml", workload("default/w", "lq", list(pod_sets)))


def test_matching_flavors_pass() -> None:
    """cpu and memory share flavor f; the gpu group uses its own flavor."""
    snap = flat(pod_set(requests={**CPU_MEM, "example.com/gpu": "1"}))
    usage = {**CPU_MEM, "example.com/gpu": "1"}
    assert (
        one(snap, {"cpu": "f", "memory": "f", "example.com/gpu": "gpu-a"}, usage) == []
    )


def test_uncovered_resource() -> None:
    """A non-zero request the ClusterQueue does not cover cannot be admitted."""
    snap = flat(pod_set(requests={"cpu": "1", "example.com/fpga": "1"}))
    assert one(snap, {"cpu": "f"}, {"cpu": "1", "example.com/fpga": "1"}) == [
        "eligibility.uncovered-resource"
    ]


def test_requested_resource_without_flavor() -> None:
    """Usage without a flavor would hold no quota at all."""
    snap = flat(pod_set(requests=CPU_MEM))
    assert one(snap, {"cpu": "f"}) == ["eligibility.missing-flavor"]


@pytest.mark.parametrize(
    "flavors",
    [
        {"cpu": "unused", "memory": "unused"},  # exists, not in the queue
        {"cpu": "gpu-a", "memory": "gpu-a"},  # in the queue, other group
    ],
)
def test_flavor_not_offered_for_the_resource(flavors: dict[str, str]) -> None:
    """The flavor must be listed in the resource group covering the resource."""
    snap = flat(pod_set(requests=CPU_MEM))
    assert set(one(snap, flavors)) == {"eligibility.flavor-not-in-queue"}


def test_one_flavor_per_resource_group() -> None:
    """cpu and memory are in one group, so they cannot split across flavors."""
    snap = flat(pod_set(requests=CPU_MEM))
    assert one(snap, {"cpu": "f", "memory": "g"}) == ["eligibility.resource-group"]


def test_node_selector_against_flavor_labels() -> None:
    """zone=b excludes flavor f (zone=a) but not g; other keys are ignored."""
    snap = flat(pod_set(requests=CPU_MEM, node_selector={"zone": "b", "disk": "ssd"}))
    assert one(snap, {"cpu": "f", "memory": "f"}) == ["eligibility.node-labels"]
    assert one(snap, {"cpu": "g", "memory": "g"}) == []


def test_untolerated_flavor_taint() -> None:
    """A NoSchedule flavor taint needs a toleration (pod's or flavor's own)."""
    snap = flat(pod_set(requests=CPU_MEM))
    assert one(snap, {"cpu": "spot", "memory": "spot"}) == ["eligibility.taints"]
    assert one(snap, {"cpu": "spot-ok", "memory": "spot-ok"}) == []
    tolerant = flat(
        pod_set(
            requests=CPU_MEM,
            tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        )
    )
    assert one(tolerant, {"cpu": "spot", "memory": "spot"}) == []


def test_non_tas_pod_set_on_tas_flavor() -> None:
    """Without a topology request a pod set may not take a TAS flavor."""
    snap = load("tas.yaml", workload("default/w", "lq-mixed", [pod_set()]))
    assert one(
        snap, {"cpu": "tas"}, {"cpu": "1"}, cq="mixed-cq", domains=[(["h1"], 1)]
    ) == ["eligibility.tas"]
    assert one(snap, {"cpu": "plain"}, {"cpu": "1"}, cq="mixed-cq") == []


def test_tas_pod_set_on_plain_flavor() -> None:
    """A pod set requesting a topology must be placed on a TAS flavor."""
    snap = load(
        "tas.yaml",
        workload("default/w", "lq-mixed", [pod_set(annotations={RACK: "cloud/rack"})]),
    )
    assert one(snap, {"cpu": "plain"}, {"cpu": "1"}, cq="mixed-cq") == [
        "eligibility.tas",
        "eligibility.tas",
    ]


def test_requested_level_missing_from_topology() -> None:
    """A required level the flavor's topology lacks can never be satisfied."""
    snap = load(
        "tas.yaml",
        workload("default/w", "lq", [pod_set(annotations={RACK: "cloud/zone"})]),
    )
    assert one(
        snap, {"cpu": "tas"}, {"cpu": "1"}, cq="tas-cq", domains=[(["h1"], 1)]
    ) == ["eligibility.topology-levels"]


def test_slice_level_above_required_level() -> None:
    """Slices must nest inside the requested domain (Kueue rejects it)."""
    snap = load(
        "tas.yaml",
        workload(
            "default/w",
            "lq",
            [
                pod_set(
                    count=2,
                    annotations={
                        RACK: "kubernetes.io/hostname",
                        "kueue.x-k8s.io/podset-slice-required-topology": "cloud/block",
                        "kueue.x-k8s.io/podset-slice-size": "1",
                    },
                )
            ],
        ),
    )
    assert one(
        snap, {"cpu": "tas"}, {"cpu": "2"}, cq="tas-cq", count=2, domains=[(["h1"], 2)]
    ) == ["eligibility.topology-levels"]
