"""The workers bench (issue 21's "more cores never worse"): real child solves
per worker count, and a table that flags a count whose median tiers fall
below the fewest workers'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.adapters.generate import family, generate, write
from placewise.benchmarks import workers_bench


def test_runs_each_count_and_tables_the_median(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "scale-100-1.json"
    write(generate(family("scale-100"), 1), path, "json")
    out = tmp_path / "runs.json"
    argv = [str(path), "--workers", "1", "2", "--runs", "1", "--time-limit", "1"]
    assert workers_bench.main([*argv, "--out", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [r["workers"] for r in rows] == [1, 2]
    assert all(r["violations"] == 0 and r["tiers"] for r in rows)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| scale-100-1 | 1 |")


def test_a_count_below_the_fewest_workers_is_flagged() -> None:
    def row(w: int, tiers: list[int]) -> dict[str, object]:
        return {
            "instance": "i",
            "workers": w,
            "seed": 0,
            "tiers": tiers,
            "status": "FEASIBLE",
            "wall": 1.0,
            "rss_mb": 1.0,
        }

    text = workers_bench.table(
        [row(2, [5, 3]), row(8, [5, 4]), row(16, [5, 2])], [2, 8, 16]
    )
    last = [line.rsplit("|", 2)[1].strip() for line in text.splitlines()[2:]]
    assert last == ["yes", "yes", "NO"]
