"""Moves on the final state (``tas.yaml``: 4 cpu and 4 pods per host h1..h4).

The story of every test: small job ``s1`` (2 cpu) runs on h1 and ``s2``
(2 cpu) on h2; the pending gang ``g`` wants one 4-cpu pod.  No host is free
enough for ``g`` until ``s1`` moves next to ``s2``.
"""

from __future__ import annotations

from typing import Any

from placewise.models.moves import MOVABLE_LABEL, MoveRules
from placewise.models.plan import Plan, plan_from_dict
from placewise.models.snapshot import Snapshot
from placewise.models.validate import Violation, validate
from tests.models.validate_builders import (
    admission,
    load,
    pod_set,
    psa,
    rules,
    workload,
)

RULES = MoveRules(count=1, accelerators=("nvidia.com/gpu",))


def held(key: str, host: str, cpu: int, *, label: bool = True) -> dict[str, Any]:
    obj = workload(
        key,
        "lq",
        [pod_set(requests={"cpu": str(cpu)})],
        running_in="tas-cq",
        assignments=[
            psa("main", {"cpu": "tas"}, {"cpu": str(cpu)}, 1, domains=[([host], 1)])
        ],
    )
    if label:
        obj["metadata"]["labels"] = {MOVABLE_LABEL: "true"}
    return obj


def on(key: str, host: str, cpu: int, cq: str = "tas-cq") -> dict[str, Any]:
    return admission(
        key,
        cq,
        psa("main", {"cpu": "tas"}, {"cpu": str(cpu)}, 1, domains=[([host], 1)]),
    )


def snap(s2_cpu: int = 2, label: bool = True) -> Snapshot:
    return load(
        "tas.yaml",
        held("default/s1", "h1", 2, label=label),
        held("default/s2", "h2", s2_cpu),
        workload("default/g", "lq", [pod_set(requests={"cpu": "4"})]),
        # h3 and h4 are full: only h1 or h2 can take g.
        held("default/f3", "h3", 4, label=False),
        held("default/f4", "h4", 4, label=False),
    )


def move(
    key: str = "default/s1",
    frm: tuple[str, ...] = ("h1",),
    to: tuple[str, ...] = ("h2",),
    lost: float = 0,
) -> dict[str, Any]:
    return {"workload": key, "from": list(frm), "to": list(to), "lostGpuHours": lost}


def make(
    admissions: list[dict[str, Any]],
    moves: list[dict[str, Any]],
    pending: tuple[str, ...] = (),
    preemptions: list[dict[str, str]] | None = None,
) -> Plan:
    return plan_from_dict(
        {
            "apiVersion": "placewise.io/v1alpha1",
            "kind": "Plan",
            "solver": {"name": "hand-made", "status": "FEASIBLE"},
            "admissions": admissions,
            "preemptions": preemptions or [],
            "pending": [{"workload": k, "reason": "waiting"} for k in pending],
            "moves": moves,
        }
    )


def good() -> Plan:
    return make([on("default/g", "h1", 4), on("default/s1", "h2", 2)], [move()])


def found(
    plan: Plan, s: Snapshot | None = None, r: MoveRules | None = RULES
) -> list[str]:
    violations: list[Violation] = validate(s or snap(), plan, r)
    return rules(violations)


def test_a_move_that_makes_room_passes() -> None:
    assert found(good()) == []
    assert found(good(), r=None) == []


def test_without_the_move_the_gang_does_not_fit() -> None:
    """The same admission of g with s1 left on h1 overfills h1."""
    plan = make([on("default/g", "h1", 4)], [])
    assert found(plan) == ["capacity.node"]


def test_the_final_state_holds_the_moved_workload_at_its_new_place() -> None:
    """s2 takes 3 cpu: s1 (2) does not fit beside it on h2."""
    assert found(good(), snap(s2_cpu=3)) == ["capacity.node"]


def test_a_running_workload_admitted_without_a_move_is_not_pending() -> None:
    plan = make([on("default/g", "h1", 4), on("default/s1", "h2", 2)], [])
    assert "bookkeeping.not-pending" in found(plan)


def test_a_move_of_a_pending_workload() -> None:
    plan = make([on("default/g", "h1", 4)], [move("default/g")])
    assert "moves.not-running" in found(plan)


def test_a_moved_workload_is_no_preemption() -> None:
    plan = make(
        [on("default/g", "h1", 4)],
        [move()],
        preemptions=[
            {
                "workload": "default/s1",
                "preemptor": "default/g",
                "reason": "InClusterQueue",
            }
        ],
    )
    assert "moves.preempted" in found(plan)


def test_a_move_without_its_new_admission() -> None:
    plan = make([], [move()], pending=("default/g",))
    assert found(plan) == ["moves.no-admission"]


def test_a_move_listed_twice() -> None:
    plan = make([on("default/g", "h1", 4), on("default/s1", "h2", 2)], [move(), move()])
    assert "moves.duplicate" in found(plan, r=None)


def test_a_move_stays_in_its_cluster_queue() -> None:
    plan = make(
        [on("default/g", "h1", 4), on("default/s1", "h2", 2, cq="mixed-cq")], [move()]
    )
    assert "moves.cluster-queue" in found(plan)


def test_only_a_movable_workload_moves() -> None:
    assert found(good(), snap(label=False)) == ["moves.not-movable"]
    by_queue = MoveRules(count=1, queues=("tas-cq",))
    assert found(good(), snap(label=False), by_queue) == []
    by_priority = MoveRules(count=1, priority_at_most=0)
    assert found(good(), snap(label=False), by_priority) == []


def test_from_and_to_are_the_hosts() -> None:
    plan = make(
        [on("default/g", "h1", 4), on("default/s1", "h2", 2)], [move(to=("h3",))]
    )
    assert found(plan) == ["moves.hosts"]


def test_lost_work_is_checked_under_a_policy() -> None:
    plan = make([on("default/g", "h1", 4), on("default/s1", "h2", 2)], [move(lost=1.5)])
    assert found(plan) == ["moves.lost-work"]
    assert found(plan, r=None) == []


def test_the_budget() -> None:
    assert found(good(), r=MoveRules(count=0)) == ["moves.budget"]
    assert found(good(), r=MoveRules()) == ["moves.budget"]  # no budget: no moves
    assert found(good(), r=MoveRules(lost_gpu_hours=0.0)) == []


def test_a_move_that_lets_nothing_in() -> None:
    """g stays pending, s1 moves anyway: the move bought nothing."""
    plan = make([on("default/s1", "h2", 2)], [move()], pending=("default/g",))
    assert found(plan) == ["moves.unneeded"]


def test_plans_round_trip_with_moves_and_certificates() -> None:
    plan = plan_from_dict(
        good().to_dict()
        | {
            "pending": [
                {
                    "workload": "default/x",
                    "reason": "r",
                    "blockedBy": "fragmentation",
                    "fewestMoves": 2,
                }
            ]
        }
    )
    again = plan_from_dict(plan.to_dict())
    assert again == plan
    assert again.moves[0].to_hosts == ("h2",)
    assert again.pending[0].fewest_moves == 2
    doc = make([on("default/g", "h1", 4)], []).to_dict()
    assert "moves" not in doc  # plans without moves read as before


def test_a_bad_certificate_is_a_located_error() -> None:
    import pytest

    from placewise.models.errors import InstanceError

    doc = good().to_dict()
    doc["pending"] = [{"workload": "default/x", "reason": "", "blockedBy": "luck"}]
    doc["moves"][0]["lostGpuHours"] = -1
    with pytest.raises(InstanceError) as err:
        plan_from_dict(doc, "p.yaml")
    text = str(err.value)
    assert "pending[0].blockedBy" in text and "moves[0].lostGpuHours" in text
