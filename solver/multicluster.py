"""The optimizer as MultiKueue's dispatcher: cluster, flavor, placement and
preemption in one model, never worse than MultiKueue's own race.

On a combined snapshot (:mod:`placewise.models.multicluster`) the copies of
a manager Workload are ordinary pending workloads of their workers, one
``exclusive`` group each, and the cluster is the top topology level: CP-SAT
decides everything jointly.  Its warm start is the better of the two
MultiKueue baselines on the priority tiers, so the plan is never worse than
either (the optimizer returns its warm start rather than anything below it).
Kueue's plain greedy over the combined snapshot is not a valid warm start:
it would admit a workload in every worker that has room.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan, PlanPending
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.greedy.multikueue import solve_multikueue
from placewise.solver.policy import primary_vector

if TYPE_CHECKING:
    from placewise.solver.solve import SolveParams

log = logging.getLogger("placewise.multicluster")
REPAIR_ROUNDS = 6


def best_baseline(snapshot: MultiSnapshot, params: SolveParams) -> Plan:
    """The better MultiKueue race on the tiers (AllAtOnce on a tie)."""
    plans = [solve_multikueue(snapshot, "allatonce")]
    if any(
        len(d.order) > snapshot.facts.step or d.nominated
        for d in snapshot.facts.dispatch.values()
    ):
        # With every worker in the first round the incremental race is the
        # same race; run it only when it can differ.
        plans.append(solve_multikueue(snapshot, "incremental"))
    return max(plans, key=lambda p: primary_vector(snapshot, p, params.policy))


def repaired(snapshot: MultiSnapshot, plan: Plan) -> list[Plan]:
    """A plan of the optimizer's model close to ``plan``, to start from.

    A race's withdrawn copies leave preemptions behind that no admitted
    workload made; the model credits every victim to an admitted preemptor,
    so such a plan is not one of its plans.  Keeping those victims running
    and taking back the admissions that relied on their room (those the
    validator then names, a few rounds at most) gives one.  It may rank
    below ``plan``; it only starts the search, ``plan`` stays the floor."""
    kept = {a.workload for a in plan.admissions}
    if all(p.preemptor in kept for p in plan.preemptions):
        return []
    for _ in range(REPAIR_ROUNDS):
        plan = plan.model_copy(
            update={
                "admissions": tuple(a for a in plan.admissions if a.workload in kept),
                "preemptions": tuple(
                    p for p in plan.preemptions if p.preemptor in kept
                ),
                "pending": plan.pending
                + tuple(
                    PlanPending(workload=a.workload, reason="taken back by the repair")
                    for a in plan.admissions
                    if a.workload not in kept
                ),
            }
        )
        bad = {v.workload for v in validate(snapshot, plan)}
        if not bad:
            return [plan]
        if not bad & kept:
            return []
        kept -= bad
    return []


def solve_dispatch(snapshot: MultiSnapshot, params: SolveParams) -> Plan:
    """``cpsat``/``auto`` on a multi-cluster instance."""
    from placewise.solver.cpsat import solve_cpsat
    from placewise.solver.cpsat.decode.plan_io import fallback

    limit = Budget.of(params.time_limit)
    warm = best_baseline(snapshot, params)
    hints = repaired(snapshot, warm)
    # The optimizer overshoots its own limit by up to its read-back; keep
    # that inside the caller's budget too.
    left = limit.less_margin().remaining()
    cpsat = replace(params.for_cpsat(), time_limit=max(left, 0.01))
    try:
        plan = solve_cpsat(snapshot, cpsat, warm=warm, hints=hints)
    except Exception as exc:
        if params.solver == "cpsat":
            raise
        log.warning(
            "the optimizer failed (%s: %s); returning the %s plan",
            type(exc).__name__,
            str(exc)[:200],
            warm.solver.name,
        )
        return fallback(warm, limit.spent())
    return plan.model_copy(
        update={
            "solver": plan.solver.model_copy(update={"wall_seconds": limit.spent()})
        }
    )
