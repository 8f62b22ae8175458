"""The command-line entry the bench harness will call."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import placewise.benchmarks.fgd
from placewise.benchmarks.fgd import report


@pytest.fixture
def cli() -> Iterator[ModuleType]:
    """Import the CLI for one test and forget it afterwards, so tests that
    simulate a build without the entry point still see it missing."""
    mod = importlib.import_module("placewise.benchmarks.fgd.cli")
    yield mod
    sys.modules.pop("placewise.benchmarks.fgd.cli", None)
    if hasattr(placewise.benchmarks.fgd, "cli"):
        delattr(placewise.benchmarks.fgd, "cli")


def test_parse_seeds(cli: ModuleType) -> None:
    parse_seeds = cli.parse_seeds
    assert parse_seeds("42..45") == [42, 43, 44, 45]
    assert parse_seeds("42,50..51") == [42, 50, 51]


def test_bestfit_run_writes_summary_and_validates(
    cli: ModuleType, shared: Path, tmp_path: Path
) -> None:
    code = cli.main(
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
