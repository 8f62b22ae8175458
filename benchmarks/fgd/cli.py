"""``python -m placewise.benchmarks.fgd.cli``: replay openb under the FGD protocol.

Runs each (policy, seed) in its own process (``--jobs`` at a time), writes one
JSON per run under ``--out/<trace>/<policy>/``, then prints the table, checks
Best-Fit/FGD against the published numbers and draws the allocation curves.
Exit status 1 means a baseline missed the published value at 130% by more
than 0.5 points.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from placewise.benchmarks.fgd import report
from placewise.benchmarks.fgd.policies.window import WindowParams

__all__ = ["main", "parse_seeds"]

POLICIES = ("bestfit", "fgd", "greedy", "window")


def parse_seeds(text: str) -> list[int]:
    """``42..51`` (inclusive), ``42,45`` or a mix of both."""
    out: list[int] = []
    for part in text.split(","):
        if ".." in part:
            lo, hi = part.split("..")
            out.extend(range(int(lo), int(hi) + 1))
        elif part:
            out.append(int(part))
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m placewise.benchmarks.fgd.cli",
        description="Alibaba openb GPU trace replay under the FGD protocol.",
    )
    p.add_argument(
        "--policy",
        default="bestfit,fgd,window",
        help=f"comma list of {', '.join(POLICIES)}",
    )
    p.add_argument("--seeds", default="42..51", help="e.g. 42..51 or 42,43")
    p.add_argument("--trace", default="default", help="openb_pod_list_<trace>.csv")
    p.add_argument(
        "--window",
        type=int,
        default=WindowParams.window,
        help="arrivals decided together by the window policy (W)",
    )
    p.add_argument(
        "--candidates",
        type=int,
        default=WindowParams.candidates,
        help="best nodes per pod kept in the window model",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=WindowParams.time_limit,
        help="CP-SAT deterministic time per window solve",
    )
    p.add_argument(
        "--rho",
        type=int,
        default=WindowParams.rho,
        help="milli-CPU per milli-GPU protected by the stranding term",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        help="CP-SAT workers per solve (1 = reproducible)",
    )
    p.add_argument("--jobs", type=int, default=1, help="runs in parallel")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("benchmarks/results/fgd"),
        help="directory for per-run JSON, table and figure",
    )
    p.add_argument(
        "--shared",
        type=Path,
        default=None,
        help="the shared folder (default: ../shared beside the repo)",
    )
    p.add_argument(
        "--bound",
        action="store_true",
        help="also solve the all-arrivals-known LP bound per seed",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="seed 42, default trace, bestfit+fgd+window, bound, 2 jobs",
    )
    p.add_argument("--no-plot", action="store_true", help="skip the figure")
    return p


def _run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One replay in a worker process; returns the summary as a dict."""
    from placewise.benchmarks.fgd.policies.bestfit import BestFit
    from placewise.benchmarks.fgd.policies.fgd import FGD
    from placewise.benchmarks.fgd.policies.greedy import StrandAwareFGD
    from placewise.benchmarks.fgd.policies.window import WindowPolicy
    from placewise.benchmarks.fgd.protocol import make_workload
    from placewise.benchmarks.fgd.published import POLICY_COLUMNS, load_published
    from placewise.benchmarks.fgd.replay import replay
    from placewise.benchmarks.fgd.trace import load_trace

    shared = None if job["shared"] is None else Path(job["shared"])
    trace = load_trace(job["trace"], shared=shared)
    wl = make_workload(trace, job["seed"])
    name = job["policy"]
    params = WindowParams(**job["params"])
    policy: Any
    if name == "bestfit":
        policy = BestFit(wl)
    elif name == "fgd":
        policy = FGD(trace, wl)
    elif name == "greedy":
        policy = StrandAwareFGD(trace, wl, rho=params.rho)
    else:
        policy = WindowPolicy(trace, wl, params)
    c0 = time.process_time()
    res = replay(trace, wl, policy)
    cpu = time.process_time() - c0
    published = None
    if name in POLICY_COLUMNS:
        published = load_published(name, job["trace"], shared).get(job["seed"])
    extra: dict[str, Any] = {}
    if isinstance(policy, WindowPolicy):
        st = policy.stats
        extra = {
            "candidates": params.candidates,
            "time_limit": params.time_limit,
            "rho": params.rho,
            "status": st.status,
            "windows_changed_by_cpsat": st.changed,
            "windows_with_drops": st.drop_windows,
            "drops_proven_not_all_fit": st.drop_proven,
            "windows_placing_more_than_greedy": st.placed_more,
            "window_cpu_median_s": round(
                sorted(st.cpu_seconds)[len(st.cpu_seconds) // 2], 3
            ),
            "model_bools_median": sorted(st.model_bools)[len(st.model_bools) // 2],
        }
    if job["bound"]:
        from placewise.benchmarks.fgd.bound import lp_bound

        b = lp_bound(trace, wl)
        extra["lp_bound_pct"] = round(b.alloc_pct, 3)
        extra["lp_bound_seconds"] = round(b.seconds, 2)
    window = policy.window
    s = report.summarize(res, job["trace"], window, cpu, published, extra)
    out = Path(job["out"]) / job["trace"] / name / f"seed{job['seed']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(s.to_json())
    return asdict(s)


def _print_table(rows: list[dict[str, Any]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a project dependency
        for r in rows:
            print(r)
        return
    table = Table(title="openb replay: GPU allocation (%)")
    for col in rows[0]:
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(*("" if v is None else str(v) for v in r.values()))
    Console(width=200).print(table)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.quick:
        args.seeds, args.trace, args.bound = "42", "default", True
        args.policy, args.jobs = "bestfit,fgd,window", max(args.jobs, 2)
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        print(f"unknown policy {bad}; choose from {POLICIES}", file=sys.stderr)
        return 2
    params = {
        "window": args.window,
        "candidates": args.candidates,
        "time_limit": args.time_limit,
        "num_workers": args.workers,
        "rho": args.rho,
    }
    seeds = parse_seeds(args.seeds)
    # slowest first, so parallel jobs finish together
    order = {"window": 0, "greedy": 1, "fgd": 2, "bestfit": 3}
    jobs = [
        {
            "trace": args.trace,
            "policy": p,
            "seed": s,
            "params": params,
            "out": str(args.out),
            "shared": None if args.shared is None else str(args.shared),
            # the bound depends on the seed only: attach it to one policy's runs
            "bound": args.bound and p == policies[0],
        }
        for p in sorted(policies, key=lambda p: order[p])
        for s in seeds
    ]
    t0 = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=ctx) as pool:
        done = list(pool.map(_run_one, jobs))
    runs = [report.RunSummary(**d) for d in done]
    rows = report.table_rows(runs)
    _print_table(rows)
    bounds = [r.extra["lp_bound_pct"] for r in runs if "lp_bound_pct" in r.extra]
    if bounds:
        print(f"LP bound (all arrivals known): {min(bounds):.2f}..{max(bounds):.2f} %")
    print(f"total wall {time.perf_counter() - t0:.0f} s; results in {args.out}")
    if not args.no_plot:
        from placewise.benchmarks.fgd.published import load_published

        published = {
            p: load_published(p, args.trace, args.shared) for p in ("bestfit", "fgd")
        }
        path = report.plot_alloc(
            runs,
            published,
            args.out / f"alloc_{args.trace}.png",
            bound_pct=min(bounds) if bounds else None,
        )
        print(f"figure: {path}")
    failed = [
        r for r in runs if r.diff_130 is not None and abs(r.diff_130) > report.TOLERANCE
    ]
    for r in failed:
        print(
            f"MISMATCH {r.policy} seed {r.seed}: {r.alloc_130} vs published "
            f"{r.published_130}",
            file=sys.stderr,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
