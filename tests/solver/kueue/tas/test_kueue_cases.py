"""Kueue's TestFindTopologyAssignments, transcribed to ../shared/kueue-cases.

Every ``compare: topology`` case under ``tas/`` places its single pending
workload in its ClusterQueue's TAS flavor and compares, per pod set, the
levels and the set of (values, count) domains, or that it stays pending.
Where the Go test states a failure reason we check it word for word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from placewise.adapters.io.loader import load_snapshot
from placewise.models.workload import SliceLayer, Workload
from placewise.solver.kueue.tas import TasPodSetRequest, TasState
from tests.kueue_cases import MORE
from tests.shared import KUEUE_CASES, params, requires_shared

CASES = KUEUE_CASES / "tas"
MORE_CASES = MORE / "tas"
"""The in-repository transcriptions (issue 22: the multi-layer entries the
shared folder lacks); always present."""

ERRATA: dict[str, dict[str, tuple[SliceLayer, ...]]] = {
    # The instance is written in v1beta1, which has no
    # podsetSliceRequiredTopologyConstraints field, so the transcription lost
    # the two slice layers the Go test sets (tas_cache_test.go, "multi-layer
    # topology: enough hostname slices but not enough rack slices"). They are
    # restored here; without them the request is a plain block-required one
    # that fits, while Kueue's expectation (pending) is about the layers.
    "find-multi-layer-topology-enough-hostname-slices-but-not-enough-rack-slices": {
        "main": (
            SliceLayer(level="cloud.com/topology-rack", size=6),
            SliceLayer(level="kubernetes.io/hostname", size=2),
        ),
    },
}

# wantReason of the Go test, where it names one and the reason comes from
# the placer (not from the loader's own validation).
REASONS: dict[str, str] = {
    "find-block-required-for-podset-rack-required-for-slices-only-1-out-of-2-"
    "slices-fit-the-top": 'topology "default" allows to fit only 1 out of 2 slice(s)',
    "find-block-required-single-pod-which-cannot-be-split-bestfit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 4; '
        'excluded: resource "cpu": 4'
    ),
    "find-block-required-too-many-pods-to-fit-requested-bestfit": (
        'topology "default" allows to fit only 4 out of 5 pod(s)'
    ),
    "find-find-topology-assignment-for-two-podsets-with-the-same-group-no-fit": (
        'topology "default" allows to fit only 4 out of 4 pod(s). Total nodes: 2; '
        'excluded: resource "example.com/gpu": 1'
    ),
    "find-include-usage-from-pending-scheduled-non-tas-pods-blocked-assignment-"
    "bestfit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        'excluded: resource "cpu": 1'
    ),
    "find-include-usage-from-running-non-tas-pods-blocked-assignment-bestfit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        'excluded: resource "cpu": 1'
    ),
    "find-multi-layer-topology-enough-hostname-slices-but-not-enough-rack-slices": (
        'topology "default" doesn\'t allow to fit; 0/2 slice(s) fit on level '
        "cloud.com/topology-rack; 6/6 slice(s) fit on level kubernetes.io/hostname"
    ),
    "find-multi-layer-topology-host-slice-rounding-makes-rack-slice-impossible": (
        'topology "default" doesn\'t allow to fit; 0/1 slice(s) fit on level '
        "cloud.com/topology-rack; 2/3 slice(s) fit on level kubernetes.io/hostname. "
        'Total nodes: 3; excluded: resource "cpu": 1'
    ),
    "find-multi-layer-topology-small-host-kills-rack-slices-despite-enough-total-"
    "capacity": (
        'topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level '
        "cloud.com/topology-rack; 3/4 slice(s) fit on level kubernetes.io/hostname"
    ),
    "find-multiple-podsets-account-assumed-pod-usage-against-allocatable-pods-"
    "bestfit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        'excluded: resource "pods": 1'
    ),
    "find-no-assignment-as-node-is-not-ready-bestfit": (
        "no topology domains at level: kubernetes.io/hostname"
    ),
    "find-only-nodes-with-matching-labels-are-considered-no-matching-node-bestfit": (
        "no topology domains at level: kubernetes.io/hostname"
    ),
    "find-resource-exclusion-picks-most-restrictive-resource": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        'excluded: resource "cpu": 1'
    ),
    "find-skip-node-which-doesn-t-match-node-selector-missing-label-bestfit": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; '
        "excluded: nodeSelector: 1"
    ),
    "find-slice-required-topology-level-cannot-be-above-the-main-required-"
    "topology-level": (
        "podset slice topology cloud.com/topology-block is above the podset "
        "topology kubernetes.io/hostname"
    ),
    "find-multi-layer-topology-3-layer-negative-case-with-small-hosts-cascading-up": (
        'topology "default" doesn\'t allow to fit; 1/2 slice(s) fit on level '
        "cloud.com/topology-block; 3/4 slice(s) fit on level cloud.com/topology-rack; "
        "6/8 slice(s) fit on level kubernetes.io/hostname"
    ),
    "find-temporary-state-cleanup-prevents-leakage-across-podsets": (
        'topology "default" doesn\'t allow to fit any of 1 pod(s). Total nodes: 2; '
        "excluded: nodeSelector: 2"
    ),
}


def topology_cases(root: Path = CASES) -> list[str]:
    out = []
    for exp in sorted(root.glob("*/expected.yaml")):
        if yaml.safe_load(exp.read_text()).get("compare") == "topology":
            out.append(exp.parent.name)
    return out


def requests_of(case: str, wl: Workload) -> list[list[TasPodSetRequest]]:
    """Pod sets in spec order, grouped by podSetGroupName."""
    groups: dict[str, list[TasPodSetRequest]] = {}
    for i, ps in enumerate(wl.pod_sets):
        topo = ps.topology
        if ps.name in ERRATA.get(case, {}):
            topo = topo.model_copy(update={"slices": ERRATA[case][ps.name]})
        groups.setdefault(topo.group or f"#{i}", []).append(
            TasPodSetRequest(
                name=ps.name,
                count=ps.count,
                requests=ps.requests,
                topology=topo,
                placement=ps.placement,
            )
        )
    return list(groups.values())


def _domains(ta: Any) -> tuple[tuple[str, ...], frozenset[tuple[tuple[str, ...], int]]]:
    if isinstance(ta, dict):
        return tuple(ta["levels"]), frozenset(
            (tuple(d["values"]), d["count"]) for d in ta["domains"]
        )
    return tuple(ta.levels), frozenset((d.values, d.count) for d in ta.domains)


@requires_shared
def test_case_count() -> None:
    """The transcription holds about fifty placement cases; all are run."""
    assert len(topology_cases()) >= 50


@pytest.mark.parametrize("case", params(topology_cases(), ids=str))
def test_find_topology_assignments(case: str) -> None:
    check(CASES, case)


def test_more_case_count() -> None:
    assert len(topology_cases(MORE_CASES)) >= 22


@pytest.mark.parametrize("case", topology_cases(MORE_CASES))
def test_find_topology_assignments_more(case: str) -> None:
    check(MORE_CASES, case)


def check(root: Path, case: str) -> None:
    """Place the case's workload; compare with Kueue's assignment or reason."""
    expected = yaml.safe_load((root / case / "expected.yaml").read_text())
    snap = load_snapshot([root / case / "instance.yaml"])
    (wl,) = snap.pending
    cq = snap.cluster_queues[snap.cluster_queue_of(wl) or ""]
    (flavor,) = [f for f in cq.flavor_names if snap.flavors[f].is_tas]
    state = TasState.build(snap)
    result = state.find_assignments(flavor, requests_of(case, wl))

    want = (expected.get("admitted") or {}).get(wl.key)
    if want is None:
        assert result.assignments is None, result.assignments
        assert result.reason
        if case in REASONS:
            assert result.reason == REASONS[case]
        return
    assert result.assignments is not None, result.reason
    for psa in want["podSetAssignments"]:
        got = result.assignments.get(psa["name"])
        if psa.get("topologyAssignment") is None:
            assert got is None or not got.domains
            continue
        assert got is not None
        assert _domains(got) == _domains(psa["topologyAssignment"])
