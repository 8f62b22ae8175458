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
    plan = _solve(snapshot, params)
    if params.solver in ("greedy", "cpsat", "auto"):
        return plan
    return settle_preemptions(snapshot, plan)


def _solve(snapshot: Snapshot, params: SolveParams) -> Plan:
    if isinstance(snapshot, MultiSnapshot):
        if params.solver in ("kube-default", "binpack-gang"):
            raise ValueError(f"{params.solver} knows nothing of several clusters")
        if params.solver == "greedy":  # Kueue over several clusters: the race
            params = replace(params, solver="multikueue-allatonce")
    if params.solver == "greedy":
        from placewise.solver.greedy import solve_greedy

        return solve_greedy(snapshot, params.cycles)
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
            return _greedy_fallback(snapshot, exc, start)
    if params.solver == "kube-default":
        from placewise.solver.baselines import solve_kube_default

        return solve_kube_default(snapshot, params.seed)
    if params.solver == "binpack-gang":
        from placewise.solver.baselines import solve_binpack_gang

        return solve_binpack_gang(snapshot, params.seed)
    raise ValueError(f"unknown solver {params.solver!r}; choose from {SOLVERS}")


def _greedy_fallback(snapshot: Snapshot, exc: Exception, start: float) -> Plan:
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
    greedy = solve_greedy(snapshot)  # what cpsat warm-starts from
    return fallback(
        greedy, time.perf_counter() - start, why=f"the optimizer failed: {exc}"
    )
