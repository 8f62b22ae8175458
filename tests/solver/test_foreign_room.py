"""The optimizer's model keeps a victim's freed room for queues entitled to
it (solver/cpsat/model/foreign.py): the soak's plan is not a plan of the
model, while the same cluster's valid plans are."""

from __future__ import annotations

from placewise.models.validate import validate
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.problem.compile import compile_problem
from placewise.solver.solve import SolveParams, solve
from tests.models.test_validate_needed import at
from tests.models.validate_builders import plan
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
