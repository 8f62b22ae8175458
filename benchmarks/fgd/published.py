"""The FGD paper's published per-seed curves (``analysis_allo_discrete.csv``)."""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["POLICY_COLUMNS", "load_published", "results_file"]

# our policy name -> the simulator's sc_policy label
POLICY_COLUMNS = {
    "random": "01-Random",
    "dotprod": "02-DotProd",
    "gpuclustering": "03-GpuClustering",
    "gpupacking": "04-GpuPacking",
    "bestfit": "05-BestFit",
    "fgd": "06-FGD",
}


def results_file(shared: Path | None = None) -> Path:
    root = (
        shared if shared is not None else Path(__file__).resolve().parents[3] / "shared"
    )
    return root / "data" / "fgd-sim-expected-results" / "analysis_allo_discrete.csv"


def load_published(
    policy: str, trace: str = "default", shared: Path | None = None
) -> dict[int, dict[int, float]]:
    """seed -> {column k: GPU allocation %} for one policy on one openb trace."""
    label = POLICY_COLUMNS[policy]
    out: dict[int, dict[int, float]] = {}
    with results_file(shared).open(newline="") as fh:
        for row in csv.DictReader(fh):
            if (
                row["workload"] != f"openb_pod_list_{trace}"
                or row["sc_policy"] != label
            ):
                continue
            out[int(row["seed"])] = {
                k: float(row[str(k)]) for k in range(131) if row.get(str(k), "") != ""
            }
    return out
