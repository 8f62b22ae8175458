"""The optimizer's model keeps a victim's freed room for queues entitled to
it (solver/cpsat/model/foreign.py): the soak's plan is not a plan of the
model, while the same cluster's valid plans are."""

from __future__ import annotations

import pytest

from placewise.models.validate import validate
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.problem.compile import compile_problem
from placewise.solver.solve import SolveParams, solve
from tests.models.test_validate_needed import at, held, job, team
from tests.models.validate_builders import load, plan
from tests.solver.test_settle import soak, two_gangs


def test_the_soak_plan_is_not_a_plan_of_the_model() -> None:
    """team-b's in-queue eviction frees n1; team-c may not preempt team-b's
    victim, so its gang may not take that room.  The validator rejects the
    plan, and so must the model (before this family it accepted it, and the
    settling pass had to undo the search's plans)."""
    snap, bad = soak()
    assert {v.rule for v in validate(snap, bad)} >= {"preemption.room-elsewhere"}
    model = CPModel(compile_problem(snap), CpSatParams(workers=1))
    room = model.cons.placement.foreign
    assert room.units and room.assign, "the family was not built"
    assert model.hint(bad) is None
    # The victim's own queue may take its room: that plan is the model's.
    own = plan(
        [at("team-b/small", 1, "n1"), at("team-c/big", 8, "n2")],
        preemptions=[("team-b/victim", "team-b/small", "InClusterQueue")],
    )
    assert model.hint(own) is not None


def test_a_gang_of_another_queue_goes_to_the_free_host() -> None:
    """Two 8-GPU gangs, one free host and an in-queue victim: the optimizer
    admits both, the victim's node to its own queue's gang, and its search
    result needs no settling (validates as it comes out of the model)."""
    snap = two_gangs()
    model = CPModel(compile_problem(snap), CpSatParams(workers=1))
    crossed = plan(
        [at("team-b/hi", 8, "n2"), at("team-c/big", 8, "n1")],
        preemptions=[("team-b/victim", "team-b/hi", "InClusterQueue")],
    )
    assert model.hint(crossed) is None
    p = solve(snap, SolveParams(solver="cpsat", workers=1, deterministic_time=5))
    assert validate(snap, p) == []
    assert sorted(a.workload for a in p.admissions) == ["team-b/hi", "team-c/big"]


def _third_team(reclaim: str = "Any") -> list[dict[str, object]]:
    """team-a (4 GPUs of quota) beside team-b (12) and team-c (16), both
    reclaimWithinCohort Any, borrowWithinCohort Never: 32 GPUs on four
    8-GPU hosts, one cohort."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"namespace": "team-a", "name": "lq"},
            "spec": {"clusterQueue": "team-a"},
        },
        team("team-a", 4),
        team("team-b", 12, reclaimWithinCohort=reclaim),
        team("team-c", 16, reclaimWithinCohort="Any"),
    ]


@pytest.mark.parametrize("reclaim", ["Any", "Never"])
def test_an_entitled_queue_does_not_lend_its_waiver_to_another(reclaim: str) -> None:
    """team-c may reclaim team-a's borrowing victim on n1; team-b may not,
    as its gang would end borrowing (16 of 12).  A plan that evicts the
    victim "for" team-c's 1-GPU job on n2 and puts team-b's gang on n1
    breaks ``room-elsewhere``.  The victim's row once waived team-c's whole
    possible use of n1 in one sum, and team-b's gang fitted in the slack
    team-c left unused (the Helios replay's refusals: settling withdrew
    such gangs, and the solve fell back to Kueue's plan)."""
    snap = load(
        "teams.yaml",
        *_third_team(reclaim),
        held("team-a/victim", 8, "n1"),
        held("team-b/held", 8, "n3"),
        held("team-c/held", 8, "n4"),
        job("team-c/rec", 1, priority=100),
        job("team-b/big", 8),
    )
    bad = plan(
        [at("team-c/rec", 1, "n2"), at("team-b/big", 8, "n1")],
        preemptions=[("team-a/victim", "team-c/rec", "InCohortReclamation")],
    )
    assert "preemption.room-elsewhere" in {v.rule for v in validate(snap, bad)}
    model = CPModel(compile_problem(snap), CpSatParams(workers=1))
    assert model.cons.placement.foreign.units, "the family was not built"
    assert model.hint(bad) is None
    # The entitled queue may still take the room it is entitled to.
    fine = plan(
        [at("team-c/rec", 1, "n1"), at("team-b/big", 8, "n2")],
        preemptions=[("team-a/victim", "team-c/rec", "InCohortReclamation")],
    )
    assert "preemption.room-elsewhere" not in {v.rule for v in validate(snap, fine)}
    assert model.hint(fine) is not None
