"""Per-tier bounds from the configuration LP over host classes
(:mod:`.classes`), for plans of models too large to bound their own stages.

Tier by tier, highest first: maximise the tier's GPUs with every tier above
it held at the *plan's* GPUs, so each bound holds "given the tiers above it"
as the plan has them.  Holding at the plan's values (not the LP's optimum)
makes the tiers' LPs independent of each other: they run side by side, one
HiGHS child each.
"""

from __future__ import annotations

import time
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
from placewise.solver.cpsat.ceiling import outside_gpus
from placewise.solver.cpsat.model import CPModel, CpSatParams
from placewise.solver.cpsat.objective import Stage
from placewise.solver.highs import Arrays, Running
from placewise.solver.policy import tier_figures
from placewise.solver.problem.data import ModelData

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


def class_tiers(
    snapshot: Snapshot,
    data: ModelData,
    params: CpSatParams,
    plan: Plan,
    deadline: float,
) -> tuple[tuple[TierResult, ...], int | None] | None:
    """(per tier: GPUs after the plan and the proven bound; the bound on the
    total under the ``gpus`` objective), or None when an LP did not finish
    by ``deadline`` (the caller falls back to a cheaper bound).  ``params``
    must be unpriced: only the stages' GPU terms are read."""
    pol = params.policy
    model = CPModel(data, params, "classes")
    arrays = class_lp(model)
    figures = tier_figures(snapshot, plan, pol)
    empty = Plan(solver=SolverInfo(name="", status="FEASIBLE"))
    running = {f.priority: f.gpus for f in tier_figures(snapshot, empty, pol)}
    extra = outside_gpus(data, plan, pol)
    gpus = {f.priority: f.gpus for f in figures}
    stages = [s for s in model.stages if s.gpus]
    runs: list[Running] = []
    for k, stage in enumerate(stages):
        above = [
            (st, gpus[st.tier] - running[st.tier])
            for st in stages[:k]
            if st.tier is not None
        ]
        lp = _hold(with_objective(arrays, stage), above)
        runs.append(Running(lp, max(deadline - time.perf_counter(), 0.5), False))
    bounds: dict[int | None, int] = {}
    try:
        for stage, run in zip(stages, runs, strict=True):
            got = run.result(max(deadline - time.perf_counter(), 0.0) + 1.0)
            if got is None or got.bound is None:
                return None
            delta = floor_bound(got.bound)
            if stage.tier is None:
                bounds[None] = sum(running.values()) + delta + sum(extra.values())
            else:
                bounds[stage.tier] = running[stage.tier] + delta + extra[stage.tier]
    finally:
        for run in runs:
            run.stop()
    if pol.objective == "gpus":
        tiers = tuple(TierResult(priority=f.priority, gpus=f.gpus) for f in figures)
        return tiers, bounds.get(None)
    return (
        tuple(
            TierResult(
                priority=f.priority,
                gpus=f.gpus,
                bound=bounds.get(f.priority, f.gpus),
            )
            for f in figures
        ),
        None,
    )
