"""Kueue-compatible Topology-Aware Scheduling placement (kueue-semantics §6).

:class:`TasState` holds the shared TAS capacity of a snapshot; the greedy
scheduler and the CP-SAT optimizer both place pod sets through it.
"""

from placewise.solver.kueue.tas.state import TasState as TasState
from placewise.solver.kueue.tas.tree import FlavorTree as FlavorTree
from placewise.solver.kueue.tas.types import TasPodSetRequest as TasPodSetRequest
from placewise.solver.kueue.tas.types import TasResult as TasResult
