"""Defragmentation: moves that let blocked gangs in, with a certificate.

:func:`add_moves` runs after a solver's plan (issue 20); the move model is
:mod:`.model`, the cluster after a plan :mod:`.state`.
"""

from placewise.solver.defrag.stage import add_moves as add_moves
