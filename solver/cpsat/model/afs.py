"""Admission fair sharing as a tie-break of the optimizer.

Kueue's AFS (``solver/kueue/afs.py``) decides which LocalQueue a
usage-based ClusterQueue serves first: the one with the lowest usage over
weight.  The optimizer has no queue order to bend, so it states the same
preference as a criterion after the priority tiers: among plans that admit
as much of every tier, admit the GPUs of lower-usage LocalQueues.  Each
pending workload of such a ClusterQueue costs its GPUs (1 per pod without
any, so CPU-only work is ordered too) times the rank of its
LocalQueue's usage among that ClusterQueue's LocalQueues with pending work
(0 for the lowest, equal usages share a rank, a zero-weight queue last), so
the coefficients stay small integers whatever the usages' magnitudes.

Ranks, not usages: the order is what Kueue acts on (its heads), and a rank
keeps the stage's range (Σ GPUs x ranks) small enough to pack with the other
tie-breaks.  Running victims are not ranked (Kueue's AFS orders heads only;
preemption stays the tie-breaks' concern).  Without a usage-based
ClusterQueue the criterion is empty and the model is exactly as before.
"""

from __future__ import annotations

from ortools.sat.python import cp_model

from placewise.solver.cpsat.model.variables import Variables
from placewise.solver.policy import Policy, accelerators
from placewise.solver.problem.data import ModelData
from placewise.solver.reservation import afs_ranks


def lq_ranks(data: ModelData) -> dict[int, int]:
    """Rank of each pending workload's LocalQueue (by workload index) within
    its usage-based ClusterQueue; workloads of other queues are left out.
    The ranking is the reservation's (one home: a starving workload is
    picked in the same AFS order, :func:`placewise.solver.reservation.afs_ranks`)."""
    ranks = afs_ranks(data.snapshot, [wd.info.obj for wd in data.workloads])
    return {wd.idx: ranks[wd.info.key] for wd in data.workloads if wd.info.key in ranks}


AfsTerm = tuple[int, cp_model.IntVar, int]
"""(coefficient, variable, the variable's upper bound), for ``Criterion.add``."""


def afs_terms(data: ModelData, v: Variables, policy: Policy) -> list[AfsTerm]:
    """The criterion ``-Σ admitted GPUs x LocalQueue rank`` (see the module);
    terms rather than a ``Criterion`` so that this module does not import the
    objective that calls it."""
    out: list[AfsTerm] = []
    ranks = lq_ranks(data)
    if not any(ranks.values()):
        return out  # one LocalQueue per queue, or all equal: nothing to prefer
    for pd in data.pod_sets:
        rank = ranks.get(pd.wl, 0)
        acc = max(1, accelerators(pd.ps.requests, policy))  # CPU-only pods: 1
        if rank == 0:
            continue
        if pd.min_count < pd.count:
            n = v.pod_sets[pd.idx].n
            out.append((-rank * acc, n, pd.count))  # type: ignore[arg-type]
        else:
            out.append((-rank * acc * pd.count, v.workloads[pd.wl].admit, 1))
    return out
