"""Kueue-compatible greedy scheduler (``--solver greedy``)."""

from placewise.solver.greedy.solver import solve_greedy as solve_greedy

__all__ = ["solve_greedy"]
