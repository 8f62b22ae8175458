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
from ortools.sat.python import cp_model

from placewise.models.plan import Plan
from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.model.aging import (
    AGING_CAP,
    age_factor,
    below_kueue,
    hold_tiers,
)
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy, tier_figures
from placewise.solver.problem.compile import compile_problem
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


def test_aging_never_runs_fewer_gpus_than_kueues_plan() -> None:
    """Held at a plan that admits the younger 8-GPU job (as Kueue would if
    it had come first), the aged model keeps its 8 GPUs: aging chooses
    only among plans as good as Kueue's, tier by tier."""
    snap = _snap()
    pol = Policy(aging_minutes=10)
    kueue = solve_greedy(snap)
    assert {a.workload for a in kueue.admissions} == {OLD}
    swapped = _swapped(kueue)
    assert below_kueue(snap, kueue, swapped, pol)
    assert not below_kueue(snap, swapped, kueue, pol)
    assert not below_kueue(snap, kueue, swapped, Policy())  # aging off
    model = CPModel(
        compile_problem(snap),
        CpSatParams(workers=1, deterministic_time=2.0, policy=pol),
    )
    hold_tiers(model.model, model.stages, snap, swapped, pol)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    stage = next(st for st in model.stages if st.tier == 0)
    model.model.maximize(sum(c * x for c, x in stage.terms))
    assert solver.solve(model.model) == cp_model.OPTIMAL
    values = {x.index: solver.value(x) for _c, x in stage.gpus}
    assert sum(c * values[x.index] for c, x in stage.gpus) == 8


def _swapped(plan: Plan) -> Plan:
    """``plan`` with ``new`` admitted in ``old``'s place."""
    (a,) = plan.admissions
    pod = a.pod_set_assignments[0]
    usage = {**pod.resource_usage, GPU: 8}
    psa_new = pod.model_copy(update={"resource_usage": usage})
    return plan.model_copy(
        update={
            "admissions": (
                a.model_copy(
                    update={"workload": NEW, "pod_set_assignments": (psa_new,)}
                ),
            )
        }
    )


def _three(a_created: str, bc_created: str) -> Any:
    """8 GPUs free; ``a`` wants all 8, ``b`` and ``c`` 3 each."""
    runs = [_running(f"team-c/r{i}", h) for i, h in enumerate(("n1", "n2", "n3"))]
    jobs = [
        _job("team-c/a", 8, a_created),
        _job("team-c/b", 3, bc_created),
        _job("team-c/c", 3, bc_created),
    ]
    return load("teams.yaml", team("team-b", 0), team("team-c", 32), *runs, *jobs)


def _solved(snap: Any, pol: Policy) -> set[str]:
    params = CpSatParams(time_limit=5.0, workers=1, deterministic_time=2.0, policy=pol)
    plan = solve_cpsat(snap, params)
    assert validate(snap, plan) == []
    return {a.workload for a in plan.admissions}


def test_job_gpus_start_more_jobs_where_kueue_runs_no_more_gpus() -> None:
    """Kueue takes the older ``b`` and ``c`` (6 GPUs); "GPUs now" the
    younger ``a`` (8); at 4 GPUs a job the two jobs outweigh it."""
    snap = _three(NOW, "2026-01-01T00:35:00Z")
    kueue = {a.workload for a in solve_greedy(snap).admissions}
    assert kueue == {"team-c/b", "team-c/c"}
    assert _solved(snap, Policy()) == {"team-c/a"}
    assert _solved(snap, Policy(job_gpus=4)) == {"team-c/b", "team-c/c"}


def test_job_gpus_never_run_fewer_gpus_than_kueue() -> None:
    """With ``a`` the older, Kueue runs its 8 GPUs: the tier is held there,
    so the count of jobs does not trade them for 6."""
    snap = _three("2026-01-01T00:35:00Z", NOW)
    assert {a.workload for a in solve_greedy(snap).admissions} == {"team-c/a"}
    assert _solved(snap, Policy(job_gpus=4)) == {"team-c/a"}
