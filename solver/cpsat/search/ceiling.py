"""Proven per-tier bounds from the relaxed model, for plans the full model
did not search (large instances).

The relaxed model drops only placement detail (pods need room in each TAS
flavor's total capacity) and StrictFIFO order, so its optimum bounds every
plan the validator accepts.  Tier by tier, highest first: maximise the tier,
read the bound, then hold the tier at the *plan's* value (not the relaxed
optimum) before the next — so each bound holds "given the tiers above it"
as the plan has them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from functools import partial

from placewise.models.plan import Plan, SolverInfo, TierResult
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.cpsat.search.stages import solve_stage
from placewise.solver.policy import Policy, TierFigures, accelerators, tier_figures
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import ModelData, outside_demand


def outside_gpus(data: ModelData, plan: Plan, pol: Policy) -> dict[int, int]:
    """Per tier, GPUs of pending workloads the model leaves out and the plan
    does not admit: a bound must allow for some plan admitting them."""
    admitted = {a.workload for a in plan.admissions}
    size = partial(_gpus, pol=pol)
    return defaultdict(int, outside_demand(data, size, admitted))


def _gpus(w: Workload, pol: Policy) -> int:
    return sum(ps.count * accelerators(ps.requests, pol) for ps in w.pod_sets)


def relaxed_tiers(
    snapshot: Snapshot,
    problem: Problem,
    params: CpSatParams,
    plan: Plan,
    budget: Budget,
    skip: frozenset[int] = frozenset(),
) -> tuple[tuple[TierResult, ...], int | None]:
    """(per tier: GPUs after the plan and the proven bound; the bound on the
    total under the ``gpus`` objective).  Tiers in ``skip`` are only held at
    the plan's GPUs, not bounded (the caller has their bounds)."""
    pol = params.policy
    model = CPModel(problem, params, "relaxed")
    figures = tier_figures(snapshot, plan, pol)
    empty = Plan(solver=SolverInfo(name="", status="FEASIBLE"))
    running = {f.priority: f.gpus for f in tier_figures(snapshot, empty, pol)}
    extra = outside_gpus(problem.data, plan, pol)
    gpus = {f.priority: f.gpus for f in figures}
    bounds: dict[int | None, int] = {}
    stages = [s for s in model.stages if s.gpus]
    todo = sum(1 for s in stages if s.tier is None or s.tier not in skip)
    for stage in stages:
        bound = None
        if stage.tier is None or stage.tier not in skip:
            share = budget.share(1 / todo)
            det = params.deterministic_time
            work = det / todo if det is not None else None
            _, _, bound = solve_stage(model, stage, None, share, work)
            todo -= 1
        delta = stage.gpu_bound(bound if bound is not None else stage.hi)
        if stage.tier is None:
            bounds[None] = sum(running.values()) + delta + sum(extra.values())
            continue
        bounds[stage.tier] = running[stage.tier] + delta + extra[stage.tier]
        held = gpus[stage.tier] - running[stage.tier]
        model.model.add(sum(c * x for c, x in stage.gpus) >= held)
    return tier_results(figures, bounds, pol)


def tier_results(
    figures: Sequence[TierFigures], bounds: dict[int | None, int], pol: Policy
) -> tuple[tuple[TierResult, ...], int | None]:
    """Per tier its GPUs and proven bound (a tier without one is bounded by
    itself); under ``objective: gpus`` the bound is on the total (key None)."""
    if pol.objective == "gpus":
        tiers = tuple(TierResult(priority=f.priority, gpus=f.gpus) for f in figures)
        return tiers, bounds.get(None)
    return (
        tuple(
            TierResult(
                priority=f.priority, gpus=f.gpus, bound=bounds.get(f.priority, f.gpus)
            )
            for f in figures
        ),
        None,
    )
