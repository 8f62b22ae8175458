"""What more cores buy: the same instances solved with ``--workers 2, 8, 16``.

Issue 21's last item: users run placewise on 8-64-core machines, and more
workers must never make a plan worse.  Each solve is a fresh process
(:mod:`placewise.benchmarks.child`, the tiers objective), one run per
(instance, CP-SAT seed, worker count), the worker counts interleaved within a
seed so that a drifting machine does not favour one count.  Give instance
files (generate them once: ``placewise generate --family F --seed S --format
json -o F-S.json``) so that every count solves the same bytes::

    python -m placewise.benchmarks.workers_bench fragmented-1.json \\
        scale-1000-1.json scale-10000-1.json --runs 3 --out workers.json

The table gives, per instance and count, the median tier vector (the run whose
tiers are the median lexicographically), its status, and the median wall and
peak memory; the last column says whether that median is at least the
2-worker median on every tier read in order (lexicographically).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from placewise.benchmarks.child import run

Row = dict[str, Any]


def measure(paths: list[str], workers: list[int], runs: int, limit: float) -> list[Row]:
    """One child solve per (instance, seed, workers), printed as it ends."""
    rows: list[Row] = []
    for path in paths:
        for seed in range(runs):
            for w in workers:
                got = run(
                    "solve", path, "cpsat", str(limit), str(w), "tiers", str(seed)
                )
                row = {"instance": Path(path).stem, "workers": w, "seed": seed, **got}
                print(json.dumps(row), file=sys.stderr, flush=True)
                rows.append(row)
    return rows


def table(rows: list[Row], workers: list[int]) -> str:
    """Markdown: the median run per (instance, workers)."""
    out = [
        "| instance | workers | median tiers (GPUs) | status | wall s | peak MB "
        "| ≥ the fewest workers' |",
        "|---|---|---|---|---|---|---|",
    ]
    for inst in dict.fromkeys(r["instance"] for r in rows):
        base: list[int] | None = None
        for w in workers:
            runs = sorted(
                (r for r in rows if r["instance"] == inst and r["workers"] == w),
                key=lambda r: r["tiers"],
            )
            if not runs:
                continue
            mid = runs[len(runs) // 2]
            tiers = list(mid["tiers"])
            base = tiers if base is None else base
            out.append(
                f"| {inst} | {w} | {' / '.join(f'{t:,}' for t in tiers)} "
                f"| {mid['status']} "
                f"| {statistics.median(r['wall'] for r in runs):.1f} "
                f"| {statistics.median(r['rss_mb'] for r in runs):.0f} "
                f"| {'yes' if tiers >= base else 'NO'} |"
            )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="workers_bench", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("instances", nargs="+", help="instance files (JSON or YAML)")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 8, 16])
    ap.add_argument("--runs", type=int, default=3, help="CP-SAT seeds per count")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--out", help="write every run as JSON here")
    args = ap.parse_args(argv)
    rows = measure(args.instances, args.workers, args.runs, args.time_limit)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    print(table(rows, args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
