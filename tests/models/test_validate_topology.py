"""Topology rules for TAS pod sets, on ``tas.yaml`` (block > rack > host).

Racks: r1 = h1, h2; r2 = h3; r3 = h4 (+ unusable h5..h8).
"""

from __future__ import annotations

from typing import Any

import pytest

from placewise.models.validate import Violation
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

ANN = "kueue.x-k8s.io/podset-"
REQUIRED_RACK = {ANN + "required-topology": "cloud/rack"}
HOST = "kubernetes.io/hostname"


def place(
    domains: list[tuple[list[str], int]],
    *,
    count: int = 4,
    annotations: dict[str, str] | None = None,
    flavor: str = "tas",
    levels: list[str] | None = None,
    **ps: Any,
) -> list[Violation]:
    """Admit ``count`` one-cpu pods of one pod set onto ``domains``."""
    snap = load(
        "tas.yaml",
        workload(
            "default/w", "lq", [pod_set(count=count, annotations=annotations, **ps)]
        ),
    )
    entry = psa(
        "main",
        {"cpu": flavor},
        {"cpu": str(count)},
        count,
        domains=domains,
        levels=levels,
    )
    return check(snap, plan([admission("default/w", "tas-cq", entry)]))


def test_required_rack_within_one_rack_passes() -> None:
    """Four pods on h1 and h2, both in rack r1: feasible."""
    assert place([(["h1"], 2), (["h2"], 2)], annotations=REQUIRED_RACK) == []


def test_tas_pod_set_needs_an_assignment() -> None:
    """A pod set on a TAS flavor must say where its pods go."""
    snap = load("tas.yaml", workload("default/w", "lq", [pod_set()]))
    p = plan([admission("default/w", "tas-cq", psa("main", {"cpu": "tas"}))])
    assert rules(check(snap, p)) == ["topology.missing"]


def test_non_tas_pod_set_must_not_have_an_assignment() -> None:
    """A plain flavor has no topology to assign."""
    snap = load("tas.yaml", workload("default/w", "lq-mixed", [pod_set()]))
    entry = psa("main", {"cpu": "plain"}, domains=[(["h1"], 1)])
    p = plan([admission("default/w", "mixed-cq", entry)])
    assert rules(check(snap, p)) == ["topology.unexpected"]


def test_hostname_topology_lists_only_the_hostname_level() -> None:
    """Kueue's convention: a hostname-leaf topology lists only that level."""
    v = place([(["b1", "r1", "h1"], 4)], levels=["cloud/block", "cloud/rack", HOST])
    assert rules(v) == ["topology.levels"]


@pytest.mark.parametrize(
    ("domains", "message"),
    [
        ([(["h1"], 2), (["h2"], 1)], "places 3 pod(s) but the admitted count is 4"),
        ([(["h1"], 4), (["h2"], 0)], "every domain needs at least one pod"),
    ],
)
def test_counts_sum_to_the_admitted_count(
    domains: list[tuple[list[str], int]], message: str
) -> None:
    """Domain counts are positive and add up to the pod set's count."""
    v = place(domains)
    assert rules(v) == ["topology.count"]
    assert message in v[0].message


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("h9", "no node carries these topology labels"),
        ("h5", "node node-5 is not Ready"),
        ("h6", "node node-6 is unschedulable"),
        ("h8", "node node-8 lacks the flavor's label pool=tas"),
    ],
)
def test_domain_must_be_a_usable_node_of_the_flavor(host: str, why: str) -> None:
    """Unknown, NotReady, unschedulable or unlabelled nodes are not leaves."""
    v = place([([host], 1)], count=1)
    assert rules(v) == ["topology.domain"]
    assert why in v[0].message


def test_node_taint_must_be_tolerated() -> None:
    """h7 has a NoSchedule taint; only a tolerating pod set may go there."""
    assert rules(place([(["h7"], 1)], count=1)) == ["topology.node-filter"]
    tolerant = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert place([(["h7"], 1)], count=1, tolerations=tolerant) == []


def test_full_node_selector_applies_to_hostname_leaves() -> None:
    """disk=ssd is not a flavor label (flavor match ignores it), but no
    node carries it, so every hostname leaf is filtered out."""
    v = place([(["h1"], 1)], count=1, node_selector={"disk": "ssd"})
    assert rules(v) == ["topology.node-filter"]


def test_required_level_means_one_domain() -> None:
    """h1 (rack r1) and h3 (rack r2) are two racks; the message names them."""
    v = place([(["h1"], 2), (["h3"], 2)], annotations=REQUIRED_RACK)
    assert rules(v) == ["topology.required-level"]
    assert "span 2: b1/r1, b1/r2" in v[0].message


def test_slices_are_whole_in_each_slice_domain() -> None:
    """Slice size 2 per rack: 2+2 passes, 3+1 breaks both racks."""
    slices = {ANN + "slice-required-topology": "cloud/rack", ANN + "slice-size": "2"}
    assert place([(["h1"], 2), (["h3"], 2)], annotations=slices) == []
    v = place([(["h1"], 2), (["h2"], 1), (["h3"], 1)], annotations=slices)
    assert rules(v) == ["topology.slices", "topology.slices"]
    assert "b1/r1 holds 3 pod(s), not a multiple of the slice size 2" in v[0].message


def test_pooled_leaves_of_a_topology_without_hostname() -> None:
    """Leaves of the block > rack topology are racks, listed by full path."""
    levels = ["cloud/block", "cloud/rack"]
    assert place([(["b1", "r1"], 4)], flavor="pooled", levels=levels) == []
    assert rules(place([(["b1"], 4)], flavor="pooled", levels=levels)) == [
        "topology.domain"
    ]
    v = place([(["b1", "r9"], 4)], flavor="pooled", levels=levels)
    assert rules(v) == ["topology.domain"]


def test_leader_and_workers_share_the_required_domain() -> None:
    """A podSetGroupName group is placed jointly: one rack for both sets."""
    group = {**REQUIRED_RACK, ANN + "group-name": "g"}
    snap = load(
        "tas.yaml",
        workload(
            "default/w",
            "lq",
            [
                pod_set("leader", 1, annotations=group),
                pod_set("workers", 2, annotations=group),
            ],
        ),
    )

    def at(leader_host: str) -> list[str]:
        entries = [
            psa(
                "leader", {"cpu": "tas"}, {"cpu": "1"}, 1, domains=[([leader_host], 1)]
            ),
            psa(
                "workers",
                {"cpu": "tas"},
                {"cpu": "2"},
                2,
                domains=[(["h1"], 1), (["h2"], 1)],
            ),
        ]
        return rules(check(snap, plan([admission("default/w", "tas-cq", *entries)])))

    assert at("h2") == []
    assert at("h3") == ["topology.required-level"]
