"""Entry point of the greedy: run Kueue cycles, then build the Plan."""

from __future__ import annotations

import logging
import time

from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.greedy.collector import collector_paused
from placewise.solver.greedy.scheduler import GreedyScheduler, Outcome
from placewise.solver.policy import Policy
from placewise.solver.settle import RULES as SETTLED_RULES
from placewise.solver.settle import settle_preemptions

log = logging.getLogger("placewise.greedy")


@collector_paused
def run_greedy(
    snapshot: Snapshot,
    cycles: int | None = None,
    hold_room: bool = True,
    policy: Policy | None = None,
) -> Outcome:
    """Kueue's cycles until quiescence (or ``cycles`` cycles); with a
    ``policy``, a starving workload's room is reserved (:mod:`.reserve`).
    The collector is paused from the state's build on (:mod:`.collector`).

    A plan is a final state without a timeline.  When a later cycle takes
    back an admission of the same run (Kueue requeues it), an eviction an
    earlier cycle made because that admission had its queue borrowing is
    left without a reason in the final state: the validator refuses it, and
    a replay stopped there.  The run then ends where Kueue stood before it
    took the admission back, a state Kueue passes through (evictions whose
    preemptor only the cut-off cycle admits not yet issued): the next solve
    goes on from the cluster as it then is."""
    outcome = GreedyScheduler(snapshot, hold_room, policy).run(cycles)
    first = outcome.took_back
    if first is None or first < 2:
        return outcome
    plan = outcome_to_plan(snapshot, outcome, "greedy", 0.0)
    unjustified = [
        v
        for v in validate(snapshot, plan)
        if v.rule.startswith("preemption.") and v.rule not in SETTLED_RULES
    ]
    if not unjustified:
        return outcome
    log.info(
        "greedy: cycle %d takes back an admission an earlier eviction relied "
        "on (%s); the plan is the state after cycle %d",
        first,
        unjustified[0],
        first - 1,
    )
    cut = GreedyScheduler(snapshot, hold_room, policy).run(first - 1)
    for victim, (preemptor, _) in list(cut.preempted.items()):
        if preemptor not in cut.admitted:  # admitted in the cycle cut off
            del cut.preempted[victim]
    return cut


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
