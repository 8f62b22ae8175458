"""Runs tasks in worker processes: solve, validate, measure.

Each task runs in a fresh process (:func:`isolated`) so that
``getrusage``'s peak RSS is that task's own and a crash or an out-of-memory
kill takes down one task, not the run.  Processes fork from a forkserver
that has already imported the solvers, so a fresh process costs
milliseconds, not the seconds of importing OR-Tools again.

A task's outcome is never dropped: a solver exception, a timeout, a dead
worker and a plan the validator rejects all come back as a
:class:`RunResult` with ``ok=False`` and the reason.
"""

from __future__ import annotations

import multiprocessing
import resource
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, Protocol

from placewise.benchmarks.harness.matrix import (
    AGGREGATE_BOUND_FAMILIES,
    LIMIT,
    Task,
    generate_snapshot,
)
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.metrics import Held, Metrics, compute

if TYPE_CHECKING:
    from placewise.benchmarks.sweep.executors import Executor

MAX_VIOLATIONS_KEPT = 10


@dataclass(slots=True)
class RunResult:
    """Everything one task produced; plain data so it pickles."""

    family: str
    instance: str
    seed: int
    solver: str
    ok: bool = False
    error: str | None = None
    """Why the task failed: exception, timeout, dead worker, invalid plan."""
    hosts: int = 0
    pending: int = 0
    status: str = ""
    wall_s: float = 0.0
    """Wall time of the solve (or bound) call alone."""
    peak_mib: float = 0.0
    """Peak RSS of the task's process (interpreter and libraries included)."""
    violations: list[str] = field(default_factory=list)
    n_violations: int = 0
    metrics: Metrics | None = None
    bound: float | None = None
    bound_method: str | None = None
    running_gpus: int | None = None
    objective: float | None = None
    solver_bound: float | None = None


class TaskTimeout(Exception):
    """The task's wall budget ran out."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise TaskTimeout


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def solve_task(task: Task, snap: Snapshot) -> tuple[Plan, list[Held]]:
    """Run the task's solver; baselines also report their partial gangs."""
    if task.solver == "kueue":
        from placewise.solver.solve import SolveParams, solve

        return solve(snap, SolveParams(solver="greedy")), []
    if task.solver == "cpsat":
        from placewise.solver.solve import SolveParams, solve

        params = SolveParams(
            solver="cpsat",
            time_limit=task.time_limit,
            workers=task.workers,
            seed=task.instance.seed,
        )
        return solve(snap, params), []
    from placewise.solver.baselines import run_baseline

    out = run_baseline(task.solver, snap, seed=task.instance.seed)
    held = [
        Held(p.workload, p.pods_placed, p.pods_total, p.accelerators_held, p.nodes)
        for p in out.partial
    ]
    return out.plan, held


def run_task(task: Task) -> RunResult:
    """The worker body: generate, solve (timed), validate, measure."""
    result = RunResult(
        family=task.instance.family,
        instance=task.instance.label,
        seed=task.instance.seed,
        solver=task.solver,
    )
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, task.timeout)
    try:
        snap = generate_snapshot(task.instance)
        result.hosts = len(snap.nodes)
        result.pending = len(snap.pending)
        if task.solver == LIMIT:
            _bound(task, snap, result)
        else:
            start = time.perf_counter()
            plan, held = solve_task(task, snap)
            result.wall_s = time.perf_counter() - start
            signal.setitimer(signal.ITIMER_REAL, 0)
            _check(snap, plan, held, result)
    except TaskTimeout:
        result.error = f"timed out after {task.timeout:.0f} s"
    except Exception as exc:  # reported, never dropped
        tb = traceback.format_exception_only(type(exc), exc)
        result.error = "".join(tb).strip()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    result.peak_mib = _peak_mib()
    return result


def _bound(task: Task, snap: Snapshot, result: RunResult) -> None:
    from placewise.solver.bound import aggregate_bound, lp_bound, running_gpus

    start = time.perf_counter()
    if task.instance.family in AGGREGATE_BOUND_FAMILIES:
        result.bound, result.bound_method = aggregate_bound(snap), "aggregate"
    else:
        found = lp_bound(snap)
        result.bound, result.bound_method = found.value, found.method
    result.wall_s = time.perf_counter() - start
    result.running_gpus = running_gpus(snap)
    result.status = "BOUND"
    result.ok = True


def _check(snap: Snapshot, plan: Plan, held: list[Held], result: RunResult) -> None:
    """Validate the plan and score it; an invalid plan is a failed run."""
    result.status = plan.solver.status
    result.objective = plan.solver.objective
    result.solver_bound = plan.solver.bound
    violations = validate(snap, plan)
    result.n_violations = len(violations)
    result.violations = [str(v) for v in violations[:MAX_VIOLATIONS_KEPT]]
    result.metrics = compute(snap, plan, held)
    if violations:
        result.error = (
            f"plan fails the validator ({len(violations)} violation(s)); "
            f"first: {violations[0]}"
        )
    else:
        result.ok = True


# -- the pool ----------------------------------------------------------------------


class Job(Protocol):
    """Any other unit of work the pool runs (the trace replay, a simulation)."""

    @property
    def label(self) -> str: ...

    def execute(self) -> Any: ...

    def failed(self, why: str) -> Any: ...


Work = Task | Job
Progress = Callable[[Work, Any], None]


def execute(work: Work) -> Any:
    """The function every worker process runs."""
    if isinstance(work, Task):
        return run_task(work)
    return work.execute()


def failed(work: Work, why: str) -> Any:
    if isinstance(work, Task):
        return _failed(work, why)
    return work.failed(why)


WORKER_PRELOAD = ("placewise.benchmarks.harness.runner",)
"""What the executor's worker imports: it only forks each task's process."""


def _context() -> multiprocessing.context.BaseContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(
        [
            "placewise.benchmarks.harness.runner",
            "placewise.benchmarks.harness.simulate",
            "placewise.solver.solve",
            "placewise.solver.baselines",
            "placewise.solver.bound",
        ]
    )
    return ctx


def run_tasks(
    tasks: Sequence[Work],
    jobs: int,
    progress: Progress | None = None,
    executor: Executor | None = None,
) -> list[Any]:
    """Run every task, each in its own process, through ``executor`` (the
    sweep's: this process handing out one task at a time, a local pool of
    ``jobs`` workers, or Ray; default: the first for ``jobs`` 1, else the
    pool).  Whichever it is, its worker runs :func:`isolated`, so a task's
    peak memory, its timeout and a crash stay the task's own.

    Results come back in completion order; a :class:`Task` gives a
    :class:`RunResult`, any other job whatever its ``execute`` returns.
    The caller starts and closes an executor it passes in.
    """
    from placewise.benchmarks.sweep.executors import make_executor

    results: list[Any] = []

    def record(task: Work, res: Any) -> None:
        results.append(res)
        if progress is not None:
            progress(task, res)

    if executor is not None:
        executor.map(tasks, isolated, record, failed)
        return results
    own = make_executor(False, None, jobs, WORKER_PRELOAD)
    own.start()
    try:
        own.map(tasks, isolated, record, failed)
    finally:
        own.close()
    return results


def isolated(task: Work) -> Any:
    """One task in a fresh process of its own (forked from a forkserver that
    has imported the solvers): its peak RSS is its own, and a dead process
    (killed, out of memory) is that task's failure, not the run's."""
    with ProcessPoolExecutor(
        max_workers=1, mp_context=_context(), max_tasks_per_child=1
    ) as pool:
        try:
            return pool.submit(execute, task).result()
        except BrokenProcessPool:
            return failed(task, "worker process died (killed or out of memory)")
        except Exception as exc:  # e.g. a result that failed to pickle
            return failed(task, f"worker error: {exc!r}")


def _failed(task: Task, why: str) -> RunResult:
    return RunResult(
        family=task.instance.family,
        instance=task.instance.label,
        seed=task.instance.seed,
        solver=task.solver,
        error=why,
    )
