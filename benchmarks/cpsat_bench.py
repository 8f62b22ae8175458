"""Optimizer benchmark: greedy vs CP-SAT vs the LP bound on generated families.

For each (family, seed): admitted GPUs (GPUs of newly admitted workloads),
GPUs running after the plan, the priority-weighted demand vector (admitted
demand per priority tier, highest first), preemptions, wall time and peak
memory (each solve in a fresh process), and the gap of CP-SAT's GPUs-after to
the LP bound on that quantity.  Family parameters are fixed in
``benchmarks/configs`` (committed before any tuning).

    python -m placewise.benchmarks.cpsat_bench [--families fragmented,multi-team]
        [--seeds 1,2,3] [--time-limit 20] [--workers 2]
    python -m placewise.benchmarks.cpsat_bench --families scale-10000 --seeds 1 \
        --time-limit 30
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from placewise.adapters.generate import family, generate, write

CHILD = """
import json, resource, sys, time
from placewise.adapters.io.loader import load_snapshot
from placewise.models.validate import validate
from placewise.solver.bound import gpus_after
from placewise.solver.policy import Policy, primary_vector
from placewise.solver.solve import SolveParams, solve
snap = load_snapshot([sys.argv[1]])
t = time.perf_counter()
plan = solve(snap, SolveParams(solver=sys.argv[2], time_limit=float(sys.argv[3]),
                               workers=int(sys.argv[4])))
wall = time.perf_counter() - t
admitted = sum(q for a in plan.admissions for ps in a.pod_set_assignments
               for r, q in ps.resource_usage.items() if r == "nvidia.com/gpu")
print(json.dumps({
    "wall": wall, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "admitted_gpus": admitted, "gpus_after": gpus_after(snap, plan),
    "admitted": len(plan.admissions), "preempted": len(plan.preemptions),
    "status": plan.solver.status, "violations": len(validate(snap, plan)),
    "demand": primary_vector(snap, plan, Policy())[0::2],
}))
"""

BOUND = """
import json, sys
from placewise.adapters.io.loader import load_snapshot
from placewise.solver.bound import lp_bound
print(json.dumps({"bound": lp_bound(load_snapshot([sys.argv[1]])).value}))
"""


def run(code: str, *args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="fragmented,multi-team")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--time-limit", type=float, default=20.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-bound", action="store_true")
    args = parser.parse_args(argv)
    print(
        "| family | seed | solver | admitted GPUs | GPUs after | LP bound | gap | "
        "demand per tier | preempted | status | wall s | peak MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for fam in args.families.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                path = Path(tmp) / f"{fam}-{seed}.json"
                write(generate(family(fam), seed), path, "json")
                bound = None if args.no_bound else run(BOUND, str(path))["bound"]
                for solver in ("greedy", "cpsat"):
                    r = run(
                        CHILD,
                        str(path),
                        solver,
                        str(args.time_limit),
                        str(args.workers),
                    )
                    after = r["gpus_after"]
                    gap = (
                        f"{100 * (float(bound) - float(after)) / float(bound):.1f}%"  # type: ignore[arg-type]
                        if bound
                        else "-"
                    )
                    print(
                        f"| {fam} | {seed} | {solver} | {r['admitted_gpus']} | "
                        f"{after} | {bound if bound is not None else '-'} | {gap} | "
                        f"{r['demand']} | {r['preempted']} | {r['status']} | "
                        f"{float(r['wall']):.1f} | {float(r['rss_mb']):.0f} |",  # type: ignore[arg-type]
                        flush=True,
                    )
                    if r["violations"]:
                        print(
                            f"  !! {r['violations']} validator violations", flush=True
                        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
