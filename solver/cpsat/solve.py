"""Entry point: warm start, compile, solve the stages, accept, report.

The plan is never worse than the warm start under the objective: the warm
start hints every stage, and a plan that still compares worse (a cold start
after an unrepresentable warm start) is replaced by it (status FALLBACK).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import replace

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan, SolverInfo, TierResult
from placewise.models.quantity import INT64_MAX
from placewise.models.snapshot import Snapshot, build_snapshot
from placewise.solver.cpsat.ceiling import outside_gpus, relaxed_tiers
from placewise.solver.cpsat.fairness import SCALE, SLACK
from placewise.solver.cpsat.finish import explain, fill
from placewise.solver.cpsat.model import CPModel, CpSatParams
from placewise.solver.cpsat.objective import Stage, priced_vector
from placewise.solver.cpsat.plan_io import fallback
from placewise.solver.cpsat.stages import StageResult, run_stages
from placewise.solver.cpsat.warmstart import best_fit
from placewise.solver.greedy.solver import outcome_to_plan, run_greedy
from placewise.solver.kueue.fairsharing import (
    final_state_violations,
    largest_weighted_share,
)
from placewise.solver.lost_work import lost_work
from placewise.solver.policy import Policy, primary_vector, tier_figures
from placewise.solver.problem.data import ModelData, admitted_info, compile_problem
from placewise.solver.problem.layout import plan_domains, restrict
from placewise.solver.settle import settle_preemptions

log = logging.getLogger("placewise.cpsat")

RELAXED_SHARE = 0.1
"""Share of the time limit kept, when a restricted model's victims are
priced, for the unpriced relaxed model's bounds on GPUs (:func:`_gpu_bounds`)."""
CLASS_SHARE = 0.1
"""Of the time limit, what a restricted model's search leaves to the
host-class LP's per-tier bounds (:mod:`placewise.solver.bound.tiers`)."""
MIN_BUDGET = 0.5
"""Seconds below which CP-SAT is not started (the warm start is returned)."""
MARGIN = 0.5
"""Seconds kept under --time-limit for CP-SAT's overshoot and the read-back."""


def _keep_unsupported(snapshot: Snapshot, data: ModelData, warm: Plan) -> ModelData:
    admitted = {a.workload: a for a in warm.admissions}
    keep = [admitted[k] for k in sorted(data.unsupported) if k in admitted]
    if keep:
        # Workloads the model cannot express keep the warm start's decision;
        # the running slices kept elastic slices replace are gone with it.
        data = compile_problem(
            snapshot,
            fixed={a.workload: admitted_info(snapshot, a) for a in keep},
            removed=frozenset(a.replaces for a in keep if a.replaces),
        )
        data.fixed_admissions = keep
    return data


def saturated(snapshot: Snapshot) -> bool:
    """Running usage or a quota beyond int64 (saturated, as in Kueue) has no
    exact place among the model's int64 coefficients: the greedy decides."""
    groups = [g for q in snapshot.cluster_queues.values() for g in q.resource_groups]
    groups += [g for c in snapshot.cohorts.values() for g in c.resource_groups]
    quotas = (
        v
        for g in groups
        for f in g.flavors
        for r in f.resources
        for v in (r.nominal, r.borrowing_limit or 0, r.lending_limit or 0)
    )
    usage = (
        v
        for w in snapshot.running
        if w.admission is not None
        for psa in w.admission.pod_set_assignments
        for v in psa.resource_usage.values()
    )
    return any(v > INT64_MAX for v in quotas) or any(v > INT64_MAX for v in usage)


def _fallback(warm: Plan, start: float, why: str) -> Plan:
    log.warning("cpsat: %s; returning the warm start (%s)", why, warm.solver.name)
    return fallback(warm, time.perf_counter() - start, why=why)


GREEDY_SECONDS_PER_CELL = 2e-6
"""Kueue greedy wall time per pending workload x node, measured on 2 cores
(scale-10000: 2,000 x 10,000 cells in 18-24 s; scale-1000 in 0.4 s)."""
GREEDY_SHARE = 0.5
"""The greedy warm start runs when it is predicted to take at most this
share of the time limit (Kueue's plan is then the floor); the best-fit warm
start always runs."""
RESTRICT_CELLS = 40_000
"""Candidate (pod set, domain) cells above which each pod set keeps only its
roomiest domains (plus its warm start's): the model must build in seconds."""
RESTRICT_TO = 8
LARGE_CELLS = 200_000
"""Candidate cells beyond which even the restricted model does not pay for
itself within a 10 s budget (10,000 hosts: 610k cells; building, hinting and
searching it left no time to improve anything)."""
RACE_VARIABLES = 10_000
"""Models up to this size also run HiGHS's MIP beside CP-SAT on each GPU
stage (it proves the bound CP-SAT's search alone does not reach); beyond it
the MIP would not get past its root within the budget."""


def _warm_start(
    snapshot: Snapshot, data: ModelData, params: CpSatParams, given: Plan | None
) -> tuple[Plan, dict[str, str], Plan | None]:
    """The better of best-fit and (when affordable) Kueue's greedy, with the
    greedy's pending reasons, and the greedy's plan when it ran.  A ``given``
    plan (the caller's baseline, e.g. MultiKueue's race) is the warm start
    instead."""
    if given is not None:
        return given, {p.workload: p.reason for p in given.pending}, None
    bfd = best_fit(data)
    cells = len(snapshot.admissible()) * max(len(snapshot.nodes), 1)
    if cells * GREEDY_SECONDS_PER_CELL > GREEDY_SHARE * params.time_limit:
        log.info("cpsat: warm start best-fit (the greedy would not fit the budget)")
        return bfd, {}, None
    outcome = run_greedy(snapshot)
    greedy = outcome_to_plan(snapshot, outcome, "greedy", 0.0)
    pol = params.policy
    fair = snapshot.fair_sharing.enable  # Kueue's plan sets the fairness floor
    if not fair and primary_vector(snapshot, bfd, pol) > primary_vector(
        snapshot, greedy, pol
    ):
        return bfd, dict(outcome.reasons), greedy
    return greedy, dict(outcome.reasons), greedy


def solve_cpsat(
    snapshot: Snapshot,
    params: CpSatParams | None = None,
    warm: Plan | None = None,
    hints: Sequence[Plan] = (),
) -> Plan:
    """``warm``: a valid plan of ``snapshot`` to start from instead of the
    greedy/best-fit warm start; the result is never worse than it.
    ``hints``: valid plans to start the search from when the warm start is
    not a plan of the model (it stays the floor).  Every victim of the
    result is needed by its preemptor (:mod:`placewise.solver.settle`)."""
    plan = _solve_cpsat(snapshot, params or CpSatParams(), warm, hints)
    return settle_preemptions(snapshot, plan)


def _solve_cpsat(
    snapshot: Snapshot,
    params: CpSatParams,
    warm: Plan | None,
    hints: Sequence[Plan],
) -> Plan:
    start = time.perf_counter()
    if saturated(snapshot):
        greedy = warm or outcome_to_plan(snapshot, run_greedy(snapshot), "greedy", 0.0)
        why = "running usage or quota beyond int64 is outside the model"
        return _fallback(greedy, start, why)
    given = snapshot
    snapshot = _leave_to_finish(snapshot, params.policy)
    data = compile_problem(snapshot)
    warm, reasons, kueue = _warm_start(snapshot, data, params, warm)
    warm = settle_preemptions(snapshot, warm)
    data = _keep_unsupported(snapshot, data, warm)
    if params.time_limit - (time.perf_counter() - start) < MIN_BUDGET:
        return _fallback(warm, start, "the warm start used the time limit")
    assert data.layout is not None
    log.info("cpsat: compiled and warm-started in %.1fs", time.perf_counter() - start)
    if data.layout.cells > LARGE_CELLS:
        return _large(snapshot, data, params, warm, reasons, start)
    restricted = data.layout.cells > RESTRICT_CELLS
    classes = None
    if restricted:
        # Imported here: solver.bound builds on this package.  Built before
        # the layout is restricted, so its LP stays a relaxation.
        from placewise.solver.bound.tiers import ClassBound

        classes = ClassBound(data, _unpriced(params))
        keep = plan_domains(data, data.layout, warm.admissions)
        restrict(data, data.layout, keep, RESTRICT_TO)
    model = CPModel(data, params)
    log.info(
        "cpsat: model of %d variables built at %.1fs",
        model.size,
        time.perf_counter() - start,
    )
    log.debug(
        "cpsat: %d constraints, %d stages, %d cells",
        len(model.model.Proto().constraints),
        len(model.stages),
        data.layout.cells,
    )
    if params.time_limit - (time.perf_counter() - start) < MIN_BUDGET:
        return _fallback(warm, start, "building the model used the time limit")
    hint = model.hint(warm)
    for other in hints:
        hint = hint if hint is not None else model.hint(other)
    if hint is None:
        log.warning("cpsat: the warm start is not representable; cold start")
    log.info("cpsat: hint ready at %.1fs", time.perf_counter() - start)
    share = model.objective.largest_share
    floor = largest_weighted_share(snapshot, warm) if share is not None else None
    if share is not None and floor is not None:
        # Fair sharing on: never less fair than Kueue's own plan (the warm
        # start), whatever the tiers gain; the acceptance test below checks
        # the exact shares, this row keeps the search away from worse ones.
        model.model.add(share <= math.ceil(floor * SCALE) + SLACK)
    end = start + params.time_limit - min(MARGIN, 0.1 * params.time_limit)
    # A restricted model's priced tiers are bounded on the unpriced relaxed
    # model after the search (the full model's stages bound their own GPUs).
    priced = restricted and any(st.costs for st in model.stages)
    deadline = end - (RELAXED_SHARE * params.time_limit if priced else 0.0)
    deadline -= CLASS_SHARE * params.time_limit if restricted else 0.0
    relaxed = CPModel(data, params, "relaxed") if restricted else None
    race = params.deterministic_time is None and model.size <= RACE_VARIABLES
    values, results = run_stages(
        model,
        hint,
        deadline,
        relaxed,
        progress=log.info,
        race=race,
        lns=params.deterministic_time is None and not race,
    )
    if values is None:
        return _fallback(warm, start, "no solution within the time limit")
    searched = model.plan(values, reasons)
    plan = settle_preemptions(snapshot, fill(data, searched))
    plan = _with_reasons(plan, explain(data, plan))
    pol = params.policy
    if _worse(snapshot, plan, warm, model.stages, pol):
        return _fallback(warm, start, "the search ended below the warm start")
    if floor is not None and largest_weighted_share(snapshot, plan) > floor:
        return _fallback(warm, start, "the plan shares the cohort less fairly")
    # -- interim guard (issue 11), until the model encodes fair sharing: a
    # plan whose evictions Kueue's fair-sharing preemption would refuse is
    # replaced by the warm start.  That one is clean either way: best-fit
    # preempts only within a queue (fair sharing judges other queues' victims
    # only), and the greedy follows Kueue's fair sharing.  The lead replaces
    # this with constraints built on solver/kueue/fairsharing.py.
    if snapshot.fair_sharing.enable:
        unfair = final_state_violations(snapshot, plan)
        if unfair:
            return _fallback(warm, start, "fair sharing refuses " + unfair[0])
    # -- end of interim guard
    done = not restricted and all(r.status in ("OPTIMAL", "SKIPPED") for r in results)
    tiers, total_bound = _report(
        snapshot, searched, plan, values, results, pol, restricted
    )
    tiers, total_bound = _allow_outside(data, plan, pol, tiers, total_bound)
    if priced:
        tiers, total_bound = _gpu_bounds(
            snapshot, data, params, plan, end, model.stages, tiers
        )
    if classes is not None:
        from placewise.solver.bound.tiers import tighter

        tiers, total_bound = tighter(
            tiers, total_bound, classes.tiers(snapshot, plan, end)
        )
    if kueue is not None and snapshot is not given:
        # The warm start left work about to finish alone; Kueue does not.
        kueue = outcome_to_plan(given, run_greedy(given), "greedy", 0.0)
    tiers = _with_greedy(given, tiers, kueue, pol)
    wall = time.perf_counter() - start
    total = sum(t.gpus for t in tiers)
    return plan.model_copy(
        update={
            "solver": plan.solver.model_copy(
                update={
                    "status": "OPTIMAL" if done else "FEASIBLE",
                    "wall_seconds": wall,
                    "objective": float(total),
                    "bound": None if total_bound is None else float(total_bound),
                    "tiers": tiers,
                }
            )
        }
    )


def _large(
    snapshot: Snapshot,
    data: ModelData,
    params: CpSatParams,
    warm: Plan,
    reasons: dict[str, str],
    start: float,
) -> Plan:
    """Beyond LARGE_CELLS the full model would not build and search within
    the budget: the warm start, filled with what still fits, is the plan,
    and the configuration LP over host classes (:mod:`placewise.solver.bound.tiers`)
    proves each tier's bound."""
    plan = fill(data, warm)
    plan = _with_reasons(plan, {**reasons, **explain(data, plan)})
    deadline = start + params.time_limit - min(MARGIN, 0.1 * params.time_limit)
    # Imported here: solver.bound builds on this package (its LP is this
    # model's rows), so a module-level import would be circular.
    from placewise.solver.bound.tiers import class_tiers

    got = class_tiers(snapshot, data, _unpriced(params), plan, deadline)
    if got is None:  # an LP did not finish: the relaxed model's ceiling
        got = relaxed_tiers(snapshot, data, _unpriced(params), plan, deadline)
    tiers, total_bound = got
    wall = time.perf_counter() - start
    return plan.model_copy(
        update={
            "solver": SolverInfo(
                name="cpsat",
                status="FEASIBLE",
                wall_seconds=wall,
                objective=float(sum(t.gpus for t in tiers)),
                bound=None if total_bound is None else float(total_bound),
                tiers=tiers,
            )
        }
    )


def _unpriced(params: CpSatParams, share: float = 1.0) -> CpSatParams:
    """The same solve without the lost-work price (GPU stages as before)."""
    det = params.deterministic_time
    return replace(
        params,
        policy=replace(params.policy, preemption_price=0.0),
        deterministic_time=None if det is None else det * share,
    )


def _gpu_bounds(
    snapshot: Snapshot,
    data: ModelData,
    params: CpSatParams,
    plan: Plan,
    end: float,
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
    flat = _unpriced(params, RELAXED_SHARE)
    theirs, total = relaxed_tiers(snapshot, data, flat, plan, end, keep)
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


def _leave_to_finish(snapshot: Snapshot, pol: Policy) -> Snapshot:
    """Running work known to end within the policy's finish window is not
    preemptible in this solve: its room frees soon anyway, and evicting it
    throws away nearly all of its run (:mod:`placewise.solver.lost_work`)."""
    finishing = lost_work(snapshot, pol).finishing
    if not finishing:
        return snapshot
    log.info("cpsat: %d running workload(s) left to finish", len(finishing))
    objs = snapshot.objects
    workloads = {
        k: w.model_copy(update={"preemptible": False}) if k in finishing else w
        for k, w in objs.workloads.items()
    }
    objs = replace(objs, workloads=workloads, now=snapshot.now)
    if isinstance(snapshot, MultiSnapshot):
        return MultiSnapshot(objs, snapshot.facts)
    return build_snapshot(objs)


def _worse(
    snapshot: Snapshot, plan: Plan, warm: Plan, stages: list[Stage], pol: Policy
) -> bool:
    """Whether ``plan`` ranks below ``warm`` under the objective: GPUs per
    tier, with victims' lost work priced as the model prices it."""
    if any(st.costs for st in stages):
        mine = priced_vector(snapshot, plan, stages, pol)
        return mine < priced_vector(snapshot, warm, stages, pol)
    return primary_vector(snapshot, plan, pol) < primary_vector(snapshot, warm, pol)


def _with_reasons(plan: Plan, why: dict[str, str]) -> Plan:
    """Pending reasons of the final plan replace the warm start's."""
    pending = tuple(
        p.model_copy(update={"reason": why[p.workload]}) if p.workload in why else p
        for p in plan.pending
    )
    return plan.model_copy(update={"pending": pending})


def _allow_outside(
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


def _with_greedy(
    snapshot: Snapshot, tiers: tuple[TierResult, ...], greedy: Plan | None, pol: Policy
) -> tuple[TierResult, ...]:
    """Each tier's figure for Kueue's greedy plan, when it ran."""
    if greedy is None:
        return tiers
    theirs = {f.priority: f.gpus for f in tier_figures(snapshot, greedy, pol)}
    return tuple(t.model_copy(update={"greedy": theirs.get(t.priority)}) for t in tiers)


def _report(
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
