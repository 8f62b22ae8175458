"""The one place that chooses between solvers."""

from __future__ import annotations

from dataclasses import dataclass

from models.plan import Plan
from models.snapshot import Snapshot

SOLVERS = ("greedy",)
"""Solvers this build offers; the CLI's ``--solver`` choices come from here."""


@dataclass(frozen=True, slots=True)
class SolveParams:
    solver: str = "greedy"
    """Which solver decides."""
    cycles: int | None = None
    """Greedy scheduling cycles to run; None runs to quiescence, as Kueue would
    converge with no arrivals and no completions."""


def solve(snapshot: Snapshot, params: SolveParams | None = None) -> Plan:
    params = params or SolveParams()
    if params.solver == "greedy":
        from solver.greedy import solve_greedy

        return solve_greedy(snapshot, params.cycles)
    raise ValueError(f"unknown solver {params.solver!r}; choose from {SOLVERS}")
