"""Per-tier bounds from the configuration LP over host classes
(:mod:`.classes`), for plans of models too large to bound their own stages.

Tier by tier, highest first: maximise the tier's GPUs with every tier above
it held at the *plan's* GPUs, so each bound holds "given the tiers above it"
as the plan has them.  Holding at the plan's values (not the LP's optimum)
makes the tiers' LPs independent of each other: they run side by side, one
HiGHS child each.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np

from placewise.models.plan import Plan, SolverInfo, TierResult
from placewise.models.snapshot import Snapshot
from placewise.solver.bound.classes import (
    class_lp,
    floor_bound,
    gpu_terms,
    with_objective,
)
from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.ceiling import outside_gpus, tier_results
from placewise.solver.highs import Arrays, Running
from placewise.solver.policy import Policy, accelerators, tier_figures
from placewise.solver.problem.compile import Problem

INFEASIBLE = "Infeasible"
"""HiGHS's status text for an LP without a feasible point."""
HOLD_SLACK = 0.5
"""A tier above is held at the plan's GPUs less this: GPUs are whole, so no
plan is cut off, and the LP is not made infeasible by rounding."""


def _hold(arrays: Arrays, held: list[tuple[Stage, int]]) -> Arrays:
    """``arrays`` with one row per (stage, GPUs): the stage's GPUs at least that."""
    if not held:
        return arrays
    index, value, lo = [arrays.index], [arrays.value], []
    starts = [arrays.start]
    end = int(arrays.start[-1])
    for stage, gpus in held:
        cols, coefs = gpu_terms(stage)
        index.append(cols)
        value.append(coefs)
        end += cols.size
        starts.append(np.asarray([end], dtype=np.int64))
        lo.append(gpus - HOLD_SLACK)
    return replace(
        arrays,
        row_lo=np.concatenate((arrays.row_lo, np.asarray(lo))),
        row_hi=np.concatenate((arrays.row_hi, np.full(len(lo), np.inf))),
        start=np.concatenate(starts),
        index=np.concatenate(index),
        value=np.concatenate(value),
    )


class ClassBound:
    """The host-class LP of one compiled problem, built once; per-tier bounds
    for any plan of it.  Build it before the layout is restricted (a
    restricted layout is no longer a relaxation)."""

    def __init__(self, problem: Problem, params: CpSatParams) -> None:
        """``params`` must be unpriced: only the stages' GPU terms are read."""
        self.data = problem.data
        self.policy = params.policy
        model = CPModel(problem, params, "classes")
        self.arrays = class_lp(model)
        self.stages = [s for s in model.stages if s.gpus]

    def _inside(self, snapshot: Snapshot, plan: Plan) -> dict[int, int]:
        """Per tier, GPUs after the plan less what it admits that the model
        leaves out: what the model's own rows can hold the tier at."""
        pol = self.policy
        gpus = {f.priority: f.gpus for f in tier_figures(snapshot, plan, pol)}
        modelled = {wd.key for wd in self.data.workloads}
        outside = {a.workload for a in plan.admissions} - modelled
        taken = _gpus_by_tier(snapshot, outside, pol)
        return {t: g - taken.get(t, 0) for t, g in gpus.items()}

    def tiers(
        self, snapshot: Snapshot, plan: Plan, budget: Budget
    ) -> tuple[tuple[TierResult, ...], int | None] | None:
        """(per tier: GPUs after the plan and the proven bound; the bound on
        the total under the ``gpus`` objective), or None when an LP did not
        finish within ``budget`` (the caller keeps a cheaper bound)."""
        pol = self.policy
        figures = tier_figures(snapshot, plan, pol)
        empty = Plan(solver=SolverInfo(name="", status="FEASIBLE"))
        running = {f.priority: f.gpus for f in tier_figures(snapshot, empty, pol)}
        extra = outside_gpus(self.data, plan, pol)
        inside = self._inside(snapshot, plan)
        runs: list[Running] = []
        for k, stage in enumerate(self.stages):
            above = [
                (st, inside[st.tier] - running[st.tier])
                for st in self.stages[:k]
                if st.tier is not None
            ]
            lp = _hold(with_objective(self.arrays, stage), above)
            left = max(budget.remaining(), 0.5)
            runs.append(Running(lp, left, False))
        bounds: dict[int | None, int] = {}
        try:
            for stage, run in zip(self.stages, runs, strict=True):
                got = run.result(budget.remaining() + 1.0)
                if got is not None and got.bound is None and got.status == INFEASIBLE:
                    # The tiers above cannot be held (a plan outside the
                    # model's rules): the tier's bound over every plan.
                    left = max(budget.remaining(), 0.5)
                    alone = Running(with_objective(self.arrays, stage), left, False)
                    got = alone.result(left + 1.0)
                    alone.stop()
                if got is None or got.bound is None:
                    return None
                delta = floor_bound(got.bound)
                if stage.tier is None:
                    total = sum(running.values()) + sum(extra.values())
                    bounds[None] = total + delta
                else:
                    bounds[stage.tier] = running[stage.tier] + delta + extra[stage.tier]
        finally:
            for run in runs:
                run.stop()
        return tier_results(figures, bounds, pol)


def _gpus_by_tier(snapshot: Snapshot, keys: set[str], pol: Policy) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for key in keys:
        w = snapshot.workloads[key]
        out[w.priority] += sum(
            ps.count * accelerators(ps.requests, pol) for ps in w.pod_sets
        )
    return out


def class_tiers(
    snapshot: Snapshot,
    problem: Problem,
    params: CpSatParams,
    plan: Plan,
    budget: Budget,
) -> tuple[tuple[TierResult, ...], int | None] | None:
    """:class:`ClassBound`'s per-tier bounds, built and solved at once."""
    return ClassBound(problem, params).tiers(snapshot, plan, budget)


def tighter(
    tiers: tuple[TierResult, ...],
    total: int | None,
    other: tuple[tuple[TierResult, ...], int | None] | None,
) -> tuple[tuple[TierResult, ...], int | None]:
    """Each tier's (and the total's) smaller bound of two valid ones."""
    if other is None:
        return tiers, total
    theirs = {t.priority: t.bound for t in other[0]}

    def least(a: int | None, b: int | None) -> int | None:
        return b if a is None else a if b is None else min(a, b)

    return (
        tuple(
            t.model_copy(update={"bound": least(t.bound, theirs.get(t.priority))})
            for t in tiers
        ),
        least(total, other[1]),
    )


def demand_tiers(
    snapshot: Snapshot, plan: Plan, pol: Policy
) -> tuple[tuple[TierResult, ...], int | None]:
    """Per tier: GPUs after the plan, and the bound no plan can pass —
    running work plus every pending workload admitted.  What the large path
    reports when neither LP fits the time left (at 50,000 hosts the
    host-class LP may not): valid, if loose, and free to compute."""
    figures = tier_figures(snapshot, plan, pol)
    empty = Plan(solver=SolverInfo(name="", status="FEASIBLE"))
    bounds: dict[int | None, int] = {
        f.priority: f.gpus for f in tier_figures(snapshot, empty, pol)
    }
    waiting = _gpus_by_tier(snapshot, {w.key for w in snapshot.pending}, pol)
    for tier, gpus in waiting.items():
        bounds[tier] = bounds.get(tier, 0) + gpus
    bounds[None] = sum(v for k, v in bounds.items() if k is not None)
    return tier_results(figures, bounds, pol)
