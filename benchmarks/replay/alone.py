"""Jobs that no plan admits even alone on the cluster.

A job that its queue's quota (with all it may borrow) or its topology cannot
hold on the replay's emptiest cluster (no Workloads, only the plain pods that
stay for the whole replay) never runs.  Kept, it would wait until the replay
ends, and its "delay" would measure how long the replay ran (which depends on
when the solver's last job finished), not the scheduler.  The contract leaves
such jobs out with a warning and a count, as it does a job larger than the
cluster.  Alone is the best case: other work only takes room and quota, and
preemption can at most give them back.

Kueue's greedy settles most shapes at once (it admits them alone).  For the
rest the optimizer must prove it: status OPTIMAL and a bound of 0 GPUs on the
job's tier (the only one).  A job for which neither holds is kept.  The proof runs on
one worker with a deterministic budget, so which jobs are left out depends
only on the replay's inputs, not on the machine's load.
"""

from __future__ import annotations

from collections.abc import Iterable

from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload

PROOF_WORK = 5.0
"""CP-SAT's deterministic budget for one proof (a lone job solves in well
under a second; a proof not found within it keeps the job)."""
PROOF_WALL_S = 60.0
"""Its wall-clock cap, far above what the deterministic budget takes."""

_NOT_SHAPE = {
    "name",
    "uid",
    "creation_timestamp",
    "queue_order_timestamp",
    "newest_timestamp",
    "owner_uids",
}


def shape(w: Workload) -> str:
    """What decides a lone admission: everything but the workload's identity
    and times (jobs of one shape get the same answer)."""
    return w.model_dump_json(exclude=_NOT_SHAPE)


def never_admitted(base: Snapshot, workloads: Iterable[Workload]) -> dict[str, str]:
    """Key -> why, for each workload that no plan admits alone on ``base``
    (a snapshot without Workloads); one solve per distinct shape."""
    verdicts: dict[str, str | None] = {}
    out: dict[str, str] = {}
    for w in workloads:
        key = shape(w)
        if key not in verdicts:
            verdicts[key] = _lone_verdict(base, w)
        why = verdicts[key]
        if why is not None:
            out[w.key] = why
    return out


def _lone_verdict(base: Snapshot, w: Workload) -> str | None:
    from placewise.benchmarks.replay.engine import snapshot_of
    from placewise.solver.metrics import requested_gpus
    from placewise.solver.solve import SolveParams, solve

    if requested_gpus(w) <= 0:
        return None  # the tier bound counts GPUs: no proof for CPU-only work
    snap = snapshot_of(base, {}, {w.key: w})
    greedy = solve(snap, SolveParams(solver="greedy"))
    if greedy.admissions:
        return None
    proof = solve(
        snap,
        SolveParams(
            solver="cpsat",
            time_limit=PROOF_WALL_S,
            workers=1,
            deterministic_time=PROOF_WORK,
        ),
    )
    tiers = proof.solver.tiers  # the job is the only workload: its tier alone
    if proof.admissions or proof.solver.status != "OPTIMAL" or not tiers:
        return None
    if any(t.bound != 0 for t in tiers):
        return None
    reason = next((p.reason for p in greedy.pending if p.workload == w.key), "")
    return "no plan admits it even alone on the cluster" + (
        f" ({reason})" if reason else ""
    )
