"""What runs beside a stage's CP-SAT search: HiGHS on the same rows, the
rack search, and CP-SAT as a prover.

:class:`Race` lets whichever proves or finds more settle the stage and stop
the others; :class:`Prover` is CP-SAT on one worker proving a bound while
the rack search finds the solutions (large models on one cluster).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.export import export
from placewise.solver.cpsat.search.lns import RackSearch
from placewise.solver.cpsat.tuning import (
    DETERMINISTIC_WORKERS,
    MIN_CPSAT_SECONDS,
    MIN_HIGHS_SECONDS,
    PROVER_PROBING,
    RACE_POLL_SECONDS,
)
from placewise.solver.highs import HighsResult, Running

log = logging.getLogger("placewise.cpsat")


def solver_for(model: CPModel, budget: Budget, det: float | None) -> cp_model.CpSolver:
    params = model.params
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.max_time_in_seconds = max(budget.remaining(), MIN_CPSAT_SECONDS)
    if det is not None:
        # Deterministic work alone decides when to stop: a wall-clock limit
        # would make the plan depend on the machine's load.
        p.max_time_in_seconds = 3600.0
        p.max_deterministic_time = det
        # The same plan for any number of workers: the subsolvers run
        # interleaved in a fixed order instead of racing.
        p.interleave_search = True
        p.num_workers = DETERMINISTIC_WORKERS
    elif params.workers:
        p.num_workers = params.workers
    p.random_seed = params.seed
    p.cp_model_probing_level = 0
    p.max_presolve_iterations = 1
    p.log_search_progress = False
    return solver


def prover_for(model: CPModel, budget: Budget) -> cp_model.CpSolver:
    """One CP-SAT worker that proves the stage's bound while the rack search
    finds its solutions: the lower-bound tree search, after a presolve with
    probing (without it the root stays at the LP's bound).  On scale-1000
    seed 1, objective gpus, it proves +3,107-3,124 GPUs over the running work
    within 6-12 s (the seed decides how long it sits at the LP's +3,148
    first); the optimum, +3,105, it proves in 38 s."""
    solver = solver_for(model, budget, None)
    p = solver.parameters
    p.num_workers = 1
    p.optimize_with_lb_tree_search = True
    p.cp_model_probing_level = PROVER_PROBING
    return solver


class Race:
    """CP-SAT and, beside it, HiGHS on the same rows — the MIP (small
    models) or the LP relaxation (large ones: its bound, in well under a
    second, is what CP-SAT's own search proves only with most of the stage,
    so the rack search can have the time): whichever proves or finds more
    wins; each stops the other once the stage is settled."""

    def __init__(
        self, model: CPModel, stage: Stage, budget: Budget, mip: bool = True
    ) -> None:
        objective = [(c, x.index) for c, x in stage.terms]
        integer = set(range(model.size)) if mip else None
        self.highs: Running | None = None
        try:
            arrays = export(model.model, objective, integer)
        except ValueError as exc:
            log.debug("no HiGHS beside CP-SAT: %s", exc)
        else:
            self.highs = Running(
                arrays, max(budget.remaining(), MIN_HIGHS_SECONDS), want_x=mip
            )
        self.bound: float | None = None
        self.best: float | None = None
        self.answer: HighsResult | None = None
        self.solver: cp_model.CpSolver | None = None
        self.search: RackSearch | None = None
        self.mip = mip
        self.improved_at = time.monotonic()
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
                self.improved_at = time.monotonic()
            self.best = objective if self.best is None else max(self.best, objective)
            self._maybe_stop()

    def hand_over(self, earliest: Budget, stall: float) -> None:
        """Stop CP-SAT once ``earliest`` has run out and no better solution
        came for ``stall`` seconds (in a thread; ends with the solve)."""

        def watch() -> None:
            while not self._done.wait(RACE_POLL_SECONDS):
                now = time.monotonic()
                if now >= earliest.deadline and now - self.improved_at >= stall:
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


class Callback(cp_model.CpSolverSolutionCallback):
    def __init__(self, race: Race) -> None:
        super().__init__()
        self.race = race

    def on_solution_callback(self) -> None:
        self.race.found(self.objective_value)


class Prover:
    """CP-SAT proving one stage's bound (:func:`prover_for`) in a thread, on
    a copy of the model (later stages change the original): it may outlive
    its stage and keep proving while the tie-breaks run."""

    def __init__(
        self, model: CPModel, stage: Stage, budget: Budget, racer: Race
    ) -> None:
        self.model = model
        self.stage = stage
        self.racer = racer
        self.solver = prover_for(model, budget)
        self.solver.best_bound_callback = racer.proved
        racer.solver = self.solver
        self.copy = model.model.clone()
        self.status: cp_model.CpSolverStatus | None = None
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.status = self.solver.solve(self.copy, Callback(self.racer))
            if self.status != cp_model.MODEL_INVALID:
                # The bound it ended with, reported or not.
                self.racer.proved(self.solver.best_objective_bound)
        finally:
            self.done.set()

    def finish(self) -> int | None:
        """Stop proving; the bound it reached (with the LP's)."""
        self.solver.stop_search()
        self._thread.join()
        return self.bound()

    def bound(self) -> int | None:
        got = self.racer.bound
        return None if got is None else int(got + 1e-6)

    def values(self) -> dict[int, int] | None:
        """Its own best solution, once it has ended (None before)."""
        if not self.done.is_set() or self.status not in (
            cp_model.OPTIMAL,
            cp_model.FEASIBLE,
        ):
            return None
        return {
            i: self.solver.value(self.copy.get_int_var_from_proto_index(i))
            for i in range(self.model.size)
        }


@dataclass(slots=True)
class Proofs:
    """Provers allowed to run past their stage until ``budget`` ends."""

    budget: Budget
    running: list[Prover] = field(default_factory=list)

    def alive(self) -> bool:
        return any(not p.done.is_set() for p in self.running)
