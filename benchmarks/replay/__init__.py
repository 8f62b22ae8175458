"""``placewise simulate``: replay arrivals and run times through a solver.

The pure entry point is :func:`run_replay` (a serializable
:class:`ReplayConfig` in, a :class:`ReplayResult` with ``.metrics()`` out,
nothing printed), so a sweep can run many replays in worker processes.
Modules: ``trace`` (reading job traces), ``jobs`` (cluster, jobs, times),
``engine`` (the event loop), ``metrics``, ``report`` (table, JSON, CSV,
plots) and ``command`` (the CLI).
"""

from placewise.benchmarks.replay.config import ReplayConfig
from placewise.benchmarks.replay.engine import ReplayResult, run_replay

__all__ = ["ReplayConfig", "ReplayResult", "run_replay"]
