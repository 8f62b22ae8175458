"""Kueue's own Configuration and ``spec.fairSharing.weight`` in instances:
decoded as Kueue reads them, bad ones a located error (exit 2)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from placewise.adapters.io.loader import snapshot_from_text
from placewise.cli import main
from placewise.models.cluster import DEFAULT_STRATEGIES
from placewise.models.errors import InstanceError

MALFORMED = Path(__file__).resolve().parents[1] / "data" / "malformed"

BAD = {
    "fair-weight-negative.yaml": [
        ":1: Cohort research: field spec.fairSharing.weight",
        "must not be negative",
    ],
    "fair-weight-not-quantity.yaml": [
        "ClusterQueue team-a: field spec.fairSharing.weight",
        "not a quantity",
    ],
    "fair-strategy-unknown.yaml": [
        "Configuration: field fairSharing.preemptionStrategies[1]",
        "unknown preemption strategy 'MostFair'",
    ],
    "kueue-config-twice.yaml": [
        ":5: Configuration: field kind",
        "a second Kueue Configuration",
    ],
    "afs-half-life-not-duration.yaml": [
        ":1: Configuration: field admissionFairSharing.usageHalfLifeTime",
        "'ten seconds' is not a duration",
    ],
    "afs-lq-weight-negative.yaml": [
        ":1: LocalQueue team-a/main: field spec.fairSharing.weight",
        "must not be negative",
    ],
    "afs-admission-mode-unknown.yaml": [
        ":1: ClusterQueue team-a: field spec.admissionScope.admissionMode",
        "'UsageBased' is not one of UsageBasedAdmissionFairSharing",
    ],
    "afs-consumed-not-quantity.yaml": [
        ":1: LocalQueue team-a/main: field status.fairSharing."
        "admissionFairSharingStatus.consumedResources.cpu",
        "'lots' is not a valid quantity",
    ],
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_fair_sharing_input_is_a_located_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.yaml"
    code = main(["solve", str(MALFORMED / name), "--solver", "greedy", "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert not out.exists()
    assert "Traceback" not in err
    assert str(MALFORMED / name) in err
    for fragment in BAD[name]:
        assert fragment in err, err


CONFIG = "apiVersion: config.kueue.x-k8s.io/{version}\nkind: Configuration\n"


def test_no_configuration_means_fair_sharing_off() -> None:
    assert not snapshot_from_text("").fair_sharing.enable


@pytest.mark.parametrize(
    ("body", "enabled", "strategies"),
    [
        ("fairSharing: {enable: true}", True, DEFAULT_STRATEGIES),
        ("fairSharing: {enable: false}", False, DEFAULT_STRATEGIES),
        (
            "fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}",
            True,
            ("LessThanInitialShare",),
        ),
        ("namespace: kueue-system", False, DEFAULT_STRATEGIES),
    ],
)
def test_v1beta1_configuration(
    body: str, enabled: bool, strategies: tuple[str, ...]
) -> None:
    """v1beta1 switches fair sharing with ``enable``; an unset list is
    Kueue's default [LessThanOrEqualToFinalShare, LessThanInitialShare]."""
    snap = snapshot_from_text(CONFIG.format(version="v1beta1") + body)
    assert snap.fair_sharing.enable is enabled
    assert snap.fair_sharing.preemption_strategies == strategies


def test_v1beta2_configuration_is_on_when_present() -> None:
    text = CONFIG.format(version="v1beta2") + "fairSharing: {}\n"
    assert snapshot_from_text(text).fair_sharing.enable


def test_other_fields_are_ignored_with_one_warning() -> None:
    text = CONFIG.format(version="v1beta1") + (
        "namespace: kueue-system\nhealth: {healthProbeBindAddress: ':8081'}\n"
        "fairSharing: {enable: true, other: 1}\n"
    )
    snap = snapshot_from_text(text)
    warnings = [str(w) for w in snap.warnings if "Configuration" in str(w)]
    assert len(warnings) == 1
    assert "health, namespace, fairSharing.other" in warnings[0]


def test_strategy_lists_kueue_refuses() -> None:
    """Kueue accepts only three lists; the reverse order is refused too."""
    text = CONFIG.format(version="v1beta1") + (
        "fairSharing: {enable: true, preemptionStrategies: "
        "[LessThanInitialShare, LessThanOrEqualToFinalShare]}\n"
    )
    with pytest.raises(InstanceError) as info:
        snapshot_from_text(text)
    assert "field fairSharing.preemptionStrategies" in str(info.value)
    assert "not a list Kueue supports" in str(info.value)


@pytest.mark.parametrize(
    ("weight", "expected"),
    [
        (None, Fraction(1)),
        ("'0'", Fraction(0)),
        ("'1.01'", Fraction(101, 100)),
        ("500m", Fraction(1, 2)),
        ("2", Fraction(2)),
    ],
)
def test_weight_is_an_exact_quantity(weight: str | None, expected: Fraction) -> None:
    fair = f"  fairSharing: {{weight: {weight}}}\n" if weight else ""
    text = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
        "metadata: {name: q}\nspec:\n  cohortName: co\n" + fair + "---\n"
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\n"
        "metadata: {name: co}\nspec:\n" + (fair or "  {}\n")
    )
    snap = snapshot_from_text(text)
    assert snap.cluster_queues["q"].fair_weight == expected
    assert snap.cohorts["co"].fair_weight == expected


def test_tiny_non_zero_weight_is_refused() -> None:
    """Kueue's API: a non-zero weight must be greater than 10^-9."""
    text = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: co}\n"
        "spec: {fairSharing: {weight: 1n}}\n"
    )
    with pytest.raises(InstanceError, match="greater than 10\\^-9"):
        snapshot_from_text(text)
