"""``solve --moves K`` and the policy's ``moves`` section through the CLI:
bad budgets are located input errors (exit 2), plans carry their moves."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml

from placewise.cli import main
from placewise.models.moves import MOVABLE_LABEL
from placewise.solver.move_policy import PolicyError, parse_moves
from tests.solver.test_defrag import write_instance

JOBS = [("h1", 1), ("h3", 1)]
"""One job on each rack: the gang needs one of them moved."""


def _instance(tmp_path: Path) -> Path:
    return write_instance(tmp_path / "i.yaml", JOBS)


def _solve(tmp_path: Path, *extra: str) -> tuple[int, dict[str, object]]:
    out = tmp_path / "plan.yaml"
    args = ["solve", str(_instance(tmp_path)), "--time-limit", "2", "--workers", "1"]
    code = main([*args, *extra, "-o", str(out)])
    return code, yaml.safe_load(out.read_text()) if code == 0 else {}


def test_moves_k_moves_one_job_and_the_plan_validates(tmp_path: Path) -> None:
    code, plan = _solve(tmp_path, "--moves", "1")
    assert code == 0
    moves = plan["moves"]
    assert isinstance(moves, list) and len(moves) == 1
    assert moves[0]["lostGpuHours"] == 0
    assert moves[0]["from"] != moves[0]["to"]
    assert "default/gang" in [a["workload"] for a in plan["admissions"]]  # type: ignore[index]
    plan_file = tmp_path / "plan.yaml"
    args = ["validate", str(tmp_path / "i.yaml"), "--plan", str(plan_file)]
    assert main([*args, "--moves", "1"]) == 0
    assert main([*args, "--moves", "0"]) == 1  # over a budget of none


def test_without_a_budget_nothing_moves(tmp_path: Path) -> None:
    code, plan = _solve(tmp_path)
    assert code == 0 and "moves" not in plan


def test_the_policy_budget_and_moves_override(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("moves: {budget: {count: 0}}\n")
    code, plan = _solve(tmp_path, "--policy", str(policy))
    assert code == 0 and "moves" not in plan
    code, plan = _solve(tmp_path, "--policy", str(policy), "--moves", "1")
    assert code == 0 and len(plan["moves"]) == 1  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("moves: {budget: {count: -1}}", "moves.budget.count"),
        ("moves: {budget: {count: two}}", "moves.budget.count"),
        ("moves: {budget: {lost_gpu_hours: -0.5}}", "moves.budget.lost_gpu_hours"),
        ("moves: {budget: {lost_gpu_hours: lots}}", "moves.budget.lost_gpu_hours"),
        ("moves: {movable: {queues: [nope]}}", "moves.movable.queues"),
        ("moves: {movable: {priority_at_most: 1.5}}", "moves.movable.priority_at_most"),
        ("moves: {budgets: {}}", "moves"),
        ("moves: {price: -1}", "moves.price"),
        ("moves: {price: cheap}", "moves.price"),
    ],
)
def test_bad_move_policy_is_exit_2_with_file_object_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, field: str
) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(text + "\n")
    code, _ = _solve(tmp_path, "--policy", str(policy))
    assert code == 2
    err = capsys.readouterr().err
    assert str(policy) in err and "Policy" in err and f"field {field}" in err
    assert "Traceback" not in err


def test_negative_moves_flag_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["solve", str(_instance(tmp_path)), "--moves", "-1"])
    assert exit_.value.code == 2
    assert "--moves" in capsys.readouterr().err


def test_parse_moves_names_the_field() -> None:
    with pytest.raises(PolicyError) as err:
        parse_moves({"budget": {"count": True}})
    assert err.value.field == "moves.budget.count"
    rules = parse_moves(
        {"budget": {"lost_gpu_hours": 2}, "movable": {"queues": ["b", "a", "b"]}}
    )
    assert rules.enabled and rules.count is None and rules.queues == ("a", "b")
    assert rules.lost_budget_seconds == 7200


def test_a_movable_label_on_a_pending_workload_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = _instance(tmp_path)
    docs = list(yaml.safe_load_all(path.read_text()))
    gang = next(d for d in docs if d["metadata"].get("name") == "gang")
    gang["metadata"]["labels"] = {MOVABLE_LABEL: "true"}
    path.write_text(yaml.safe_dump_all(docs))
    with caplog.at_level(logging.WARNING, logger="placewise"):
        code = main(
            ["solve", str(path), "--solver", "greedy", "-o", str(tmp_path / "o")]
        )
    assert code == 0
    assert any(
        "default/gang" in r.getMessage() and "not running" in r.getMessage()
        for r in caplog.records
    )


def test_the_table_shows_moves_and_certificates(tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    args = ["solve", str(_instance(tmp_path)), "--time-limit", "2", "--workers", "1"]
    assert main([*args, "--moves", "1", "--format", "table", "-o", str(out)]) == 0
    text = out.read_text()
    assert "Moved (1)" in text and "lost GPU-hours" in text


def test_compare_counts_moved_workloads_apart(tmp_path: Path) -> None:
    out = tmp_path / "c.txt"
    args = ["solve", str(_instance(tmp_path)), "--time-limit", "2", "--workers", "1"]
    assert main([*args, "--moves", "1", "--compare", "greedy", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()

    def cells(label: str) -> list[str]:
        line = next(line for line in lines if label in line)
        return [c.strip() for c in line.split("│")[2:-1]]

    assert cells("moved workloads") == ["0 (0)", "1 (0)"]  # greedy, cpsat
    assert cells("admitted workloads") == ["0 (0)", "1 (8)"]  # not the moved job
