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
only proving (:func:`prover_for`); across worker clusters after CP-SAT's
own search has had a share of the stage.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ortools.sat.python import cp_model

from placewise.solver.cpsat.export import export
from placewise.solver.cpsat.lns import RackSearch, neighbourhoods
from placewise.solver.cpsat.model import CPModel
from placewise.solver.cpsat.objective import Stage
from placewise.solver.highs import HighsResult, Running

log = logging.getLogger("placewise.cpsat")

TIER_WEIGHT = 6
"""Time weight of a GPU stage against a tie-break stage (1): the tie-breaks
polish a plan whose GPUs are fixed, the GPU stages are what the plan and its
bound are read for (scale-1000, objective gpus, CP-SAT seeds 0-11: median gap
to the bound 0.8 % with 12 against 1, 1.0 % with 6)."""
TOP_WEIGHT = 12
"""Time weight of the first GPU stage: the top tier is what a bound is read for."""
CLUSTERS_SHARE = (0.2, 0.6)
"""When the model spans worker clusters, CP-SAT searches first — at least
the first share of the stage, at most the second while it keeps finding
better solutions — and the rack search has the rest.  A gang's move to
another cluster frees racks there and fills racks here, rarely one rack
search round (on multi-cluster seed 3 the top tier was found only by
CP-SAT, after 1.1 s of a 3.3 s stage).  On one cluster the rack search pays
from the start, and CP-SAT only proves (:func:`prover_for`)."""
STALL_SHARE = 0.1
"""CP-SAT without a better solution for this share of the stage has stalled."""
DUAL_SHARE = 0.25
"""Share of a GPU stage's time the relaxed model may use for its ceiling."""


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


Progress = Callable[[str], None]


def solver_for(model: CPModel, budget: float, det: float | None) -> cp_model.CpSolver:
    params = model.params
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = max(budget, 0.05)
    if det is not None:
        # Deterministic work alone decides when to stop: a wall-clock limit
        # would make the plan depend on the machine's load.
        p.max_time_in_seconds = 3600.0
        p.max_deterministic_time = det
        # The same plan for any number of workers: the subsolvers run
        # interleaved in a fixed order instead of racing.
        p.interleave_search = True
        p.num_workers = 8
    elif params.workers:
        p.num_workers = params.workers
    p.random_seed = params.seed
    p.cp_model_probing_level = 0
    p.max_presolve_iterations = 1
    p.log_search_progress = False
    return solver


def prover_for(model: CPModel, budget: float) -> cp_model.CpSolver:
    """One CP-SAT worker that proves the stage's bound while the rack search
    finds its solutions: the lower-bound tree search, after a presolve with
    probing (without it the root stays at the LP's bound).  At 1,000 hosts
    it proves in 5-8 s what the LP relaxation cannot: scale-1000 seed 1,
    objective gpus, 3,109 over the running GPUs where the LP says 3,148 and
    the best plan found in 60 s has 3,105."""
    solver = solver_for(model, budget, None)
    p = solver.parameters
    p.num_workers = 1
    p.optimize_with_lb_tree_search = True
    p.cp_model_probing_level = 2
    return solver


class _Race:
    """CP-SAT and, beside it, HiGHS on the same rows — the MIP (small
    models) or the LP relaxation (large ones: its bound, in well under a
    second, is what CP-SAT's own search proves only with most of the stage,
    so the rack search can have the time): whichever proves or finds more
    wins; each stops the other once the stage is settled."""

    def __init__(
        self, model: CPModel, stage: Stage, budget: float, mip: bool = True
    ) -> None:
        objective = [(c, x.index) for c, x in stage.terms]
        integer = set(range(model.size)) if mip else None
        self.highs: Running | None = None
        try:
            arrays = export(model.model, objective, integer)
        except ValueError as exc:
            log.debug("no HiGHS beside CP-SAT: %s", exc)
        else:
            self.highs = Running(arrays, max(budget, 0.1), want_x=mip)
        self.bound: float | None = None
        self.best: float | None = None
        self.answer: HighsResult | None = None
        self.solver: cp_model.CpSolver | None = None
        self.search: RackSearch | None = None
        self.mip = mip
        self.improved_at = time.perf_counter()
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._watch = threading.Thread(target=self._wait, daemon=True)
        self._watch.start()

    def _wait(self) -> None:
        if self.highs is None:
            return
        got = self.highs.result()
        with self._lock:
            self.answer = got
            if got is not None and got.bound is not None:
                self._tighten(got.bound)
            self._maybe_stop()

    def _tighten(self, bound: float) -> None:
        self.bound = bound if self.bound is None else min(self.bound, bound)

    def proved(self, bound: float) -> None:
        """CP-SAT's proven bound moved (its best-bound callback)."""
        with self._lock:
            self._tighten(bound)
            self._maybe_stop()

    def _maybe_stop(self) -> None:
        settled = (
            self.mip and self.answer is not None and self.answer.status == "Optimal"
        )
        reached = (
            self.bound is not None
            and self.best is not None
            and self.best >= self.bound - 1e-6
        )
        if (settled or reached) and self.solver is not None:
            self.solver.stop_search()
        if self.search is not None and self.bound is not None:
            self.search.settle_at(int(self.bound + 1e-6))

    def watch(self, search: RackSearch) -> None:
        """Stop ``search`` too once its incumbent reaches the bound."""
        with self._lock:
            self.search = search
            if self.bound is not None:
                search.settle_at(int(self.bound + 1e-6))

    def found(self, objective: float) -> None:
        with self._lock:
            if self.best is None or objective > self.best:
                self.improved_at = time.perf_counter()
            self.best = objective if self.best is None else max(self.best, objective)
            self._maybe_stop()

    def hand_over(self, earliest: float, stall: float) -> None:
        """Stop CP-SAT once past ``earliest`` without a better solution for
        ``stall`` seconds (in a thread; ends with the solve)."""

        def watch() -> None:
            while not self._done.wait(0.05):
                now = time.perf_counter()
                if now >= earliest and now - self.improved_at >= stall:
                    with self._lock:
                        if self.solver is not None:
                            self.solver.stop_search()
                    return

        threading.Thread(target=watch, daemon=True).start()

    def solved(self) -> None:
        self._done.set()

    def finish(self, timeout: float) -> HighsResult | None:
        self._watch.join(max(timeout, 0.0))
        if self.highs is not None:
            self.highs.stop()
        self._watch.join(1.0)
        return self.answer


class _Callback(cp_model.CpSolverSolutionCallback):
    def __init__(self, race: _Race) -> None:
        super().__init__()
        self.race = race

    def on_solution_callback(self) -> None:
        self.race.found(self.objective_value)


def solve_stage(
    model: CPModel,
    stage: Stage,
    values: dict[int, int] | None,
    budget: float,
    det: float | None,
    race: bool = False,
    lns: RackSearch | None = None,
) -> tuple[str, dict[int, int] | None, int | None]:
    """Maximise one stage: (status, values, proven bound).  ``race``: HiGHS's
    MIP runs beside CP-SAT; ``lns``: the rack search runs beside CP-SAT,
    which only proves (one cluster), or follows it (several)."""
    began = time.perf_counter()
    model.model.maximize(sum(c * x for c, x in stage.terms))
    model.model.clear_hints()  # type: ignore[no-untyped-call]
    if values is not None:
        for i, val in values.items():
            model.model.add_hint(model.model.get_int_var_from_proto_index(i), val)
    racer = None
    if race:
        racer = _Race(model, stage, budget)
    elif lns is not None:
        racer = _Race(model, stage, budget, mip=False)
    beside = lns is not None and not lns.hoods.clusters and values is not None
    workers = model.params.workers or 2
    if beside:
        assert lns is not None and racer is not None and values is not None
        solver = prover_for(model, budget)
        solver.best_bound_callback = racer.proved
        lns.listener = racer.found
        racer.watch(lns)
        racer.found(stage.value(values))
        lns.start(stage, values, began + budget, max(1, workers - 1))
    elif lns is not None:
        least, most = CLUSTERS_SHARE
        solver = solver_for(model, budget * most, det)
        assert racer is not None
        racer.hand_over(began + budget * least, budget * STALL_SHARE)
    else:
        solver = solver_for(model, budget, det)
    if race:
        # HiGHS takes one of the workers.
        solver.parameters.num_workers = max(1, workers - 1)
    if racer is not None:
        racer.solver = solver
        status = solver.solve(model.model, _Callback(racer))
        racer.solved()
    else:
        status = solver.solve(model.model)
    found: dict[int, int] | None = None
    bound: int | None = None
    kind = "NO_SOLUTION"
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        found = {
            i: solver.value(model.model.get_int_var_from_proto_index(i))
            for i in range(model.size)
        }
        kind = "OPTIMAL" if status == cp_model.OPTIMAL else "FEASIBLE"
        bound = (
            stage.value(found)
            if status == cp_model.OPTIMAL
            else int(solver.best_objective_bound + 1e-6)
        )
    if race and racer is not None:
        found, kind, bound = _settle(
            model,
            stage,
            racer.finish(budget - (time.perf_counter() - began)),
            found,
            kind,
            bound,
        )
    start = found if found is not None else values
    settled = bound is not None and start is not None and stage.value(start) >= bound
    searching = lns is not None and not beside and kind != "OPTIMAL"
    if searching and start is not None and not settled:
        # CP-SAT had its share; the rack search improves its incumbent for
        # the rest, until the LP's bound (still running, maybe) says it
        # cannot.
        assert lns is not None and racer is not None
        if bound is not None:
            lns.settle_at(bound)
        racer.watch(lns)
        lns.start(stage, start, began + budget, workers)
        lns.wait()
    if lns is not None and lns.best is not None:
        searched = lns.result()
        log.info("lns: %d rounds, %d improving", lns.rounds, lns.improved)
        if searched is not None and (
            found is None or stage.value(searched) > stage.value(found)
        ):
            found, kind = searched, "FEASIBLE"
    if not race and racer is not None:
        answer = racer.finish(0.0)
        found, kind, bound = _settle(model, stage, answer, found, kind, bound)
    if racer is not None and racer.bound is not None:
        # CP-SAT's bound as its callback last reported it: kept even when
        # the prover ends without a solution of its own.
        proven = int(racer.bound + 1e-6)
        bound = proven if bound is None else min(bound, proven)
    if found is None:
        return "NO_SOLUTION", None, bound
    best = stage.value(found)
    if bound is not None and bound <= best:
        kind = "OPTIMAL"
    return kind, found, None if bound is None else max(bound, best)


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
    deadline: float,
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
    for k, stage in enumerate(stages):
        began = time.perf_counter()
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
            continue
        share = (deadline - began) * weights[k] / sum(weights[k:])
        det = det_total * weights[k] / sum(weights) if det_total else None
        ceiling = None
        if dual is not None and relaxed is not None:
            status, _, ceiling = solve_stage(
                relaxed, dual, None, share * DUAL_SHARE, det and det * DUAL_SHARE
            )
            if ceiling is not None:
                model.model.add(expr <= ceiling)
        if current is not None and ceiling is not None and current >= ceiling:
            results.append(
                StageResult(stage, "OPTIMAL", current, current, 0.0, ceiling)
            )
        elif deadline - time.perf_counter() < 0.05 and det is None:
            if current is None:
                results.append(StageResult(stage, "NO_SOLUTION", None, None, 0.0))
                break
            results.append(StageResult(stage, "FEASIBLE", current, None, 0.0, ceiling))
        else:
            remaining = share - (time.perf_counter() - began)
            search = None
            if hoods is not None and stage.gpus and det is None:
                search = RackSearch(model, hoods, model.params.seed + k)
            status, found, bound = solve_stage(
                model, stage, values, remaining, det, race and bool(stage.gpus), search
            )
            if found is not None and (current is None or stage.value(found) > current):
                # Only a strictly better solution replaces the incumbent: one
                # that merely equals it on this stage may be worse on the
                # stages still to come.
                values = found
            elif values is None:
                results.append(StageResult(stage, "NO_SOLUTION", None, None, 0.0))
                break
            got = stage.value(values)
            if ceiling is not None and bound is not None:
                bound = min(bound, ceiling)
            kind = "OPTIMAL" if bound is not None and bound <= got else status
            if kind == "NO_SOLUTION":
                kind = "FEASIBLE"
            seconds = time.perf_counter() - began
            results.append(StageResult(stage, kind, got, bound, seconds, ceiling))
        best = results[-1].value
        assert best is not None
        model.model.add(expr >= best)
        if dual_expr is not None:
            relaxed.model.add(dual_expr >= best)  # type: ignore[union-attr]
        if progress is not None:
            r = results[-1]
            progress(
                f"{stage.name}: {r.status} {r.value} (bound {r.bound}, relaxed "
                f"{r.relaxed_bound}), {r.seconds:.1f}s"
            )
    return values, results
