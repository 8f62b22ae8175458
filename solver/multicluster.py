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
import time
from typing import TYPE_CHECKING

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan
from placewise.solver.baselines.multikueue import solve_multikueue
from placewise.solver.policy import primary_vector

if TYPE_CHECKING:
    from placewise.solver.solve import SolveParams

log = logging.getLogger("placewise.multicluster")


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


def solve_dispatch(snapshot: MultiSnapshot, params: SolveParams) -> Plan:
    """``cpsat``/``auto`` on a multi-cluster instance."""
    from placewise.solver.cpsat import CpSatParams, solve_cpsat
    from placewise.solver.cpsat.plan_io import fallback

    start = time.perf_counter()
    warm = best_baseline(snapshot, params)
    spent = time.perf_counter() - start
    cpsat = CpSatParams(
        time_limit=max(params.time_limit - spent, 0.01),
        workers=params.workers,
        seed=params.seed,
        deterministic_time=params.deterministic_time,
        policy=params.policy,
    )
    try:
        plan = solve_cpsat(snapshot, cpsat, warm=warm)
    except Exception as exc:
        if params.solver == "cpsat":
            raise
        log.warning(
            "the optimizer failed (%s: %s); returning the %s plan",
            type(exc).__name__,
            str(exc)[:200],
            warm.solver.name,
        )
        return fallback(warm, time.perf_counter() - start)
    return plan.model_copy(
        update={
            "solver": plan.solver.model_copy(
                update={"wall_seconds": time.perf_counter() - start}
            )
        }
    )
