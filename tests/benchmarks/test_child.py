"""The benchmarks' child runs (benchmarks/child.py) are real functions: each
prints one JSON line with the figures its benchmark reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.adapters.generate import family, generate, write
from placewise.benchmarks import child


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("child") / "scale-100.json"
    write(generate(family("scale-100"), 1), path, "json")
    return path


def test_load_counts_the_objects_of_the_instance(
    instance: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert child.main(["load", str(instance)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["nodes"] == 100 and got["workloads"] > 0
    assert got["wall"] > 0 and got["rss_mb"] > 0


def test_solve_and_greedy_report_validated_plans(instance: Path) -> None:
    mine = child.solve(str(instance), "cpsat", "1", "1", "tiers", "0")
    theirs = child.greedy(str(instance))
    assert mine["violations"] == 0 == theirs["violations"]
    assert mine["gpus_after"] > 0 and mine["tiers"]
    # A FALLBACK plan (the warm start) reports no bounds.
    fell_back = mine["status"] == "FALLBACK"
    assert len(mine["bounds"]) == (0 if fell_back else len(mine["tiers"]))
    assert theirs["admitted"] > 0 and theirs["cycles"] > 0


def test_every_child_is_named() -> None:
    assert set(child.CHILDREN) == {"solve", "bound", "greedy", "load"}
