"""Joint CP-SAT optimizer (``--solver cpsat``)."""

from placewise.solver.cpsat.model.cpmodel import CpSatParams as CpSatParams
from placewise.solver.cpsat.solve import solve_cpsat as solve_cpsat
from placewise.solver.policy import Policy as Policy

__all__ = ["CpSatParams", "Policy", "solve_cpsat"]
