"""Joint CP-SAT optimizer (``--solver cpsat``)."""

from solver.cpsat.model import CpSatParams as CpSatParams
from solver.cpsat.objective import Policy as Policy
from solver.cpsat.solve import solve_cpsat as solve_cpsat

__all__ = ["CpSatParams", "Policy", "solve_cpsat"]
