"""The configuration LP (or a time-limited MIP) of the optimizer's model."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from placewise.models.snapshot import Snapshot
from placewise.solver.bound.classes import class_lp, floor_bound, with_objective
from placewise.solver.bound.figures import running_gpus
from placewise.solver.cpsat.model.constraints import Mode
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.cpsat.search.export import export
from placewise.solver.cpsat.tuning import LARGE_CELLS
from placewise.solver.highs import Arrays, run_highs, run_pulp
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.policy import Policy
from placewise.solver.problem.compile import Problem, compile_problem
from placewise.solver.problem.data import ModelData, outside_demand

LpSolver = Literal["highs", "cbc"]


@dataclass(frozen=True, slots=True)
class BoundResult:
    """The best proven bound and how it was obtained."""

    value: float
    """min(LP bound, aggregate bound), in accelerator units."""
    method: str
    """``lp-highs`` / ``lp-cbc`` / ``mip-highs`` when the model's relaxation
    is the smaller, else ``aggregate``."""
    seconds: float
    lp: float | None = None
    """The floored bound of the full model (None when it could not be solved)."""
    aggregate: float = math.inf
    running: float = 0.0
    """Accelerators running before the plan."""
    status: str = ""
    """The LP/MIP solver's status text."""
    columns: int = 0
    rows: int = 0


def _floor(x: float) -> float:
    return float(floor_bound(x))


def _outside(data: ModelData, accelerators: Sequence[str]) -> int:
    """GPUs of pending workloads the model leaves out (it cannot express
    them): counted whole, which keeps the bound valid."""
    per_tier = outside_demand(
        data,
        lambda w: sum(
            ps.count * sum(q for r, q in ps.requests.items() if r in accelerators)
            for ps in w.pod_sets
        ),
    )
    return sum(per_tier.values())


def _solve(
    snapshot: Snapshot,
    problem: Problem,
    mode: Mode,
    solver: LpSolver,
    accelerators: Sequence[str],
    mip_seconds: float,
) -> tuple[float | None, str, str, int, int]:
    """(floored bound on GPUs after any plan, method, status, columns, rows)."""
    policy = Policy(
        objective="gpus", accelerators=tuple(accelerators), preemption_price=0.0
    )
    model = CPModel(problem, CpSatParams(policy=policy), mode)
    constant = running_gpus(snapshot, accelerators) + _outside(
        problem.data, accelerators
    )
    if not model.stages:
        return float(constant), "lp-" + solver, "no decision", 0, 0
    objective = [(c, x.index) for c, x in model.stages[0].terms]
    integer = set(range(model.size)) if mip_seconds > 0 else None
    arrays: Arrays = export(model.model, objective, integer)
    if solver == "cbc" and integer is None:
        got = run_pulp(arrays)
        method = "lp-cbc"
    else:
        got = run_highs(arrays, mip_seconds)
        method = "mip-highs" if integer else "lp-highs"
    size = (arrays.cost.size, arrays.row_lo.size)
    if got.bound is None:
        return None, method, got.status, *size
    return _floor(got.bound + constant), method, got.status, *size


def _classes(
    snapshot: Snapshot,
    problem: Problem,
    solver: LpSolver,
    accelerators: Sequence[str],
) -> tuple[float | None, str, str, int, int]:
    """The configuration LP over host classes (:mod:`.classes`): as
    :func:`_solve`, for models whose full LP is too large."""
    policy = Policy(
        objective="gpus", accelerators=tuple(accelerators), preemption_price=0.0
    )
    model = CPModel(problem, CpSatParams(policy=policy), "classes")
    constant = running_gpus(snapshot, accelerators) + _outside(
        problem.data, accelerators
    )
    method = "classes-" + solver
    if not model.stages:
        return float(constant), method, "no decision", 0, 0
    arrays = with_objective(class_lp(model), model.stages[0])
    got = run_pulp(arrays) if solver == "cbc" else run_highs(arrays)
    size = (arrays.cost.size, arrays.row_lo.size)
    if got.bound is None:
        return None, method, got.status, *size
    return _floor(got.bound + constant), method, got.status, *size


def lp_bound(
    snapshot: Snapshot,
    solver: LpSolver = "highs",
    accelerators: Sequence[str] = ACCELERATORS,
    mip_seconds: float = 0.0,
) -> BoundResult:
    """The model's LP bound (a MIP's dual bound with ``mip_seconds``) and the
    aggregate ceiling; ``value`` is the smaller.

    Beyond :data:`LARGE_CELLS` candidate cells the full model's LP is not
    solved (at 10,000 hosts HiGHS had not finished after 35 minutes): the
    configuration LP over host classes (:mod:`.classes`, demand aggregated
    per type, a relaxation of the full LP) is, and ``status`` says so."""
    start = time.perf_counter()
    problem = compile_problem(snapshot)
    cells = problem.layout.cells
    if cells > LARGE_CELLS:
        lp, how, status, cols, rows = _classes(snapshot, problem, solver, accelerators)
        status = (
            f"full model skipped: {cells} candidate cells > {LARGE_CELLS}; "
            f"host-class LP {status}"
        )
    else:
        lp, how, status, cols, rows = _solve(
            snapshot, problem, "bound", solver, accelerators, mip_seconds
        )
    agg, *_ = _solve(snapshot, problem, "relaxed", solver, accelerators, 0.0)
    aggregate = agg if agg is not None else math.inf
    method, value = "aggregate", aggregate
    if lp is not None and lp <= aggregate:
        method, value = how, lp
    return BoundResult(
        value=value,
        method=method,
        seconds=time.perf_counter() - start,
        lp=lp,
        aggregate=aggregate,
        running=float(running_gpus(snapshot, accelerators)),
        status=status,
        columns=cols,
        rows=rows,
    )


def class_bound(
    snapshot: Snapshot,
    solver: LpSolver = "highs",
    accelerators: Sequence[str] = ACCELERATORS,
) -> float:
    """The configuration LP over host classes alone (what :func:`lp_bound`
    solves beyond :data:`LARGE_CELLS`), at any size: for tests and benches."""
    got, *_ = _classes(snapshot, compile_problem(snapshot), solver, accelerators)
    return got if got is not None else math.inf


def aggregate_bound(
    snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS
) -> float:
    """The cheap ceiling alone: the model without placement detail."""
    got, *_ = _solve(
        snapshot, compile_problem(snapshot), "relaxed", "highs", accelerators, 0.0
    )
    return got if got is not None else math.inf
