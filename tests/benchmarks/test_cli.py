"""The command-line entry the bench harness will call."""

from __future__ import annotations

from pathlib import Path

from benchmarks.fgd import report
from benchmarks.fgd.cli import main, parse_seeds


def test_parse_seeds() -> None:
    assert parse_seeds("42..45") == [42, 43, 44, 45]
    assert parse_seeds("42,50..51") == [42, 50, 51]


def test_bestfit_run_writes_summary_and_validates(shared: Path, tmp_path: Path) -> None:
    code = main(
        [
            "--policy",
            "bestfit",
            "--seeds",
            "48",
            "--out",
            str(tmp_path),
            "--shared",
            str(shared),
            "--no-plot",
        ]
    )
    assert code == 0
    rows, runs = report.collect(tmp_path)
    assert [r.alloc_130 for r in runs] == [92.95]  # published seed 48
    assert runs[0].diff_130 == 0.0
    assert rows[-1]["seed"] == "mean of 1" and rows[-1]["alloc@130"] == 92.95
