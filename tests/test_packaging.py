"""pyproject.toml and the Makefile: what a newcomer installs and runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SOURCES = ("models", "solver", "adapters", "benchmarks")


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0].lower()


def test_license_is_an_spdx_expression() -> None:
    """A ``{text = ...}`` table is deprecated by setuptools (a build warning)."""
    assert PROJECT["license"] == "Apache-2.0"


def test_every_dependency_is_pinned_and_imported() -> None:
    """A pin nothing imports (networkx was one) only costs installs."""
    modules: dict[str, set[str]] = {}
    for module, dists in packages_distributions().items():
        for dist in dists:
            modules.setdefault(dist.lower().replace("_", "-"), set()).add(module)
    code = "\n".join(
        p.read_text() for folder in SOURCES for p in (ROOT / folder).rglob("*.py")
    )
    unused = []
    for requirement in PROJECT["dependencies"]:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", requirement)
        names = modules.get(_name(requirement), set())
        assert names, f"{requirement} is not installed"
        if not any(
            re.search(rf"^\s*(from|import) {re.escape(m)}\b", code, re.M) for m in names
        ):
            unused.append(requirement)
    assert unused == []


def _dry_run(target: str, tmp_path: Path) -> str:
    """The recipe ``make -n`` prints, as if make were run from a shell: under
    ``make test`` the inherited MAKEFLAGS/MAKELEVEL would add "Entering
    directory" lines around it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    }
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_installs_without_dev_extras(tmp_path: Path) -> None:
    demo = _dry_run("demo", tmp_path)
    assert "pip install --quiet -e .\n" in demo
    assert "[dev]" not in demo
    assert "placewise solve instances/demo/*.yaml --compare greedy" in demo
    assert "pip install --quiet -e '.[dev]'" in _dry_run("test", tmp_path)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_ci_lints_with_the_import_contracts_before_testing(tmp_path: Path) -> None:
    """CI runs ``make lint`` (ruff, ruff format, mypy, lint-imports), then tests."""
    lint = _dry_run("lint", tmp_path)
    for tool in ("ruff check .", "ruff format --check .", "mypy -p placewise"):
        assert tool in lint
    assert lint.rstrip().endswith("lint-imports")
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index("make lint") < run.index("make test")
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "importlinter"
    ]["contracts"]
    assert contracts[0]["layers"][-4:] == [
        f"placewise.{layer}" for layer in ("benchmarks", "adapters", "solver", "models")
    ]


def test_the_wheel_holds_one_top_level_package(tmp_path: Path) -> None:
    """``pip install .`` installs ``placewise`` alone (no ``models`` or
    ``adapters`` beside it), with its data files and the console script."""
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q"]
    subprocess.run(
        [*pip, "-w", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("placewise-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "placewise",
        wheel.name[:-4].split("-py")[0] + ".dist-info",
    }
    for data in (
        "adapters/data/serve-demo-cluster.yaml",
        "benchmarks/configs/default.yaml",
    ):
        assert f"placewise/{data}" in names
    (entry,) = [n for n in names if n.endswith("entry_points.txt")]
    assert (
        "placewise = placewise.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
    )
