"""Plan identity: a digest of the optimizer's plans, to compare two commits.

A restructuring of the optimizer must not change its plans.  With a
deterministic budget (``--deterministic-time``), one worker and a fixed seed
the plan depends on the input alone (README "Determinism"), so the digests
written by two commits are equal exactly when the plans are.  The instances
are the benchmark families up to 1000 hosts (one seed each, generated as
:mod:`placewise.benchmarks.cpsat_bench` generates them) and Kueue's cases
under ``../shared/kueue-cases`` plus the in-repository ``kueue-cases-more``.

    python -m placewise.benchmarks.plan_identity --out before.json
    python -m placewise.benchmarks.plan_identity --out after.json --compare before.json

The wall-clock limit is set far above the deterministic one so that a loaded
machine cannot cut a stage short; the digest leaves out wall seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from placewise.adapters.generate import family, generate, write
from placewise.adapters.io.loader import load_snapshot
from placewise.models.snapshot import Snapshot
from placewise.solver.solve import SolveParams, solve

FAMILIES = (
    "fragmented",
    "multi-team",
    "preemption-heavy",
    "topology-heavy",
    "scale-100",
    "scale-300",
    "scale-1000",
)
"""The bench families small enough to solve in seconds (up to 1000 hosts)."""

ROOT = Path(__file__).resolve().parents[1]
MORE_CASES = ROOT / "tests" / "data" / "kueue-cases-more"


def digest(snap: Snapshot, params: SolveParams) -> dict[str, Any]:
    """The plan's content without its wall time (admissions, placements,
    preemptions, pending reasons, status, objective, bounds, tiers)."""
    plan = solve(snap, params).to_dict()
    plan["solver"].pop("wallSeconds", None)
    return plan


def _guarded(snap_of: Any, params: SolveParams) -> dict[str, Any]:
    """A failure is part of the digest too (a changed error is a change)."""
    try:
        return digest(snap_of(), params)
    except Exception as e:  # recorded, compared like a plan
        return {"error": f"{type(e).__name__}: {e}"}


def family_plans(params: SolveParams, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for fam in FAMILIES:
            path = Path(tmp) / f"{fam}-{seed}.json"
            write(generate(family(fam), seed), path, "json")
            out[f"family/{fam}/{seed}"] = _guarded(
                lambda p=path: load_snapshot([p]), params
            )
            print(f"family {fam} done", file=sys.stderr, flush=True)
    return out


def case_plans(params: SolveParams, shared: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for root in (shared / "kueue-cases", MORE_CASES):
        for inst in sorted(root.glob("**/instance.yaml")):
            key = f"case/{root.name}/{inst.parent.relative_to(root)}"
            out[key] = _guarded(lambda p=inst: load_snapshot([p]), params)
    return out


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Keys whose digests differ (or are in one file only)."""
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="a digest to compare with")
    parser.add_argument("--deterministic-time", type=float, default=2.0)
    parser.add_argument("--case-deterministic-time", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=0, help="CP-SAT's seed")
    parser.add_argument("--instance-seed", type=int, default=1)
    parser.add_argument(
        "--shared", type=Path, default=ROOT.parent / "shared", help="../shared"
    )
    parser.add_argument("--no-cases", action="store_true")
    parser.add_argument("--no-families", action="store_true")
    args = parser.parse_args(argv)

    def params(det: float) -> SolveParams:
        return SolveParams(
            solver="cpsat",
            time_limit=600.0,
            workers=1,
            seed=args.seed,
            deterministic_time=det,
        )

    plans: dict[str, Any] = {}
    if not args.no_families:
        plans |= family_plans(params(args.deterministic_time), args.instance_seed)
    if not args.no_cases:
        if not (args.shared / "kueue-cases").is_dir():
            parser.error(f"{args.shared}/kueue-cases not found (--shared DIR)")
        plans |= case_plans(params(args.case_deterministic_time), args.shared)
    args.out.write_text(json.dumps(plans, indent=1, sort_keys=True) + "\n")
    print(f"{len(plans)} plans written to {args.out}")
    if args.compare is None:
        return 0
    diff = compare(json.loads(args.compare.read_text()), plans)
    for k in diff:
        print(f"differs: {k}")
    print(f"{len(plans) - len(diff)} identical, {len(diff)} different")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
