"""Solving the objective's stages in order, and what they proved.

Each stage maximises its criterion with the earlier stages held at the
values found; the incumbent hints every stage, so none can end below it.
A GPU stage is first solved on the *relaxed* model (pods need only room in
their flavor's total capacity; no StrictFIFO): small, usually proven within
a fraction of a second, and a valid ceiling on every plan the validator
accepts.  That ceiling caps the stage in the full model — when the incumbent
already reaches it the full stage is skipped as proven, otherwise CP-SAT
stops as soon as it reaches it.  Time is shared by weight (GPU stages 6,
the top one 12, tie-breaks 1) over the stages left, so a stage that ends
early hands its time to the next.  Small models race HiGHS's MIP beside
CP-SAT on each GPU stage.  Large ones run HiGHS's LP relaxation beside it
and the rack search (:mod:`.lns`): on one cluster from the start, CP-SAT
only proving (:func:`.race.prover_for`); across worker clusters after CP-SAT's
own search has had a share of the stage.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.export import export
from placewise.solver.cpsat.search.lns import RackSearch, neighbourhoods
from placewise.solver.cpsat.search.race import (
    Callback,
    Proofs,
    Prover,
    Race,
    solver_for,
)
from placewise.solver.cpsat.tuning import (
    CLUSTERS_SHARE,
    DEFAULT_WORKERS,
    DUAL_SHARE,
    MIN_HIGHS_SECONDS,
    STAGE_FLOOR_SECONDS,
    STALL_SHARE,
    TIER_WEIGHT,
    TOP_WEIGHT,
    UNPRICED_SHARE,
)
from placewise.solver.highs import HighsResult, Running

log = logging.getLogger("placewise.cpsat")


@dataclass(slots=True)
class StageResult:
    stage: Stage
    status: str
    """OPTIMAL, FEASIBLE, SKIPPED (incumbent at the ceiling) or NO_SOLUTION."""
    value: int | None
    bound: int | None
    """Proven bound on the stage objective over the full model (None: none)."""
    seconds: float
    relaxed_bound: int | None = None
    """Proven bound from the relaxed model: valid for every validator-feasible
    plan whatever the full model was restricted to."""
    gpu_bound: int | None = None
    """Priced stages: a proven bound on the stage's GPUs (delta), from the
    unpriced objective over the same model (:func:`unpriced_bound`)."""


Progress = Callable[[str], None]


def solve_stage(
    model: CPModel,
    stage: Stage,
    values: dict[int, int] | None,
    budget: Budget,
    det: float | None,
    race: bool = False,
    lns: RackSearch | None = None,
    proofs: Proofs | None = None,
) -> tuple[str, dict[int, int] | None, int | None]:
    """Maximise one stage: (status, values, proven bound).  ``race``: HiGHS's
    MIP runs beside CP-SAT; ``lns``: the rack search runs beside CP-SAT,
    which only proves (one cluster, :func:`prove_and_search`), or follows
    it (several)."""
    model.model.maximize(sum(c * x for c, x in stage.terms))
    model.model.clear_hints()  # type: ignore[no-untyped-call]
    if values is not None:
        for i, val in values.items():
            model.model.add_hint(model.model.get_int_var_from_proto_index(i), val)
    if lns is not None and not lns.hoods.clusters and values is not None:
        return prove_and_search(model, stage, values, budget, lns, proofs)
    racer = None
    if race:
        racer = Race(model, stage, budget)
    elif lns is not None:
        racer = Race(model, stage, budget, mip=False)
    workers = model.params.workers or DEFAULT_WORKERS
    least, most = CLUSTERS_SHARE if lns is not None else (1.0, 1.0)
    solver = solver_for(model, budget.share(most), det)
    if race or (proofs is not None and proofs.alive()):
        # HiGHS, or a prover still at work, takes one of the workers.
        solver.parameters.num_workers = max(1, workers - 1)
    if lns is not None and racer is not None:
        racer.hand_over(budget.share(least), budget.seconds * STALL_SHARE)
    if racer is not None:
        racer.solver = solver
        status = solver.solve(model.model, Callback(racer))
        racer.solved()
    else:
        status = solver.solve(model.model)
    found, kind, bound = _read(model, stage, solver, status)
    if race and racer is not None:
        found, kind, bound = _settle(
            model,
            stage,
            racer.finish(budget.remaining()),
            found,
            kind,
            bound,
        )
    start = found if found is not None else values
    settled = bound is not None and start is not None and stage.value(start) >= bound
    if lns is not None and kind != "OPTIMAL" and start is not None and not settled:
        # CP-SAT had its share; the rack search improves its incumbent for
        # the rest, until the LP's bound (still running, maybe) says it
        # cannot.
        assert racer is not None
        if bound is not None:
            lns.settle_at(bound)
        racer.watch(lns)
        lns.start(stage, start, budget, workers)
        lns.wait()
        searched = lns.result()
        log.info("lns: %d rounds, %d improving", lns.rounds, lns.improved)
        if searched is not None and stage.value(searched) > stage.value(start):
            found, kind = searched, "FEASIBLE"
    if not race and racer is not None:
        answer = racer.finish(0.0)
        found, kind, bound = _settle(model, stage, answer, found, kind, bound)
    return _verdict(stage, found, kind, bound)


def _read(
    model: CPModel,
    stage: Stage,
    solver: cp_model.CpSolver,
    status: cp_model.CpSolverStatus,
) -> tuple[dict[int, int] | None, str, int | None]:
    """CP-SAT's answer: (values, status, proven bound)."""
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, "NO_SOLUTION", None
    found = {
        i: solver.value(model.model.get_int_var_from_proto_index(i))
        for i in range(model.size)
    }
    if status == cp_model.OPTIMAL:
        return found, "OPTIMAL", stage.value(found)
    return found, "FEASIBLE", int(solver.best_objective_bound + 1e-6)


def _verdict(
    stage: Stage, found: dict[int, int] | None, kind: str, bound: int | None
) -> tuple[str, dict[int, int] | None, int | None]:
    if found is None:
        return "NO_SOLUTION", None, bound
    best = stage.value(found)
    if bound is not None and bound <= best:
        kind = "OPTIMAL"
    return kind, found, None if bound is None else max(bound, best)


def prove_and_search(
    model: CPModel,
    stage: Stage,
    values: dict[int, int],
    budget: Budget,
    lns: RackSearch,
    proofs: Proofs | None = None,
) -> tuple[str, dict[int, int] | None, int | None]:
    """One cluster: the rack search finds (every core but one), CP-SAT
    proves on the last (none with one worker: the LP's bound then), HiGHS's
    LP beside them settles the stage early when the relaxation is tight.
    With ``proofs`` the prover keeps running after the stage until
    ``proofs.budget`` ends (the caller reads its bound then)."""
    workers = model.params.workers or DEFAULT_WORKERS
    racer = Race(model, stage, budget, mip=False)
    lns.listener = racer.found
    racer.watch(lns)
    racer.found(stage.value(values))
    prover = None
    if workers > 1:
        prover = Prover(
            model,
            stage,
            budget if proofs is None else budget.or_later(proofs.budget),
            racer,
        )
        threading.Thread(
            target=_stop_when_proven, args=(prover, lns, budget), daemon=True
        ).start()
    lns.start(stage, values, budget, max(1, workers - 1))
    lns.wait()
    found = lns.result()
    log.info("lns: %d rounds, %d improving", lns.rounds, lns.improved)
    racer.finish(0.0)
    if prover is None:
        bound = None if racer.bound is None else int(racer.bound + 1e-6)
    elif proofs is not None and not prover.done.is_set():
        proofs.running.append(prover)
        bound = prover.bound()
    else:
        bound = prover.finish()
        theirs = prover.values()
        if theirs is not None and (
            found is None or stage.value(theirs) > stage.value(found)
        ):
            found = theirs
    return _verdict(stage, found, "FEASIBLE", bound)


def _stop_when_proven(prover: Prover, lns: RackSearch, budget: Budget) -> None:
    """A prover that ends inside the stage has proven its bound (or its own
    solution optimal): the search cannot improve on it."""
    if prover.done.wait(budget.remaining()):
        lns.stop()


def _settle(
    model: CPModel,
    stage: Stage,
    answer: HighsResult | None,
    found: dict[int, int] | None,
    kind: str,
    bound: int | None,
) -> tuple[dict[int, int] | None, str, int | None]:
    """HiGHS's answer merged into CP-SAT's: the smaller bound, the better
    solution (a MIP's, when the model accepts it)."""
    if answer is None:
        return found, kind, bound
    if answer.bound is not None:
        proven = int(answer.bound + 1e-6)
        bound = proven if bound is None else min(bound, proven)
    if answer.x is not None:
        theirs = {i: round(v) for i, v in enumerate(answer.x)}
        mine = stage.value(found) if found is not None else None
        if (mine is None or stage.value(theirs) > mine) and model.satisfies(theirs):
            found, kind = theirs, "FEASIBLE"
    return found, kind, bound


def run_stages(
    model: CPModel,
    values: dict[int, int] | None,
    budget: Budget,
    relaxed: CPModel | None = None,
    progress: Progress | None = None,
    race: bool = False,
    lns: bool = False,
) -> tuple[dict[int, int] | None, list[StageResult]]:
    """Solve every stage; returns the final values and per-stage results.
    ``race``: GPU stages also run HiGHS's MIP beside CP-SAT; ``lns``: the
    rack search (:mod:`.lns`) instead, when the model places on enough
    domains (not under a deterministic budget: its rounds are timed)."""
    results: list[StageResult] = []
    stages = model.stages
    weights = [TIER_WEIGHT if s.gpus else 1 for s in stages]
    if stages and stages[0].gpus:
        weights[0] = TOP_WEIGHT
    det_total = model.params.deterministic_time
    hoods = neighbourhoods(model, model.params.policy.accelerators) if lns else None
    # The last GPU stage's prover may keep proving while the tie-breaks run.
    proofs = Proofs(budget)
    last_gpus = max((k for k, s in enumerate(stages) if s.gpus), default=-1)
    for k, stage in enumerate(stages):
        expr = sum(c * x for c, x in stage.terms)
        dual = relaxed.stages[k] if relaxed is not None and stage.gpus else None
        dual_expr = sum(c * x for c, x in dual.terms) if dual is not None else None
        current = stage.value(values) if values is not None else None
        if current is not None and current >= stage.hi:
            results.append(
                StageResult(stage, "SKIPPED", current, current, 0.0, current)
            )
            model.model.add(expr >= current)
            if dual_expr is not None:
                relaxed.model.add(dual_expr >= current)  # type: ignore[union-attr]
            if progress is not None:
                progress(stage_line(results[-1], values))
            log.debug("%s", raw_line(results[-1]))
            continue
        share = budget.share(weights[k] / sum(weights[k:]))
        det = det_total * weights[k] / sum(weights) if det_total else None
        ceiling = None
        if dual is not None and relaxed is not None:
            status, _, ceiling = solve_stage(
                relaxed, dual, None, share.share(DUAL_SHARE), det and det * DUAL_SHARE
            )
            if ceiling is not None:
                model.model.add(expr <= ceiling)
        if current is not None and ceiling is not None and current >= ceiling:
            results.append(
                StageResult(stage, "OPTIMAL", current, current, 0.0, ceiling)
            )
        elif budget.remaining() < STAGE_FLOOR_SECONDS and det is None:
            if current is None:
                results.append(StageResult(stage, "NO_SOLUTION", None, None, 0.0))
                break
            results.append(StageResult(stage, "FEASIBLE", current, None, 0.0, ceiling))
        else:
            # A priced stage keeps a share for the bound on its GPUs.
            priced = bool(stage.costs) and relaxed is None
            reserve = share.seconds * UNPRICED_SHARE if priced else 0.0
            lp = unpriced_lp(model, stage, share) if priced and det is None else None
            search = None
            if hoods is not None and stage.gpus and det is None:
                search = RackSearch(model, hoods, model.params.seed + k)
            status, found, bound = solve_stage(
                model,
                stage,
                values,
                share.short_of(reserve),
                det,
                race and bool(stage.gpus),
                search,
                proofs if k >= last_gpus else None,
            )
            if found is not None and (current is None or stage.value(found) > current):
                # Only a strictly better solution replaces the incumbent: one
                # that merely equals it on this stage may be worse on the
                # stages still to come.
                values = found
            elif values is None:
                if lp is not None:
                    lp.stop()
                results.append(StageResult(stage, "NO_SOLUTION", None, None, 0.0))
                break
            got = stage.value(values)
            if ceiling is not None and bound is not None:
                bound = min(bound, ceiling)
            kind = "OPTIMAL" if bound is not None and bound <= got else status
            if kind == "NO_SOLUTION":
                kind = "FEASIBLE"
            gpu_bound = None
            if priced:
                work = det * UNPRICED_SHARE if det is not None else None
                gpu_bound = unpriced_bound(model, stage, values, share, work, lp)
                if gpu_bound is not None:
                    log.debug(
                        "%s: unpriced bound, GPUs %+d at most", stage.name, gpu_bound
                    )
            seconds = share.spent()
            results.append(
                StageResult(stage, kind, got, bound, seconds, ceiling, gpu_bound)
            )
        best = results[-1].value
        assert best is not None
        model.model.add(expr >= best)
        if dual_expr is not None:
            relaxed.model.add(dual_expr >= best)  # type: ignore[union-attr]
        if progress is not None:
            progress(stage_line(results[-1], values))
        log.debug("%s", raw_line(results[-1]))
    for prover in proofs.running:
        proved_later(results, prover)
    return values, results


def unpriced_lp(model: CPModel, stage: Stage, budget: Budget) -> Running | None:
    """HiGHS's LP relaxation of a priced stage's objective without the price,
    started in a child process on the model as it stands (the stages above
    held): its bound, read when the stage ends, bounds the stage's GPUs."""
    try:
        arrays = export(model.model, [(c, x.index) for c, x in stage.unpriced])
    except ValueError as exc:
        log.debug("no unpriced LP: %s", exc)
        return None
    return Running(arrays, max(budget.remaining(), MIN_HIGHS_SECONDS), want_x=False)


def unpriced_bound(
    model: CPModel,
    stage: Stage,
    values: dict[int, int],
    budget: Budget,
    det: float | None,
    lp: Running | None,
) -> int | None:
    """A proven bound on a priced stage's GPUs (delta) over the model before
    the stage was held: the unpriced LP's (:func:`unpriced_lp`), else what
    CP-SAT proves on the unpriced objective within ``budget`` (``det``: under
    a deterministic budget, CP-SAT alone).  The priced stage's own bound is
    no bound on GPUs: a plan may gain GPUs and pay for them."""
    top: float | None = None
    if lp is not None:
        answer = lp.result(budget.remaining())
        lp.stop()
        if answer is not None and answer.bound is not None:
            top = answer.bound
    if top is None and (det is not None or budget.remaining() > STAGE_FLOOR_SECONDS):
        model.model.maximize(sum(c * x for c, x in stage.unpriced))
        model.model.clear_hints()  # type: ignore[no-untyped-call]
        for i, val in values.items():
            model.model.add_hint(model.model.get_int_var_from_proto_index(i), val)
        solver = solver_for(model, budget, det)
        if solver.solve(model.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            top = solver.best_objective_bound
    if top is None:
        return None
    return int((top - stage.other_lo + 1e-6) // stage.weight)


def proved_later(results: list[StageResult], prover: Prover) -> None:
    """A stage's bound as its prover reached it after the stage ended."""
    proven = prover.finish()
    for r in results:
        if r.stage is prover.stage and proven is not None and r.value is not None:
            r.bound = proven if r.bound is None else min(r.bound, proven)
            r.bound = max(r.bound, r.value)
            if r.bound <= r.value:
                r.status = "OPTIMAL"
            if r.stage.gpus:
                log.info(
                    "%s: bound %s GPUs after the tie-breaks",
                    r.stage.name,
                    f"{r.stage.gpu_bound(r.bound):,}",
                )
            log.debug("%s: bound %d after the tie-breaks", r.stage.name, r.bound)


_WORDS = {
    "OPTIMAL": "optimal",
    "FEASIBLE": "best found, not proven optimal",
    "SKIPPED": "already at its ceiling",
    "NO_SOLUTION": "no solution",
}


def stage_line(r: StageResult, values: dict[int, int] | None) -> str:
    """``-v``'s line for one stage, in the unit a reader plans in: a tier in
    GPUs (admitted minus preempted, as the stage counts them) with its proven
    bound and the gap; a tie-break in words (its objective is an internal
    weighted sum, meaningless outside the model; ``-vv`` has it)."""
    stage, took = r.stage, f"{r.seconds:.1f}s"
    if not stage.gpus or values is None or r.value is None:
        return f"{stage.name}: {_WORDS.get(r.status, r.status.lower())}, {took}"
    gpus = sum(c * values[x.index] for c, x in stage.gpus)
    head = f"{stage.name}: {gpus:+,} GPUs admitted net of preemptions"
    if r.status != "FEASIBLE":
        return f"{head} ({_WORDS.get(r.status, r.status.lower())}), {took}"
    if r.bound is None:
        return f"{head} (no bound proven), {took}"
    bound = stage.gpu_bound(r.bound)
    if r.gpu_bound is not None:  # priced: the unpriced bound, as the plan says
        bound = min(bound, r.gpu_bound)
    bound = max(bound, gpus)
    gap = 100.0 * (bound - gpus) / max(abs(bound), 1)
    return f"{head} (bound {bound:+,}, gap {gap:.1f} %), {took}"


def raw_line(r: StageResult) -> str:
    """``-vv``'s line: the stage's own objective values, as the model has them."""
    return (
        f"{r.stage.name}: {r.status} objective {r.value} (bound {r.bound}, relaxed "
        f"{r.relaxed_bound}), {len(r.stage.terms)} terms, {r.seconds:.1f}s"
    )
