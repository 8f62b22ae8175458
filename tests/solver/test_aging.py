"""Aging (issue 19): a pending workload's GPUs weigh more in its tier the
longer it has waited (solver/cpsat/model/aging.py), so an older, smaller
job can win a host from a younger, larger one of the same priority.

``teams.yaml``: four 8-GPU hosts, team-c owns all 32 GPUs; three hosts run
an 8-GPU job each, so one host is free.  ``team-c/old`` (6 GPUs) has waited
25 minutes (short of a reservation), ``team-c/new`` (8 GPUs) arrived now:
only one fits.  Counting GPUs now, ``new`` wins; with ``aging_minutes: 10``
``old`` counts 6 x 3 = 18 and wins, as Kueue's FIFO order would have it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.model.aging import AGING_CAP, age_factor
from placewise.solver.policy import Policy, tier_figures
from tests.models.test_validate_needed import GPU, team
from tests.models.validate_builders import load, pod_set, workload
from tests.solver.test_waiting import NOW, _running

OLD, NEW = "team-c/old", "team-c/new"


def _job(key: str, gpus: int, created: str) -> dict[str, Any]:
    return workload(key, "lq", [pod_set(requests={GPU: str(gpus)})], created=created)


def _snap() -> Any:
    runs = [_running(f"team-c/r{i}", h) for i, h in enumerate(("n1", "n2", "n3"))]
    old, new = _job(OLD, 6, "2026-01-01T00:35:00Z"), _job(NEW, 8, NOW)
    return load("teams.yaml", team("team-b", 0), team("team-c", 32), *runs, old, new)


def _admitted(pol: Policy) -> set[str]:
    snap = _snap()
    params = CpSatParams(time_limit=5.0, workers=1, deterministic_time=2.0, policy=pol)
    plan = solve_cpsat(snap, params)
    assert validate(snap, plan) == []
    # The report stays in GPUs whatever the ranking.
    gpus = {f.priority: f.gpus for f in tier_figures(snap, plan)}
    assert gpus[0] == 24 + sum(6 if a.workload == OLD else 8 for a in plan.admissions)
    return {a.workload for a in plan.admissions}


def test_the_larger_younger_job_wins_without_aging() -> None:
    assert _admitted(Policy()) == {NEW}


def test_the_older_job_wins_with_aging() -> None:
    assert _admitted(Policy(aging_minutes=10)) == {OLD}


def test_the_factor_counts_whole_periods_up_to_the_cap() -> None:
    snap = _snap()
    now = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    old, new = snap.workloads[OLD], snap.workloads[NEW]
    assert age_factor(old, now, 10) == 3  # 25 minutes: two whole periods
    assert age_factor(new, now, 10) == 1
    assert age_factor(old, now, 0) == 1  # off
    assert age_factor(old, None, 10) == 1  # no clock
    assert age_factor(old, datetime(2026, 1, 9, tzinfo=UTC), 10) == 1 + AGING_CAP


def test_the_policy_file_sets_it() -> None:
    assert Policy.from_mapping({"aging_minutes": 30}) == Policy(aging_minutes=30)
    with pytest.raises(ValueError, match="aging_minutes must be an integer"):
        Policy.from_mapping({"aging_minutes": "soon"}, "p.yaml")
