"""Who has waited (issue 19): among plans as good on every tier, the optimizer
admits the jobs that waited longest, as Kueue's FIFO order would.

``teams.yaml``: four 8-GPU hosts, team-c owns all 32 GPUs; three hosts run
an 8-GPU job each, so one 8-GPU job fits.  ``team-c/old`` has waited 20
minutes (short of a reservation), ``team-c/new`` arrived now; both ask for
the same, so the tiers are indifferent between them.  The warm start given
to the search admits ``new`` (what an earlier solve or another plan might
have decided): without the waiting criterion nothing moves the search off
it, with it the search admits ``old``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.model.objective import wait_weight
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy
from tests.models.test_validate_needed import GPU, team
from tests.models.validate_builders import load, pod_set, psa, workload

NOW = "2026-01-01T01:00:00Z"
OLD, NEW = "team-c/old", "team-c/new"


def _running(key: str, host: str) -> dict[str, Any]:
    on = psa("main", {GPU: "h100"}, {GPU: "8"}, 1, domains=[([host], 1)])
    return workload(
        key,
        "lq",
        [pod_set(requests={GPU: "8"})],
        created="2025-12-31T22:00:00Z",
        running_in="team-c",
        assignments=[on],
    )


def _job(key: str, created: str) -> dict[str, Any]:
    return workload(key, "lq", [pod_set(requests={GPU: "8"})], created=created)


def _cluster(*jobs: dict[str, Any]) -> Snapshot:
    runs = [_running(f"team-c/r{i}", h) for i, h in enumerate(("n1", "n2", "n3"))]
    return load("teams.yaml", team("team-b", 0), team("team-c", 32), *runs, *jobs)


def _solve(snap: Snapshot, pol: Policy, warm: Plan) -> set[str]:
    params = CpSatParams(
        time_limit=5.0, workers=1, seed=0, deterministic_time=2.0, policy=pol
    )
    plan = solve_cpsat(snap, params, warm=warm)
    assert validate(snap, plan) == []
    return {a.workload for a in plan.admissions}


def _admitting_new(snap: Snapshot) -> Plan:
    """Kueue's plan (``old`` on the free host) with the two jobs swapped."""
    kueue = solve_greedy(snap)
    (a,) = kueue.admissions
    assert a.workload == OLD
    assert NEW in {p.workload for p in kueue.pending}
    plan = kueue.model_copy(
        update={
            "admissions": (a.model_copy(update={"workload": NEW}),),
            "pending": tuple(
                p.model_copy(update={"workload": OLD}) if p.workload == NEW else p
                for p in kueue.pending
            ),
        }
    )
    assert validate(snap, plan) == []
    return plan


@pytest.mark.parametrize("objective", ["tiers", "gpus"])
def test_the_older_of_two_equal_jobs_is_admitted(objective: str) -> None:
    old, new = _job(OLD, "2026-01-01T00:40:00Z"), _job(NEW, NOW)
    snap = _cluster(old, new)
    warm = _admitting_new(snap)
    without = Policy(objective=objective, waiting=False)  # type: ignore[arg-type]
    assert _solve(snap, without, warm) == {NEW}  # the tiers are indifferent
    pol = Policy(objective=objective)  # type: ignore[arg-type]
    assert _solve(snap, pol, warm) == {OLD}


def test_wait_weight_grows_by_log_buckets() -> None:
    snap = _cluster(_job(OLD, "2026-01-01T00:40:00Z"), _job(NEW, NOW))
    now = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)
    got = {k: wait_weight(snap.workloads[k], now) for k in (OLD, NEW)}
    assert got == {OLD: 5, NEW: 1}  # 20 minutes: 1 + floor(log2(21))
    assert wait_weight(snap.workloads[OLD], None) == 1  # no clock: a job counts 1


def test_the_policy_file_switches_it() -> None:
    assert Policy.from_mapping({"waiting": False}) == Policy(waiting=False)
    with pytest.raises(ValueError, match="waiting must be true or false"):
        Policy.from_mapping({"waiting": "no"}, "p.yaml")
