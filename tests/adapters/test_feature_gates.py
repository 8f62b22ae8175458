"""Kueue feature gates read from the Configuration's ``featureGates``
(adapters/io/convert/gates.py, the one place that reads them)."""

from __future__ import annotations

import pytest

from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.errors import InstanceError

CONFIG = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def test_tas_balanced_placement_is_off_by_default() -> None:
    assert not snapshot_from_text(CONFIG).fair_sharing.gates.tas_balanced_placement
    assert not snapshot_from_text("").fair_sharing.gates.tas_balanced_placement


def test_tas_balanced_placement_is_read_and_not_warned_about() -> None:
    snap = snapshot_from_text(
        CONFIG + "featureGates: {TASBalancedPlacement: true, PriorityBoost: true}\n"
    )
    assert snap.fair_sharing.gates.tas_balanced_placement
    warnings = " ".join(str(w) for w in snap.warnings)
    assert "featureGates.PriorityBoost" in warnings
    assert "featureGates.TASBalancedPlacement" not in warnings


def test_a_gate_that_is_not_a_boolean_is_a_located_error() -> None:
    with pytest.raises(InstanceError, match=r"featureGates\.TASBalancedPlacement"):
        snapshot_from_text(CONFIG + "featureGates: {TASBalancedPlacement: maybe}\n")


def test_a_bad_gate_section_is_one_error() -> None:
    with pytest.raises(InstanceError) as info:
        snapshot_from_text(CONFIG + "featureGates: [TASBalancedPlacement]\n")
    assert str(info.value).count("featureGates") == 1
