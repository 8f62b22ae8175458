"""Entry point of the greedy: run Kueue cycles, then build the Plan."""

from __future__ import annotations

import time

from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.snapshot import Snapshot
from placewise.solver.greedy.collector import collector_paused
from placewise.solver.greedy.scheduler import GreedyScheduler, Outcome
from placewise.solver.policy import Policy
from placewise.solver.settle import settle_preemptions


@collector_paused
def run_greedy(
    snapshot: Snapshot,
    cycles: int | None = None,
    hold_room: bool = True,
    policy: Policy | None = None,
) -> Outcome:
    """Kueue's cycles until quiescence (or ``cycles`` cycles); with a
    ``policy``, a starving workload's room is reserved (:mod:`.reserve`).
    The collector is paused from the state's build on (:mod:`.collector`)."""
    return GreedyScheduler(snapshot, hold_room, policy).run(cycles)


def outcome_to_plan(
    snapshot: Snapshot, outcome: Outcome, name: str, wall: float
) -> Plan:
    admissions = tuple(
        PlanAdmission(
            workload=key,
            cluster_queue=cq,
            pod_set_assignments=psas,
            replaces=outcome.replaced.get(key),
        )
        for key, (cq, psas) in sorted(outcome.admitted.items())
    )
    preemptions = tuple(
        PlanPreemption(workload=victim, preemptor=preemptor, reason=reason)
        for victim, (preemptor, reason) in sorted(outcome.preempted.items())
    )
    pending = tuple(
        PlanPending(workload=w.key, reason=outcome.reasons.get(w.key, "pending"))
        for w in snapshot.pending
        if w.key not in outcome.admitted
    )
    return Plan(
        solver=SolverInfo(name=name, status="FEASIBLE", wall_seconds=wall),
        admissions=admissions,
        preemptions=preemptions,
        pending=pending,
    )


def solve_greedy(
    snapshot: Snapshot, cycles: int | None = None, policy: Policy | None = None
) -> Plan:
    """Kueue's plan, every victim in it needed by its preemptor (the room a
    run's cycles still hand elsewhere is settled, :mod:`..settle`); a
    ``policy`` adds its reservation for a starving workload."""
    start = time.perf_counter()
    outcome = run_greedy(snapshot, cycles, policy=policy)
    plan = outcome_to_plan(snapshot, outcome, "greedy", 0.0)
    plan = settle_preemptions(snapshot, plan)
    wall = time.perf_counter() - start
    return plan.model_copy(
        update={"solver": plan.solver.model_copy(update={"wall_seconds": wall})}
    )
