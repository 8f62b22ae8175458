"""Admission fair sharing in instances (issue 22): Kueue's Configuration
section and gate, a ClusterQueue's admission mode, a LocalQueue's weight and
recorded usage, decoded exactly as Kueue reads them.  Bad values are in
tests/data/malformed (afs-*) and checked by test_kueue_config."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import pytest

from placewise.adapters.io.convert.afs import parse_duration
from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.errors import InstanceError

CONFIG = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("10s", 10 * 10**9),
        ("1m30s", 90 * 10**9),
        ("1.5h", 5400 * 10**9),
        ("300ms", 300 * 10**6),
        ("2us", 2000),
        ("7ns", 7),
        ("-1s", -(10**9)),
    ],
)
def test_durations_read_as_go_does(text: str, ns: int) -> None:
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", ["", "10", "ten seconds", "1d", "s", "1s2"])
def test_what_go_refuses_is_not_a_duration(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_section_with_kueue_defaults_and_exact_weights() -> None:
    snap = snapshot_from_text(
        CONFIG + "admissionFairSharing:\n  usageHalfLifeTime: 10m\n"
        "  resourceWeights: {cpu: 0.5, nvidia.com/gpu: 2}\n"
    )
    afs = snap.fair_sharing.admission
    assert afs is not None
    assert afs.usage_half_life_ns == 600 * 10**9
    assert afs.usage_sampling_interval_ns == 300 * 10**9  # Kueue's default
    assert dict(afs.resource_weights) == {
        "cpu": Fraction(1, 2),
        "nvidia.com/gpu": Fraction(2),
    }
    assert not snap.fair_sharing.enable  # cohort fair sharing is separate


def test_the_gate_turns_it_off_and_other_gates_are_named() -> None:
    snap = snapshot_from_text(
        CONFIG + "admissionFairSharing: {usageHalfLifeTime: 10s}\n"
        "featureGates: {AdmissionFairSharing: false, TopologyAwareScheduling: true}\n"
    )
    assert snap.fair_sharing.admission is None
    warnings = " ".join(str(w) for w in snap.warnings)
    assert "featureGates.TopologyAwareScheduling" in warnings
    assert "featureGates.AdmissionFairSharing" not in warnings


def test_no_section_means_no_usage_ordering() -> None:
    assert snapshot_from_text(CONFIG).fair_sharing.admission is None


def test_negative_resource_weight_is_refused() -> None:
    with pytest.raises(InstanceError, match=r"resourceWeights\.cpu"):
        snapshot_from_text(
            CONFIG + "admissionFairSharing:\n  usageHalfLifeTime: 10s\n"
            "  resourceWeights: {cpu: -1}\n"
        )


def test_queue_objects() -> None:
    snap = snapshot_from_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
        "metadata: {name: cq}\n"
        "spec: {admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}}\n"
        "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: lq, namespace: default}\n"
        "spec: {clusterQueue: cq, fairSharing: {weight: 250m}}\n"
        "status:\n  fairSharing:\n    weightedShare: 0\n"
        "    admissionFairSharingStatus:\n"
        "      consumedResources: {cpu: 1500m, memory: 2Gi}\n"
        "      lastUpdate: '2026-01-01T00:00:00Z'\n"
    )
    assert snap.cluster_queues["cq"].admission_mode == "UsageBasedAdmissionFairSharing"
    lq = snap.local_queues["default/lq"]
    assert lq.fair_weight == Fraction(1, 4)
    assert dict(lq.consumed) == {"cpu": Fraction(3, 2), "memory": Fraction(2**31)}
    assert lq.consumed_at == datetime(2026, 1, 1, tzinfo=UTC)


def workload(annotations: str) -> str:
    return (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
        f"metadata: {{name: w, namespace: default, annotations: {{{annotations}}}}}\n"
        "spec:\n  queueName: q\n  podSets: [{name: main, count: 1, template: "
        "{spec: {containers: [{name: c}]}}}]\n"
    )


def test_elastic_slice_link_is_read() -> None:
    """The annotation is the slice's link (``Workload.replaces``); one that
    names no running slice is said so: the slice is scheduled on its own."""
    snap = snapshot_from_text(
        workload("kueue.x-k8s.io/workload-slice-replacement-for: default/old")
    )
    assert snap.workloads["default/w"].replaces == "default/old"
    (warning,) = [str(w) for w in snap.warnings if "Workload default/w" in str(w)]
    assert "replaces 'default/old', which is not running" in warning


@pytest.mark.parametrize(
    ("value", "gated"), [("'ext-controller'", True), ("''", False)]
)
def test_admission_gated_by_keeps_the_workload_out_of_its_queue(
    value: str, gated: bool
) -> None:
    """Kueue's AdmissionGatedBy (on by default): a non-empty annotation makes
    the workload inadmissible, with Kueue's own message; an empty one not."""
    snap = snapshot_from_text(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: q, namespace: default}\nspec: {clusterQueue: cq}\n---\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
        "metadata: {name: cq}\nspec: {namespaceSelector: {}}\n---\n"
        + workload(f"kueue.x-k8s.io/admission-gated-by: {value}")
    )
    (w,) = snap.pending
    if gated:
        assert snap.blocked_reason(w) == "Admission is gated by: ext-controller"
    else:
        assert snap.blocked_reason(w) is None


def test_odd_keys_and_values_are_errors_not_crashes() -> None:
    """YAML may give non-string keys and nested values: located errors."""
    with pytest.raises(InstanceError) as info:
        snapshot_from_text(
            CONFIG + "admissionFairSharing:\n  usageHalfLifeTime: {a: 1}\n"
            "  resourceWeights: {1: 2, cpu: [3]}\n"
            "featureGates: {AdmissionFairSharing: maybe}\n"
        )
    text = str(info.value)
    assert "admissionFairSharing.usageHalfLifeTime" in text
    assert "admissionFairSharing.resourceWeights.cpu" in text
    assert "featureGates.AdmissionFairSharing" in text


def test_reclaimable_pods_are_warned() -> None:
    """ReclaimablePods (on in Kueue) is not modelled: said once, located."""
    text = workload("a: b").replace(
        "spec:\n",
        "status: {reclaimablePods: [{name: main, count: 1}]}\nspec:\n",
    )
    snap = snapshot_from_text(text)
    (warning,) = [str(w) for w in snap.warnings if "reclaimable" in str(w)]
    assert "Workload default/w: field status.reclaimablePods" in warning
