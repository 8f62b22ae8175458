"""The soak's own arithmetic: its RSS slope and its overcommit check must be
right, or an hour of soak proves nothing."""

from __future__ import annotations

import copy

import pytest

from placewise.benchmarks.serve_soak import (
    cluster_and_templates,
    overcommits,
    slope,
)
from tests.adapters.serve.kueue_e2e import generated


def test_slope_is_least_squares_mib_per_minute() -> None:
    assert slope([(0.0, 100.0), (1.0, 100.5), (2.0, 101.0)]) == pytest.approx(0.5)
    assert slope([(0.0, 1.0), (1.0, 3.0), (2.0, 2.0)]) == pytest.approx(0.5)
    assert slope([(5.0, 7.0)]) == 0.0


def test_overcommit_found_only_when_the_admitted_set_overflows() -> None:
    """The generated instance's running Workloads fit; the same admission
    copied many times over overflows quota and hosts, and is reported."""
    objects = generated(16, 4, 3)
    cluster, _ = cluster_and_templates(16, 3)
    running = [
        o
        for o in objects
        if o["kind"] == "Workload" and (o.get("status") or {}).get("admission")
    ]
    assert running
    assert overcommits(cluster, running) == []
    copies = []
    for i in range(40):
        dup = copy.deepcopy(running[0])
        dup["metadata"] = {**dup["metadata"], "name": f"dup-{i}", "uid": f"u-{i}"}
        copies.append(dup)
    broken = overcommits(cluster, running + copies)
    assert broken
    assert all(v.split(".")[0] in ("quota", "capacity", "topology") for v in broken)
