"""The solver's report on a plan: per priority tier, GPUs running after it,
the proven bound on them, and Kueue's own figure; figures are measured on
the plan (:func:`placewise.solver.policy.tier_figures`), bounds from the
stages' proofs or, where those prove nothing, the relaxed model's."""

from __future__ import annotations

from dataclasses import replace

from placewise.models.plan import Plan, TierResult
from placewise.models.snapshot import Snapshot
from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CpSatParams
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.ceiling import outside_gpus, relaxed_tiers
from placewise.solver.cpsat.search.stages import StageResult
from placewise.solver.cpsat.tuning import RELAXED_SHARE
from placewise.solver.policy import Policy, tier_figures
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import ModelData


def unpriced(params: CpSatParams, share: float = 1.0) -> CpSatParams:
    """The same solve without a victim's price (GPU stages as before)."""
    det = params.deterministic_time
    return replace(
        params,
        policy=replace(params.policy, preemption_price=0.0, reversal_gpus=0.0),
        deterministic_time=None if det is None else det * share,
    )


def gpu_bounds(
    snapshot: Snapshot,
    problem: Problem,
    params: CpSatParams,
    plan: Plan,
    end: Budget,
    stages: list[Stage],
    tiers: tuple[TierResult, ...],
) -> tuple[tuple[TierResult, ...], int | None]:
    """Per-tier bounds on GPUs of a restricted model whose stages were
    priced.  A priced stage's bound bounds GPUs less the victims' price, not
    GPUs: from the first priced tier down, the *unpriced* relaxed model,
    each tier above held at the plan's GPUs, bounds every plan the validator
    accepts (that leaves work about to finish alone), as for large models
    (:mod:`.ceiling`).  The tiers above it keep their bounds."""
    gpu_stages = [st for st in stages if st.gpus]
    first = next(k for k, st in enumerate(gpu_stages) if st.costs)
    keep = frozenset(st.tier for st in gpu_stages[:first] if st.tier is not None)
    flat = unpriced(params, RELAXED_SHARE)
    theirs, total = relaxed_tiers(snapshot, problem, flat, plan, end, keep)
    bound = {t.priority: t.bound for t in theirs}
    return (
        tuple(
            t
            if t.priority in keep
            else t.model_copy(update={"bound": bound[t.priority]})
            for t in tiers
        ),
        total,
    )


def allow_outside(
    data: ModelData,
    plan: Plan,
    pol: Policy,
    tiers: tuple[TierResult, ...],
    total: int | None,
) -> tuple[tuple[TierResult, ...], int | None]:
    """Bounds must allow for some plan admitting the pending workloads the
    model leaves out (it cannot express them): their GPUs count whole."""
    extra = outside_gpus(data, plan, pol)
    if not extra:
        return tiers, total
    widened = tuple(
        t.model_copy(update={"bound": t.bound + extra.get(t.priority, 0)})
        if t.bound is not None
        else t
        for t in tiers
    )
    return widened, None if total is None else total + sum(extra.values())


def with_greedy(
    snapshot: Snapshot, tiers: tuple[TierResult, ...], greedy: Plan | None, pol: Policy
) -> tuple[TierResult, ...]:
    """Each tier's figure for Kueue's greedy plan, when it ran."""
    if greedy is None:
        return tiers
    theirs = {f.priority: f.gpus for f in tier_figures(snapshot, greedy, pol)}
    return tuple(t.model_copy(update={"greedy": theirs.get(t.priority)}) for t in tiers)


def tier_report(
    snapshot: Snapshot,
    searched: Plan,
    plan: Plan,
    values: dict[int, int],
    results: list[StageResult],
    pol: Policy,
    restricted: bool,
) -> tuple[tuple[TierResult, ...], int | None]:
    """Per tier, GPUs running after the plan and the proven bound on them;
    and a bound on the total when the objective is GPUs alone.  Bounds are
    measured from the searched plan (``values``); ``plan`` may have more
    admitted since (:func:`fill`), never beyond them.  A restricted model
    proves nothing about the full problem: only ceilings are reported."""
    figures = tier_figures(snapshot, plan, pol)
    before = {f.priority: f.gpus for f in tier_figures(snapshot, searched, pol)}
    slack: dict[int | None, int] = {}
    for r in results:
        st = r.stage
        if not st.gpus:
            continue
        got = sum(c * values[x.index] for c, x in st.gpus)
        proven = [r.relaxed_bound] if restricted else [r.bound, r.relaxed_bound]
        bound = min((b for b in proven if b is not None), default=st.hi)
        delta = st.gpu_bound(bound)
        if r.gpu_bound is not None and not restricted:
            delta = min(delta, r.gpu_bound)  # priced: the unpriced bound
        slack[st.tier] = max(0, delta - got)
    if pol.objective == "gpus":
        tiers = tuple(TierResult(priority=f.priority, gpus=f.gpus) for f in figures)
        return tiers, sum(before.values()) + slack.get(None, 0)
    tiers = tuple(
        TierResult(
            priority=f.priority,
            gpus=f.gpus,
            bound=before[f.priority] + slack.get(f.priority, 0),
        )
        for f in figures
    )
    return tiers, None
