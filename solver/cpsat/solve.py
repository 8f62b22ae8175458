"""Entry point: warm start, compile, solve the stages, accept, report.

The plan is never worse than the warm start under the objective: the warm
start hints every stage, and a plan that still compares worse (a cold start
after an unrepresentable warm start) is replaced by it (status FALLBACK).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan, SolverInfo, TierResult
from placewise.models.quantity import INT64_MAX
from placewise.models.snapshot import Snapshot, build_snapshot
from placewise.solver.budget import Budget
from placewise.solver.cpsat.decode.accept import refused
from placewise.solver.cpsat.decode.finish import explain, fill
from placewise.solver.cpsat.decode.plan_io import fallback
from placewise.solver.cpsat.decode.report import (
    allow_outside,
    gpu_bounds,
    tier_report,
    unpriced,
    with_greedy,
)
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.cpsat.model.fairness import SCALE
from placewise.solver.cpsat.model.kueue_floor import hold_at_kueue
from placewise.solver.cpsat.search.ceiling import relaxed_tiers
from placewise.solver.cpsat.search.partition import (
    Partition,
    PartitionSearch,
    partition,
)
from placewise.solver.cpsat.search.stages import run_stages
from placewise.solver.cpsat.search.warmstart import best_fit
from placewise.solver.cpsat.tuning import (
    BOUND_PER_COMPILE,
    CLASS_SHARE,
    GREEDY_SECONDS_PER_CELL,
    GREEDY_SHARE,
    LARGE_BOUND_SHARE,
    LARGE_CELLS,
    MIN_BUDGET,
    RACE_VARIABLES,
    RELAXED_SHARE,
    RESTRICT_CELLS,
    RESTRICT_TO,
    SLACK,
    VALIDATE_PER_COMPILE,
    WARM_SHARE,
)
from placewise.solver.greedy.reserve import reservation_of
from placewise.solver.greedy.solver import outcome_to_plan, run_greedy
from placewise.solver.kueue.fairsharing import largest_weighted_share
from placewise.solver.lost_work import lost_work
from placewise.solver.policy import Policy, primary_vector
from placewise.solver.problem.compile import Problem, compile_problem
from placewise.solver.problem.layout import plan_domains, restrict
from placewise.solver.settle import settle_preemptions

if TYPE_CHECKING:
    from placewise.solver.bound.tiers import ClassBound

log = logging.getLogger("placewise.cpsat")


def _keep_unsupported(snapshot: Snapshot, problem: Problem, warm: Plan) -> Problem:
    """The problem compiled again with the workloads the model cannot express
    decided as the warm start decided them (their usage counted as running,
    the running slices elastic slices replace gone with it).  The second
    compile is needed: which workloads these are, and the warm start's
    decision for them, are known only after the first (best-fit's warm start
    reads the compiled problem)."""
    admitted = {a.workload: a for a in warm.admissions}
    unsupported = problem.data.unsupported
    keep = [admitted[k] for k in sorted(unsupported) if k in admitted]
    if not keep:
        return problem
    return compile_problem(snapshot, keep, reservation=problem.data.reservation)


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


def _fallback(warm: Plan, limit: Budget, why: str) -> Plan:
    log.warning("cpsat: %s; returning the warm start (%s)", why, warm.solver.name)
    return fallback(warm, limit.spent(), why=why)


def _warm_start(
    snapshot: Snapshot,
    problem: Problem,
    params: CpSatParams,
    given: Plan | None,
    evict: Budget | None = None,
) -> tuple[Plan, dict[str, str], Plan | None]:
    """The better of best-fit and (when affordable) Kueue's greedy, with the
    greedy's pending reasons, and the greedy's plan when it ran.  A ``given``
    plan (the caller's baseline, e.g. MultiKueue's race) is the warm start
    instead.  Best-fit tries evictions only while ``evict`` lasts."""
    if given is not None:
        return given, {p.workload: p.reason for p in given.pending}, None
    pol = params.policy
    bfd = best_fit(problem, budget=evict, order="bound-first")
    if evict is None:
        # Off the large path best-fit takes a fraction of a second: the
        # other order too, and the better plan (on `fragmented` seed 3 and
        # `scale-1000` seed 1 the plain order is).  Beyond it the rack-bound
        # gangs first were the better on every instance measured, and a
        # second run would cost the partition search rounds.
        other = best_fit(problem, order="decreasing")
        if primary_vector(snapshot, other, pol) > primary_vector(snapshot, bfd, pol):
            bfd = other
    cells = len(snapshot.admissible()) * max(len(snapshot.nodes), 1)
    if cells * GREEDY_SECONDS_PER_CELL > GREEDY_SHARE * params.time_limit:
        log.info("cpsat: warm start best-fit (the greedy would not fit the budget)")
        return bfd, {}, None
    outcome = run_greedy(snapshot, policy=params.policy)  # holds the reservation
    greedy = outcome_to_plan(snapshot, outcome, "greedy", 0.0)
    fair = snapshot.fair_sharing.enable  # Kueue's plan sets the fairness floor
    # Held at Kueue's plan (aging, job_gpus, waste_cap, ...), the warm start
    # is Kueue's: best-fit may break the rows, and the search's incumbent
    # must be a plan of the model as it is searched.
    if (
        not fair
        and not pol.held_at_kueue
        and primary_vector(snapshot, bfd, pol) > primary_vector(snapshot, greedy, pol)
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


@dataclass(frozen=True, slots=True)
class _Start:
    """What the search starts from and is held to."""

    given: Snapshot
    """The caller's snapshot (Kueue's greedy is reported on it)."""
    snapshot: Snapshot
    """The snapshot as the model sees it (work about to finish left alone)."""
    problem: Problem
    """Compiled once, or twice by :func:`_keep_unsupported`."""
    warm: Plan
    """The warm start: the floor of the result, and the search's first hint."""
    reasons: dict[str, str]
    """Pending reasons of the warm start."""
    kueue: Plan | None
    """Kueue's greedy plan, when it ran."""
    compiled: float = 0.0
    """Seconds the compile took: what the final validation is reserved by
    (:func:`_large`)."""


def _solve_cpsat(
    snapshot: Snapshot,
    params: CpSatParams,
    warm: Plan | None,
    hints: Sequence[Plan],
) -> Plan:
    """The pipeline the package overview describes: start, build, search,
    decode, accept, report; each early return is the warm start (FALLBACK)."""
    limit = Budget.of(params.time_limit)
    if saturated(snapshot):
        greedy = warm or outcome_to_plan(snapshot, run_greedy(snapshot), "greedy", 0.0)
        why = "running usage or quota beyond int64 is outside the model"
        return _fallback(greedy, limit, why)
    start = _start(snapshot, params, warm, limit)
    log.info("cpsat: compiled and warm-started in %.1fs", limit.spent())
    if start.problem.layout.cells > LARGE_CELLS:
        return _large(start, params, limit)  # spends what is left, if any
    if limit.remaining() < MIN_BUDGET:
        return _fallback(start.warm, limit, "the warm start used the time limit")
    classes = _class_bound(start, params)
    model, restricted = _build(start, params, limit)
    if limit.remaining() < MIN_BUDGET:
        return _fallback(start.warm, limit, "building the model used the time limit")
    held = None
    if start.kueue is not None:  # before the hint, which must keep its rows
        held = hold_at_kueue(model, start.snapshot, start.kueue, params.policy)
    # Kueue's plan meets the rows it sets: when it is the warm start (as it
    # is with any hold on), its values are the hint, checked once.
    reuse = held is not None and start.warm == start.kueue
    hint = held if reuse else _hint(model, start.warm, hints)
    log.info("cpsat: hint ready at %.1fs", limit.spent())
    floor = _fairness_floor(start, model)
    end = limit.less_margin()
    # A restricted model's priced tiers are bounded on the unpriced relaxed
    # model after the search (the full model's stages bound their own GPUs).
    priced = restricted and any(st.costs for st in model.stages)
    search = end.short_of(RELAXED_SHARE * limit.seconds) if priced else end
    if classes is not None:
        search = search.short_of(CLASS_SHARE * limit.seconds)
    relaxed = CPModel(start.problem, params, "relaxed") if restricted else None
    race = params.deterministic_time is None and model.size <= RACE_VARIABLES
    values, results = run_stages(
        model,
        hint,
        search,
        relaxed,
        progress=log.info,
        race=race,
        lns=params.deterministic_time is None and not race,
    )
    if values is None:
        return _fallback(start.warm, limit, "no solution within the time limit")
    searched = model.plan(values, start.reasons)
    plan = _finished(start, searched)
    refusal = refused(
        start.snapshot,
        plan,
        start.warm,
        start.kueue,
        model.stages,
        floor,
        params.policy,
        model.objective.lost,
    )
    if refusal is not None:
        back = _fallback(start.warm, limit, refusal)
        if classes is None:
            return back
        # The host-class LP was paid for: the warm start keeps its bounds.
        theirs = classes.tiers(start.snapshot, back, end)
        if theirs is None:
            return back
        tiers, total = theirs
        info = {"tiers": tiers, "bound": None if total is None else float(total)}
        return back.model_copy(update={"solver": back.solver.model_copy(update=info)})
    done = not restricted and all(r.status in ("OPTIMAL", "SKIPPED") for r in results)
    pol = params.policy
    tiers, total_bound = tier_report(
        start.snapshot, searched, plan, values, results, pol, restricted
    )
    tiers, total_bound = allow_outside(
        start.problem.data, plan, pol, tiers, total_bound
    )
    if priced:
        tiers, total_bound = gpu_bounds(
            start.snapshot, start.problem, params, plan, end, model.stages, tiers
        )
    if classes is not None:
        from placewise.solver.bound.tiers import tighter

        theirs = classes.tiers(start.snapshot, plan, end)
        tiers, total_bound = tighter(tiers, total_bound, theirs)
    tiers = with_greedy(start.given, tiers, _kueue(start), pol)
    return _solved(plan, "OPTIMAL" if done else "FEASIBLE", limit, tiers, total_bound)


def _class_bound(start: _Start, params: CpSatParams) -> ClassBound | None:
    """Beyond RESTRICT_CELLS the model's stages prove nothing about the full
    problem: the host-class LP bounds its tiers after the search.  Built
    before the layout is restricted (it must stay a relaxation)."""
    if start.problem.layout.cells <= RESTRICT_CELLS:
        return None
    # Imported here: solver.bound builds on this package (its LP is this
    # model's rows), so a module-level import would be circular.
    from placewise.solver.bound.tiers import ClassBound

    return ClassBound(start.problem, unpriced(params))


def _start(
    snapshot: Snapshot,
    params: CpSatParams,
    warm: Plan | None,
    limit: Budget | None = None,
) -> _Start:
    """Work about to finish left to finish, the problem compiled once, the
    warm start chosen and settled, the workloads the model cannot express
    fixed at the warm start's decision.

    Beyond LARGE_CELLS (the large path, :func:`_large`) best-fit evicts only
    within the budget's WARM_SHARE, and the warm start is not settled here:
    the final settle of :func:`solve_cpsat` validates the plan once, where
    settling here too cost a second whole validation (~5 s of CPU at 50,000
    hosts; best-fit's warm start rarely needs it, see ``_Evictions.hold``)."""
    limit = limit or Budget.of(params.time_limit)
    given = snapshot
    snapshot = _leave_to_finish(snapshot, params.policy)
    held = reservation_of(snapshot, params.policy)  # closed to shut-out work
    began = limit.spent()
    problem = compile_problem(snapshot, reservation=held)
    compiled = limit.spent() - began
    large = problem.layout.cells > LARGE_CELLS
    evict = Budget(limit.start, limit.start + WARM_SHARE * limit.seconds)
    warm, reasons, kueue = _warm_start(
        snapshot, problem, params, warm, evict if large else None
    )
    if not large:
        warm = settle_preemptions(snapshot, warm)
    problem = _keep_unsupported(snapshot, problem, warm)
    return _Start(given, snapshot, problem, warm, reasons, kueue, compiled)


def _build(start: _Start, params: CpSatParams, limit: Budget) -> tuple[CPModel, bool]:
    """The CP model; beyond RESTRICT_CELLS on each pod set's roomiest
    domains only (then ``True``: its stages prove nothing about the full
    problem)."""
    data, layout = start.problem.data, start.problem.layout
    restricted = layout.cells > RESTRICT_CELLS
    if restricted:
        keep = plan_domains(data, layout, start.warm.admissions)
        restrict(data, layout, keep, RESTRICT_TO)
    model = CPModel(start.problem, params)
    log.info("cpsat: model of %d variables built at %.1fs", model.size, limit.spent())
    log.debug(
        "cpsat: %d constraints, %d stages, %d cells",
        len(model.model.Proto().constraints),
        len(model.stages),
        start.problem.layout.cells,
    )
    return model, restricted


def _hint(model: CPModel, warm: Plan, hints: Sequence[Plan]) -> dict[int, int] | None:
    """The warm start as values of the model, else the first of ``hints``
    that is a plan of the model (else a cold start)."""
    hint = model.hint(warm)
    for other in hints:
        hint = hint if hint is not None else model.hint(other)
    if hint is None:
        log.warning("cpsat: the warm start is not representable; cold start")
    return hint


def _fairness_floor(start: _Start, model: CPModel) -> Fraction | None:
    """Fair sharing on: never less fair than Kueue's own plan (the warm
    start), whatever the tiers gain; the acceptance (:mod:`.decode.accept`) checks
    the exact shares, this row keeps the search away from worse ones."""
    share = model.objective.largest_share
    if share is None:
        return None
    floor = largest_weighted_share(start.snapshot, start.warm)
    if floor is not None:
        model.model.add(share <= math.ceil(floor * SCALE) + SLACK)
    return floor


def _finished(start: _Start, searched: Plan) -> Plan:
    """The searched plan filled with what still fits, its victims settled,
    its pending workloads' reasons said."""
    plan = settle_preemptions(start.snapshot, fill(start.problem, searched))
    # Settling may withdraw admissions that lived on a victim's room: the
    # leftovers may still hold them elsewhere (fill never preempts, but may
    # land on room a victim freed, so the result is settled once more).
    plan = settle_preemptions(start.snapshot, fill(start.problem, plan))
    return _with_reasons(plan, explain(start.problem, plan))


def _kueue(start: _Start) -> Plan | None:
    """Kueue's greedy plan on the caller's snapshot, when it ran."""
    if start.kueue is not None and start.snapshot is not start.given:
        # The warm start left work about to finish alone; Kueue does not.
        return outcome_to_plan(start.given, run_greedy(start.given), "greedy", 0.0)
    return start.kueue


def _solved(
    plan: Plan,
    status: str,
    limit: Budget,
    tiers: tuple[TierResult, ...],
    total_bound: int | None,
) -> Plan:
    """The plan with its solver report: status, wall time, GPUs per tier."""
    return plan.model_copy(
        update={
            "solver": SolverInfo(
                name="cpsat",
                status=status,
                wall_seconds=limit.spent(),
                objective=float(sum(t.gpus for t in tiers)),
                bound=None if total_bound is None else float(total_bound),
                tiers=tiers,
            )
        }
    )


def _large(start: _Start, params: CpSatParams, limit: Budget) -> Plan:
    """Beyond LARGE_CELLS the full model would not build and search within
    the budget: the warm start, filled with what fits beside its victims,
    is improved part by part (``search.partition:PartitionSearch``: each
    round a better plan or none), and the
    host-class LP (:mod:`placewise.solver.bound.tiers`) proves each tier's
    bound — the relaxed model's if an LP does not finish in time, the
    pending demand's (``placewise.solver.bound.tiers:demand_tiers``) when
    no time is left for either.  Every step keeps to the budget less the
    final validation's reserve (``solve:_reserve``): at 50,000 hosts
    compiling and warm-starting take most of a 25 s limit, and the plan
    still returns within it."""
    from placewise.solver.bound.tiers import class_tiers, demand_tiers

    problem = start.problem
    plan = _filled_around_victims(problem, start.warm)
    end = limit.less_margin().short_of(_reserve(start))
    search = end.short_of(LARGE_BOUND_SHARE * limit.seconds)
    part = _partition(start, params) if search.remaining() > MIN_BUDGET else None
    if part is not None and search.remaining() > MIN_BUDGET:
        found = PartitionSearch(start.snapshot, problem, params, part, start.reasons)
        better = found.run(plan, search)
        # Each round ends higher on the part's stages; the floor is checked
        # on the whole plan all the same (the tiers never go below it).
        pol = params.policy
        if better is not plan and primary_vector(
            start.snapshot, better, pol
        ) >= primary_vector(start.snapshot, plan, pol):
            plan = better
    why = explain(problem, plan) if end.remaining() > MIN_BUDGET else {}
    plan = _with_reasons(plan, {**start.reasons, **why})
    flat = unpriced(params)
    got = None
    # Building an LP walks the compiled problem again: not begun without
    # about a compile's time left (at 50,000 hosts it would end past it).
    room = max(MIN_BUDGET, BOUND_PER_COMPILE * start.compiled)
    if end.remaining() > room:
        got = class_tiers(start.snapshot, problem, flat, plan, end)
    if got is None and end.remaining() > room:
        got = relaxed_tiers(start.snapshot, problem, flat, plan, end)
    if got is None:
        log.info("cpsat: no time left for the LP bound; the demand bounds the tiers")
        got = demand_tiers(start.snapshot, plan, params.policy)
    tiers, total_bound = got
    return _solved(plan, "FEASIBLE", limit, tiers, total_bound)


def _reserve(start: _Start) -> float:
    """Seconds kept for the final settle's whole validation
    (:func:`solve_cpsat`): VALIDATE_PER_COMPILE times this solve's compile,
    which walks the same snapshot on the same machine under the same load."""
    return VALIDATE_PER_COMPILE * start.compiled


def _filled_around_victims(problem: Problem, warm: Plan) -> Plan:
    """``warm`` plus what fits with its victims still holding their room and
    quota: room a victim frees is its preemptor's, and a workload of another
    queue filled onto it makes the eviction one Kueue would refuse.  Settling
    that (:mod:`placewise.solver.settle`) withdrew more than the fill added
    and took 80-290 s at 10,000 hosts on the loaded 2-core machine (a whole
    validation per victim); filled this way, scale-10000 seed 1 keeps 26,353
    GPUs at priority 1,000 (26,233 settled) and validates clean in 1.5 s."""
    filled = fill(problem, warm.model_copy(update={"preemptions": ()}))
    return filled.model_copy(update={"preemptions": warm.preemptions})


def _partition(start: _Start, params: CpSatParams) -> Partition | None:
    """The blocks the partition search works on; None where it does not
    apply: a deterministic budget (its rounds are timed), fair sharing (the
    acceptance of a plan reads every cohort's shares) or several clusters
    (a plan's copies compete across them)."""
    snap = start.snapshot
    if params.deterministic_time is not None or snap.fair_sharing.enable:
        return None
    if isinstance(snap, MultiSnapshot):
        return None
    return partition(snap, params.policy)


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


def _with_reasons(plan: Plan, why: dict[str, str]) -> Plan:
    """Pending reasons of the final plan replace the warm start's."""
    pending = tuple(
        p.model_copy(update={"reason": why[p.workload]}) if p.workload in why else p
        for p in plan.pending
    )
    return plan.model_copy(update={"pending": pending})
