"""Loader benchmark: a generated dump of 10,000 Nodes, 20,000 running Pods and
2,000 pending Workloads, as JSON (``kubectl get -o json`` style) and as YAML.

Each load runs in a fresh process so peak memory (ru_maxrss) is the
loader's own; the figure reported is the median wall time of ``--runs``.

    python -m placewise.benchmarks.load_bench [--runs 3] [--family load-10k] [--seed 1]
        [--formats json,yaml]

Targets (2-core machine): JSON under 5 s, YAML under 20 s, under 1.5 GiB.

Measured (JSON, ``--runs 3``, median, shared 2-core machine at load average ~4,
back to back): 3.43 s before the ``scale`` branch (2bb3db7), 1.83 s after
(min 1.69 s), peak 250 MB both; YAML (one run each) 6.7 s before, 5.4 s
after. Before, a third of the JSON time was the cyclic GC walking the parsed
tree and ~45 % of the CPU parsing with item positions and the depth walk;
see benchmarks/README.md ("Kueue's greedy and the loader at 10,000 hosts").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from placewise.adapters.generate import family, generate, write
from placewise.benchmarks.child import run


def measure(path: Path, runs: int) -> dict[str, float]:
    results = []
    for _ in range(runs):
        results.append(run("load", str(path)))
    return {
        "wall_median_s": statistics.median(r["wall"] for r in results),
        "wall_min_s": min(r["wall"] for r in results),
        "peak_rss_mb": max(r["rss_mb"] for r in results),
        "objects": results[0]["nodes"] + results[0]["pods"] + results[0]["workloads"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--family", default="load-10k")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--formats", default="json,yaml", help="comma-separated: json, yaml"
    )
    args = parser.parse_args(argv)
    objects = generate(family(args.family), args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            path = Path(tmp) / f"dump.{fmt}"
            write(objects, path, fmt)
            r = measure(path, args.runs)
            size = path.stat().st_size / 2**20
            print(
                f"{fmt}: {size:.1f} MB, {r['objects']:.0f} objects, load median "
                f"{r['wall_median_s']:.2f} s (min {r['wall_min_s']:.2f} s), peak "
                f"{r['peak_rss_mb']:.0f} MB over {args.runs} runs"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
