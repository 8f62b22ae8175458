"""What people read: the plan table, its width, and ``solve --compare``.

The demo (instances/demo) is where Kueue's one-head-at-a-time greedy splits
a gang and preempts, and the optimizer does neither; these tests hold the
demo to that and the output to showing it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from placewise.adapters.io.loader import load_snapshot
from placewise.adapters.io.output import render_table
from placewise.cli import main
from placewise.solver import metrics
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.greedy import solve_greedy
from placewise.solver.solve import SolveParams, solve

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted(str(p) for p in (ROOT / "instances" / "demo").glob("*.yaml"))
FAST = ["--workers", "1", "--time-limit", "5", "--seed", "0"]


@pytest.fixture
def solve_cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., str]:
    """``placewise solve DEMO ARGS...`` in this process; its standard output."""

    def run(*args: str, columns: int = 200) -> str:
        monkeypatch.setenv("COLUMNS", str(columns))
        assert main(["solve", *DEMO, *args]) == 0
        return capsys.readouterr().out

    return run


def _rows(text: str, title: str) -> list[list[str]]:
    """Cells of the table under ``title`` (rich's box drawing), one line each."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith(("│", "┃")):
            rows.append([c.strip() for c in line.strip("│┃").split(line[0])])
    return rows


# -- the demo ------------------------------------------------------------------------


def test_the_demo_shows_what_the_optimizer_wins() -> None:
    """Kueue places the production gang on the tightest rack, splits
    train-llm across racks and preempts sweep-3 for eval-1; the optimizer
    admits the same work, whole, and preempts nothing.  A difference on the
    first objective (GPUs per priority tier), not a tie-break."""
    snap = load_snapshot(DEMO)
    greedy = solve_greedy(snap)
    cpsat = solve_cpsat(snap, CpSatParams(time_limit=5, workers=1, seed=0))
    assert cpsat.solver.status == "OPTIMAL"
    kueue, ours = metrics.compute(snap, greedy), metrics.compute(snap, cpsat)
    assert metrics.compare_tiers(ours.tier_demand, kueue.tier_demand) == 1
    assert [p.workload for p in greedy.preemptions] == ["team-c/sweep-3"]
    assert cpsat.preemptions == () and not cpsat.pending
    assert (kueue.topology_gangs - kueue.gangs_in_domain, kueue.topology_gangs) == (
        1,
        2,
    )
    assert ours.gangs_in_domain == ours.topology_gangs == 2
    assert (kueue.gpu_in_use, ours.gpu_in_use, ours.gpu_capacity) == (54, 62, 64)


def test_one_gpu_total_named_the_same_in_the_table_compare_and_bound() -> None:
    """The demo printed three totals for one plan (``GPUs after 56``,
    ``62/64 busy``, ``bound 56 ... running now: 8``): the plain pods were left
    out of two.  Now each prints GPUs busy: Workloads plus plain pods."""
    from placewise.adapters.cli.bound import _text
    from placewise.adapters.io.output import render_comparison
    from placewise.solver.bound import lp_bound

    snap = load_snapshot(DEMO)
    greedy = solve_greedy(snap)
    cpsat = solve_cpsat(snap, CpSatParams(time_limit=5, workers=1, seed=0))
    ours = metrics.compute(snap, cpsat)
    assert metrics.plain_gpus(snap) == 6  # the serving namespace's pods
    assert ours.gpus_busy == ours.gpus_after + 6 == 62
    assert metrics.busy_gpus(snap, ours.gpus_after) == ours.gpus_busy
    assert "GPUs busy after the plan 62/64" in render_table(cpsat, snap, width=200)
    compare = render_comparison(snap, [greedy, cpsat], width=200)
    row = next(line for line in compare.splitlines() if "GPUs busy after" in line)
    assert [c.strip() for c in row.split("│")[2:4]] == ["54/64", "62/64"]
    bound = _text(lp_bound(snap, "cbc"), metrics.ACCELERATORS, snap)
    assert "at most 62/64" in bound and "busy now:                   14/64" in bound
    assert "GPUs after" not in bound + compare


# -- the plan table ------------------------------------------------------------------


def test_table_honours_columns(solve_cli: Callable[..., str]) -> None:
    """COLUMNS narrows and widens the table (it was fixed at 120)."""
    narrow = solve_cli("--solver", "greedy", "--format", "table", columns=72)
    assert max(map(len, narrow.splitlines())) <= 72
    wide = solve_cli("--solver", "greedy", "--format", "table", columns=200)
    assert 120 < max(map(len, wide.splitlines())) <= 200


def test_table_is_120_wide_in_a_pipe_without_columns() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    cmd = [sys.executable, "-m", "placewise", "solve", *DEMO, "--solver", "greedy"]
    done = subprocess.run(
        [*cmd, "--format", "table"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert max(map(len, done.stdout.splitlines())) == 120


def test_preempted_table_names_each_victims_priority_and_gpus(
    solve_cli: Callable[..., str],
) -> None:
    out = solve_cli("--solver", "greedy", "--format", "table")
    header, *rows = _rows(out, "Preempted (1)")
    assert header == ["workload", "priority", "GPUs", "preemptor", "reason"]
    assert rows == [["team-c/sweep-3", "10", "8", "team-c/eval-1", "InClusterQueue"]]


# -- solve --compare -----------------------------------------------------------------


def test_compare_prints_both_plans_side_by_side(
    solve_cli: Callable[..., str],
) -> None:
    out = solve_cli("--compare", "greedy", *FAST)
    header, *rows = _rows(out, "Plans side by side")
    assert header == ["", "greedy", "cpsat"]
    table = {label: cells for label, *cells in rows}
    assert table["validator"] == ["valid", "valid"]
    assert table["1000 (production)"] == ["+16", "+16"]
    assert table["100 (batch)"] == ["+32", "+32"]
    assert table["10 (best-effort)"] == ["-8", "+0"]
    assert table["preempted workloads (GPUs)"] == ["1 (8)", "0 (0)"]
    assert table["gangs split across domains"] == ["1 of 2", "0 of 2"]
    assert table["GPUs busy after the plan"] == ["54/64", "62/64"]
    header, *rows = _rows(out, "Workloads")
    assert header == ["workload", "priority", "GPUs", "greedy", "cpsat"]
    fates = {r[0]: r[3:] for r in rows if r[0]}
    assert fates["team-b/train-llm"][0].startswith("SPLIT rack-1 + rack-2:")
    assert fates["team-b/train-llm"][1].startswith("rack-1:")
    assert fates["team-c/sweep-3"] == [
        "preempted by team-c/eval-1",
        "keeps running",
    ]


def test_compare_as_yaml_and_json_lists_both_plans(
    solve_cli: Callable[..., str], tmp_path: Path
) -> None:
    out = tmp_path / "plans.yaml"
    assert (
        solve_cli("--compare", "greedy", "--format", "yaml", "-o", str(out), *FAST)
        == ""
    )
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [d["solver"]["name"] for d in docs] == ["greedy", "cpsat"]
    plans = json.loads(solve_cli("--compare", "greedy", "--format", "json", *FAST))
    assert [p["kind"] for p in plans] == ["Plan", "Plan"]


def test_table_header_shows_each_tier_against_its_bound_and_the_greedy() -> None:
    """The optimizer's plan prints, per priority, GPUs after the plan, the
    proven bound and Kueue's figure."""
    snap = load_snapshot(DEMO)
    plan = solve(snap, SolveParams(solver="cpsat", time_limit=5, workers=1))
    text = render_table(plan, snap, width=200)
    for t in plan.solver.tiers:
        assert t.bound is not None and t.greedy is not None
        assert f"priority {t.priority}: {t.gpus} GPUs (bound {t.bound}, " in text
        assert f"greedy {t.greedy})" in text
