"""Rows that keep a plan at least as good as Kueue's own, solve by solve.

Replayed over hours, the optimizer's evictions cost more than they gained:
on the generated families it wasted 1.3-2.5x Kueue's GPU-hours
(``multi-team``), and on the Helios trace 34-48 % more, although it evicted
about as often (issue 19, benchmarks/README).  Pricing the lost work in
GPUs of a tier (:mod:`placewise.solver.lost_work`) weighs it against that
tier's gain; a higher tier that evicts for any gain, and the victims it
picks, are left free unless ``cross_tier_price`` is set, and every price
tried traded waiting for waste.  And where "GPUs now" prefers one large
gang to two older mid-sized ones, those wait solve after solve while
Kueue's first-in-first-out lets them in.

Two policy knobs, each a row set against Kueue's plan for the same
snapshot (the greedy the warm start runs anyway); the tier holds of aging
and ``job_gpus`` (:func:`placewise.solver.cpsat.model.aging.hold_tiers`)
go in from here too:

- ``waste_cap``: the plan's lost work -- GPUs x time since start, the
  replay's "wasted GPU-hours" exactly -- is at most what Kueue's plan
  loses.  One row, in GPU-minutes rounded up per victim, so a plan's
  figure and the row's are the same sum.
- ``keep_kueue_admissions``: every workload Kueue's plan admits is
  admitted (anywhere the model likes): the optimizer adds to Kueue's
  choice, never trades an older job for a larger one.

Kueue's plan satisfies them all, so they are added only when it is a
plan of the model (they can never leave it without a solution), before
the warm start becomes the search's hint, and with any of them on the
warm start is Kueue's plan: an incumbent that breaks a row would fix a
stage at a value no plan reaches (CP-SAT aborted the process on it).
Every tier stays at least Kueue's, lexicographically.
"""

from __future__ import annotations

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat.model.aging import hold_tiers
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.lost_work import LostWork
from placewise.solver.policy import Policy

MINUTE = 60


def waste_minutes(lost: LostWork, key: str) -> int:
    """GPU-minutes evicting running workload ``key`` throws away, rounded up."""
    return -(-lost.gpu_seconds.get(key, 0) // MINUTE)


def plan_waste(lost: LostWork, plan: Plan) -> int:
    """GPU-minutes a plan's preemptions throw away."""
    return sum(waste_minutes(lost, p.workload) for p in plan.preemptions)


def hold_at_kueue(
    model: CPModel, snapshot: Snapshot, kueue: Plan, pol: Policy
) -> dict[int, int] | None:
    """The rows the policy asks for, when Kueue's plan is a plan of the
    model; then that plan's values (it meets the rows: they are set at it),
    else None."""
    if not pol.held_at_kueue:
        return None
    values = model.hint(kueue)
    if values is None:
        return None
    hold_tiers(model.model, model.stages, snapshot, kueue, pol)
    data, v = model.data, model.vars
    if pol.waste_cap:
        lost = model.objective.lost
        terms = [
            (waste_minutes(lost, vd.info.key), x)
            for vd, x in zip(data.victims, v.victims, strict=True)
        ]
        terms = [(c, x) for c, x in terms if c > 0]
        if terms:
            model.model.add(sum(c * x for c, x in terms) <= plan_waste(lost, kueue))
    if pol.keep_kueue_admissions:
        admits = {wd.key: v.workloads[wd.idx].admit for wd in data.workloads}
        for a in kueue.admissions:
            x = admits.get(a.workload)
            if x is not None:
                model.model.add(x == 1)
    return values


def short_of(lost: LostWork, plan: Plan, kueue: Plan | None, pol: Policy) -> str | None:
    """Why ``plan`` is not held at Kueue's (None: it is), for the rows
    settling may have undone or a model they were not added to."""
    if kueue is None:
        return None
    if pol.waste_cap and plan_waste(lost, plan) > plan_waste(lost, kueue):
        return "the plan throws away more work than Kueue's"
    if pol.keep_kueue_admissions:
        ours = {a.workload for a in plan.admissions}
        if any(a.workload not in ours for a in kueue.admissions):
            return "the plan leaves out a workload Kueue admits"
    return None
