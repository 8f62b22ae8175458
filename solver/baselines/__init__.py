"""Baseline schedulers the optimizer is benchmarked against.

Each is a real policy that produces a validated Plan from a Snapshot:
``kube-default`` (Kueue quota admission, then kube-scheduler's default
pod-by-pod scoring, no gangs) and ``binpack-gang`` (gang all-or-nothing
with best-fit binpacking, the Volcano style); ``kai-consolidation``
(binpack-gang plus KAI-Scheduler's consolidation: moves within a budget,
:mod:`.kai_consolidation`) runs through ``solve`` only, since it needs the
move policy.  The Kueue-compatible greedy
(``placewise.solver.greedy``) is the third baseline and lives on its own.
"""

from placewise.solver.baselines.binpack_gang import (
    BinpackGangScheduler as BinpackGangScheduler,
)
from placewise.solver.baselines.binpack_gang import run_binpack_gang as run_binpack_gang
from placewise.solver.baselines.binpack_gang import (
    solve_binpack_gang as solve_binpack_gang,
)
from placewise.solver.baselines.kai_consolidation import (
    solve_kai_consolidation as solve_kai_consolidation,
)
from placewise.solver.baselines.kube_default import (
    KubeDefaultScheduler as KubeDefaultScheduler,
)
from placewise.solver.baselines.kube_default import run_kube_default as run_kube_default
from placewise.solver.baselines.kube_default import (
    solve_kube_default as solve_kube_default,
)
from placewise.solver.baselines.records import BaselineOutcome as BaselineOutcome
from placewise.solver.baselines.records import PartialGang as PartialGang

BASELINES = ("kube-default", "binpack-gang")
"""Names as ``SolverInfo.name`` and ``--solver`` spell them."""


def run_baseline(name: str, snapshot: object, seed: int = 0) -> BaselineOutcome:
    """Dispatch by name (``kube-default`` or ``binpack-gang``)."""
    from placewise.models.snapshot import Snapshot

    assert isinstance(snapshot, Snapshot)
    if name == "kube-default":
        return run_kube_default(snapshot, seed)
    if name == "binpack-gang":
        return run_binpack_gang(snapshot, seed)
    raise ValueError(f"unknown baseline {name!r}; choose from {BASELINES}")
