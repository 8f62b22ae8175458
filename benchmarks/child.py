"""One measured run in a fresh process, for the benchmarks.

A benchmark's figures (wall time, peak memory) must be the run's own, not
the parent's after earlier runs; so each run is a child process that prints
one JSON line.  The children are real functions here (ruff, mypy and the
import contracts see them), run as::

    python -m placewise.benchmarks.child solve PATH SOLVER LIMIT WORKERS OBJECTIVE SEED
    python -m placewise.benchmarks.child bound PATH
    python -m placewise.benchmarks.child greedy PATH
    python -m placewise.benchmarks.child load PATH

Each imports what it measures inside the function, so that ``load`` counts
the import of the loader as the benchmark always has.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def solve(
    path: str, solver: str, limit: str, workers: str, objective: str, seed: str
) -> dict[str, Any]:
    """One solve of ``path``: its tier figures, bounds, and validator count."""
    from placewise.adapters.io.loader import load_snapshot
    from placewise.models.validate import validate
    from placewise.solver.bound import gpus_after
    from placewise.solver.policy import Policy, tier_figures
    from placewise.solver.solve import SolveParams
    from placewise.solver.solve import solve as run_solve

    snap = load_snapshot([path])
    pol = Policy(objective=objective)  # type: ignore[arg-type]
    params = SolveParams(
        solver=solver,
        time_limit=float(limit),
        workers=int(workers),
        policy=pol,
        seed=int(seed),
    )
    t = time.perf_counter()
    plan = run_solve(snap, params)
    wall = time.perf_counter() - t
    return {
        "wall": wall,
        "rss_mb": _peak_mb(),
        "gpus_after": gpus_after(snap, plan),
        "status": plan.solver.status,
        "violations": len(validate(snap, plan)),
        "preempted": len(plan.preemptions),
        "tiers": [f.gpus for f in tier_figures(snap, plan, pol)],
        "bounds": [t.bound for t in plan.solver.tiers],
        "bound": plan.solver.bound,
    }


def bound(path: str) -> dict[str, Any]:
    """The model's LP bound on GPUs (``placewise bound``)."""
    from placewise.adapters.io.loader import load_snapshot
    from placewise.solver.bound import lp_bound

    b = lp_bound(load_snapshot([path]))
    return {"bound": b.value, "method": b.method}


def greedy(path: str) -> dict[str, Any]:
    """Kueue's greedy alone: wall and CPU time of its cycles, the plan's size;
    then the settling ``--solver greedy`` adds (timed apart): Kueue's own
    cycles may hand an in-queue victim's room to another queue, which the
    validator's ``preemption.room-elsewhere`` refuses (``raw_violations``)."""
    from placewise.adapters.io.loader import load_snapshot
    from placewise.models.validate import validate
    from placewise.solver.greedy.solver import outcome_to_plan, run_greedy
    from placewise.solver.settle import settle_preemptions

    snap = load_snapshot([path])
    t, c = time.perf_counter(), time.process_time()
    outcome = run_greedy(snap)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    raw = outcome_to_plan(snap, outcome, "greedy", wall)
    t = time.perf_counter()
    plan = settle_preemptions(snap, raw)
    settle = time.perf_counter() - t
    return {
        "wall": wall,
        "cpu": cpu,
        "settle": settle,
        "rss_mb": _peak_mb(),
        "cycles": outcome.cycles,
        "admitted": len(plan.admissions),
        "preempted": len(plan.preemptions),
        "pending": len(plan.pending),
        "raw_violations": len(validate(snap, raw)),
        "violations": len(validate(snap, plan)),
    }


def load(path: str) -> dict[str, Any]:
    """Loading ``path``, the loader's import included."""
    t = time.perf_counter()
    from placewise.adapters.io.loader import load_snapshot

    snap = load_snapshot([path])
    return {
        "wall": time.perf_counter() - t,
        "rss_mb": _peak_mb(),
        "nodes": len(snap.nodes),
        "pods": len(snap.pods),
        "workloads": len(snap.workloads),
    }


CHILDREN: dict[str, Callable[..., dict[str, Any]]] = {
    "solve": solve,
    "bound": bound,
    "greedy": greedy,
    "load": load,
}


def run(what: str, *args: str) -> dict[str, Any]:
    """Run child ``what`` in a fresh interpreter; its JSON result."""
    out = subprocess.run(
        [sys.executable, "-m", "placewise.benchmarks.child", what, *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    what, *args = sys.argv[1:] if argv is None else argv
    print(json.dumps(CHILDREN[what](*args)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
