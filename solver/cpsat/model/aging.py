"""Aging: a pending workload's GPUs count more in its tier the longer it waited.

Each solve of a live admitter maximises the GPUs running *now*, tier by
tier.  Replayed over hours that starves mid-sized gangs: whenever a freed
block of 128 GPUs could take one 128-GPU gang or a 64- and a 48-GPU gang
queued for hours, 128 wins, solve after solve, until no 128-GPU gang is
left (benchmarks/README, "aging": `default` seed 2, the medium gangs waited
through the whole serial chain of large ones; Kueue's FIFO order let them
in).  Kueue orders by wait and fills what fits; the optimizer keeps its
packing and lets the wait weigh: with ``aging_minutes`` = τ, a workload
queued for m minutes counts its GPUs ``1 + min(AGING_CAP, m // τ)`` times
in its tier's stage.  The reported tiers stay GPUs; only the choice among
plans moves.

Aged alone, a tier could end below Kueue's GPUs where Kueue admitted the
younger, larger work, and the optimizer promises never to run fewer GPUs
than the greedy: :func:`hold_tiers` keeps each aged tier at Kueue's
GPUs, and the acceptance refuses a plan :func:`below_kueue`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from ortools.sat.python import cp_model

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.timing import aware
from placewise.models.workload import Workload
from placewise.solver.cpsat.model.variables import Variables
from placewise.solver.policy import Policy, accelerators, primary_vector, tier_figures
from placewise.solver.problem.data import ModelData

if TYPE_CHECKING:
    from placewise.solver.cpsat.model.objective import Stage

AGING_CAP = 8
"""Most extra multiples of a workload's GPUs its wait earns: beyond it an
old job no longer outweighs any amount of younger work."""


def minutes_waited(w: Workload, now: datetime | None) -> int | None:
    """Whole minutes since the queue order time (Kueue's: the creation time,
    also after a preemption; an eviction for a PodsReady timeout or an
    admission check restarts it); None without a clock."""
    since = aware(w.queue_order_timestamp) if now is not None else None
    if now is None or since is None:
        return None
    return max(0, int((now - since).total_seconds()) // 60)


def age_factor(w: Workload, now: datetime | None, tau: int) -> int:
    """``1 + min(AGING_CAP, minutes waited // tau)``; 1 without a clock or
    with aging off."""
    minutes = minutes_waited(w, now)
    if minutes is None or tau <= 0:
        return 1
    return 1 + min(AGING_CAP, minutes // tau)


def aged_terms(
    data: ModelData, v: Variables, pol: Policy, tier: int
) -> list[tuple[int, cp_model.IntVar, int]]:
    """(coefficient, variable, its upper bound): the extra GPU value of the
    tier's pending pod sets, beyond the GPUs the tier already counts."""
    out: list[tuple[int, cp_model.IntVar, int]] = []
    if not pol.weighs_jobs:
        return out
    if pol.job_gpus > 0:
        for wd in data.workloads:
            if wd.info.priority == tier:
                out.append((pol.job_gpus, v.workloads[wd.idx].admit, 1))
        for vd, x in zip(data.victims, v.victims, strict=True):
            if vd.info.priority == tier:  # an evicted job waits again
                out.append((-pol.job_gpus, x, 1))
    if pol.aging_minutes <= 0:
        return out
    now = data.snapshot.now
    for pd in data.pod_sets:
        wd = data.workloads[pd.wl]
        if wd.info.priority != tier:
            continue
        extra = age_factor(wd.info.obj, now, pol.aging_minutes) - 1
        acc = accelerators(pd.ps.requests, pol) * extra
        if acc <= 0:
            continue
        if pd.min_count < pd.count:
            out.append((acc, v.pod_sets[pd.idx].n, pd.count))  # type: ignore[arg-type]
        else:
            out.append((acc * pd.count, v.workloads[pd.wl].admit, 1))
    return out


def aged_value(snapshot: Snapshot, plan: Plan, tier: int, pol: Policy) -> int:
    """The same extra for a plan's admissions (the acceptance ranks plans
    as the model does)."""
    if not pol.weighs_jobs:
        return 0
    total = 0
    for a in plan.admissions:
        w = snapshot.workloads[a.workload]
        if w.priority != tier or w.is_running:
            continue  # a move is no new start
        total += pol.job_gpus
        extra = age_factor(w, snapshot.now, pol.aging_minutes) - 1
        if extra <= 0:
            continue
        spec = {ps.name: ps for ps in w.pod_sets}
        for psa in a.pod_set_assignments:
            ps = spec.get(psa.name)
            if ps is not None:
                total += accelerators(ps.requests, pol) * psa.count * extra
    for p in plan.preemptions:
        if snapshot.workloads[p.workload].priority == tier:
            total -= pol.job_gpus
    return total


def hold_tiers(
    model: cp_model.CpModel,
    stages: Sequence[Stage],
    snapshot: Snapshot,
    kueue: Plan,
    pol: Policy,
) -> None:
    """Each aged tier keeps at least what Kueue's own plan runs there, GPUs
    first, then other demand (the pair the acceptance compares,
    :func:`below_kueue`): aging and the job count choose among plans as
    good as Kueue's, tier by tier, so the optimizer's promise (never below
    the greedy) holds with them on.  The caller adds the rows only when
    Kueue's plan is a plan of the model (else they could leave it no
    solution)."""
    if not pol.weighs_jobs:
        return
    empty = Plan(solver=kueue.solver)
    before = {f.priority: f for f in tier_figures(snapshot, empty, pol)}
    after = {f.priority: f for f in tier_figures(snapshot, kueue, pol)}
    for st in stages:
        if st.aged and st.tier is not None and st.tier in after:
            b, a = before[st.tier], after[st.tier]
            gain = st.weight * (a.gpus - b.gpus) + a.other - b.other
            terms = [(st.weight * c, x) for c, x in st.gpus] + st.other
            model.add(sum(c * x for c, x in terms) >= gain)


def below_kueue(
    snapshot: Snapshot, plan: Plan, kueue: Plan | None, pol: Policy
) -> bool:
    """With aging or the job count on, whether ``plan`` runs less than
    Kueue's, (GPUs, other demand) tier by tier lexicographically (settling
    can take back what the rows held)."""
    if not pol.weighs_jobs or kueue is None:
        return False
    return primary_vector(snapshot, plan, pol) < primary_vector(snapshot, kueue, pol)
