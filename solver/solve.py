"""The one place that chooses between solvers."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.policy import Policy

if TYPE_CHECKING:
    from placewise.solver.cpsat import CpSatParams

log = logging.getLogger("placewise")

SOLVERS = (
    "auto",
    "cpsat",
    "greedy",
    "kube-default",
    "binpack-gang",
    "kai-consolidation",
    "multikueue-allatonce",
    "multikueue-incremental",
)
"""Solvers this build offers; the CLI's ``--solver`` choices come from here."""


@dataclass(frozen=True, slots=True)
class SolveParams:
    solver: str = "auto"
    """auto = the optimizer with greedy as warm start and fallback."""
    cycles: int | None = None
    """Greedy scheduling cycles to run; None runs to quiescence, as Kueue would
    converge with no arrivals and no completions."""
    time_limit: float = 10.0
    """Wall-clock budget of the optimizer (seconds)."""
    workers: int = 0
    """Optimizer search workers; 0 = every core."""
    seed: int = 0
    deterministic_time: float | None = None
    """A deterministic work budget (CP-SAT's max_deterministic_time): with a
    fixed seed and worker count the plan is reproducible."""
    policy: Policy = field(default_factory=Policy)

    @classmethod
    def of(cls, settings: object, **given: Any) -> SolveParams:
        """From any settings naming these fields (the CLI's arguments, the
        sidecar's configuration): the fields it has, then ``given``.  One
        place maps settings to a solve, so a new field reaches every caller
        that names it."""
        got = {
            f.name: getattr(settings, f.name)
            for f in fields(cls)
            if hasattr(settings, f.name)
        }
        return cls(**(got | given))

    def for_cpsat(self) -> CpSatParams:
        """The optimizer's share of these settings (same field names)."""
        from placewise.solver.cpsat import CpSatParams

        return CpSatParams(
            **{f.name: getattr(self, f.name) for f in fields(CpSatParams)}
        )


def solve(snapshot: Snapshot, params: SolveParams | None = None) -> Plan:
    """The plan of the chosen solver, every victim in it needed by its
    preemptor (:mod:`placewise.solver.settle`; the greedy and the optimizer
    settle their own)."""
    from placewise.solver.settle import settle_preemptions

    params = params or SolveParams()
    if _moves(snapshot, params):
        return _solve_with_moves(snapshot, params)
    plan = _solve(snapshot, params)
    if params.solver in ("greedy", "cpsat", "auto"):
        return plan
    return settle_preemptions(snapshot, plan)


MOVE_SHARE = 0.5
"""Share of the time limit the move search gets after the optimizer."""
MOVE_FLOOR = 0.25
"""Share of that share each of the two move searches gets at the least."""


def _moves(snapshot: Snapshot, params: SolveParams) -> bool:
    """Moves apply to the optimizer's plans on one cluster, with a budget."""
    return (
        params.solver in ("cpsat", "auto")
        and not isinstance(snapshot, MultiSnapshot)
        and params.policy.move_rules.enabled
    )


def _solve_with_moves(snapshot: Snapshot, params: SolveParams) -> Plan:
    """The optimizer's plan (tiers first, no moves), then the fewest moves
    that let the gangs it left pending in (:mod:`placewise.solver.defrag`)."""
    from placewise.solver.budget import Budget
    from placewise.solver.defrag import add_moves
    from placewise.solver.greedy import solve_greedy
    from placewise.solver.policy import primary_vector

    start = time.perf_counter()
    limit = Budget.of(params.time_limit)
    share = params.time_limit * MOVE_SHARE
    plan = _solve(snapshot, replace(params, time_limit=params.time_limit - share))
    workers, pol = max(1, params.workers), params.policy
    det = params.deterministic_time
    det = None if det is None else det * MOVE_SHARE / 2
    # Each move search gets half of what the optimizer left, and at least a
    # floor: an optimizer running over (a loaded machine) must not leave
    # the moves nothing.
    floor = share * MOVE_FLOOR

    def part(weight: float) -> Budget:
        return Budget.of(max(limit.remaining() * weight, floor))

    best = add_moves(snapshot, plan, pol, part(0.5), workers, params.seed, det)
    # Moves may open more from Kueue's plan than from the optimizer's: the
    # better of the two (tiers, then fewer moves, then less lost work), so
    # never below the optimizer's plan without moves.
    greedy = solve_greedy(snapshot)
    other = add_moves(snapshot, greedy, pol, part(1.0), workers, params.seed, det)

    def key(p: Plan) -> tuple[list[int], int, float]:
        lost = sum(m.lost_gpu_hours for m in p.moves)
        return primary_vector(snapshot, p, pol), -len(p.moves), -lost

    if other.moves and key(other) > key(best):
        name = plan.solver.name
        best = other.model_copy(
            update={"solver": other.solver.model_copy(update={"name": name})}
        )
    wall = time.perf_counter() - start
    return best.model_copy(
        update={"solver": best.solver.model_copy(update={"wall_seconds": wall})}
    )


def _solve(snapshot: Snapshot, params: SolveParams) -> Plan:
    if isinstance(snapshot, MultiSnapshot):
        if params.solver in ("kube-default", "binpack-gang", "kai-consolidation"):
            raise ValueError(f"{params.solver} knows nothing of several clusters")
        if params.solver == "greedy":  # Kueue over several clusters: the race
            params = replace(params, solver="multikueue-allatonce")
    if params.solver == "greedy":
        from placewise.solver.greedy import solve_greedy

        return solve_greedy(snapshot, params.cycles)  # Kueue: no reservations
    if params.solver.startswith("multikueue-"):
        from placewise.solver.greedy.multikueue import solve_multikueue

        assert isinstance(snapshot, MultiSnapshot), "needs --cluster"
        if params.solver.endswith("allatonce"):
            return solve_multikueue(snapshot, "allatonce")
        return solve_multikueue(snapshot, "incremental")
    if isinstance(snapshot, MultiSnapshot) and params.solver in ("cpsat", "auto"):
        from placewise.solver.multicluster import solve_dispatch

        return solve_dispatch(snapshot, params)
    if params.solver in ("cpsat", "auto"):
        from placewise.solver.cpsat import solve_cpsat

        start = time.perf_counter()
        cpsat = params.for_cpsat()
        if params.solver == "cpsat":
            return solve_cpsat(snapshot, cpsat)
        try:
            return solve_cpsat(snapshot, cpsat)
        except Exception as exc:  # auto's promise: greedy instead of a failure
            return _greedy_fallback(snapshot, exc, start, params.policy)
    if params.solver == "kube-default":
        from placewise.solver.baselines import solve_kube_default

        return solve_kube_default(snapshot, params.seed)
    if params.solver == "binpack-gang":
        from placewise.solver.baselines import solve_binpack_gang

        return solve_binpack_gang(snapshot, params.seed)
    if params.solver == "kai-consolidation":
        from placewise.solver.baselines import solve_kai_consolidation

        rules = params.policy.move_rules
        return solve_kai_consolidation(snapshot, rules, params.seed, params.time_limit)
    raise ValueError(f"unknown solver {params.solver!r}; choose from {SOLVERS}")


def _greedy_fallback(
    snapshot: Snapshot, exc: Exception, start: float, policy: Policy
) -> Plan:
    """``auto`` never fails where greedy would not: an optimizer error (a
    bug, or an input the model cannot express) costs optimality, not the plan.
    """
    from placewise.solver.cpsat.decode.plan_io import fallback
    from placewise.solver.greedy import solve_greedy

    log.warning(
        "the optimizer failed (%s: %s); returning the greedy plan",
        type(exc).__name__,
        str(exc)[:200],
    )
    greedy = solve_greedy(snapshot, policy=policy)  # what cpsat warm-starts from
    return fallback(
        greedy, time.perf_counter() - start, why=f"the optimizer failed: {exc}"
    )
