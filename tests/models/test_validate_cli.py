"""``placewise validate``: exit 0 feasible, 1 with every violation, 2 unreadable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from placewise.cli import main
from tests.models.validate_builders import DATA, admission, pending, plan, psa

INSTANCE_OBJECTS = [
    pending("default/a", 3, queue="lq-solo"),
    pending("default/b", 2, queue="lq-solo"),
]


@pytest.fixture
def instance(tmp_path: Path) -> list[str]:
    """cohorts.yaml plus two pending workloads of 3 and 2 cpu in solo (N 4)."""
    extra = tmp_path / "workloads.yaml"
    extra.write_text(yaml.safe_dump_all(INSTANCE_OBJECTS))
    return [str(DATA / "cohorts.yaml"), str(extra)]


def write_plan(tmp_path: Path, admitted: list[str], fmt: str = "yaml") -> str:
    entries = [
        admission(
            k,
            "solo",
            psa("main", {"cpu": "f"}, {"cpu": "3" if k.endswith("a") else "2"}),
        )
        for k in admitted
    ]
    waiting = [k for k in ("default/a", "default/b") if k not in admitted]
    doc: dict[str, Any] = plan(entries, pending=waiting).to_dict()
    path = tmp_path / f"plan.{fmt}"
    path.write_text(json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc))
    return str(path)


def test_feasible_plan_exits_0(
    instance: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One admission that fits: exit 0 and a one-line summary."""
    code = main(["validate", *instance, "--plan", write_plan(tmp_path, ["default/a"])])
    assert code == 0
    assert capsys.readouterr().out.startswith("plan is feasible: 1 admission(s)")


def test_infeasible_plan_exits_1_listing_violations(
    instance: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """3 + 2 cpu in a 4-cpu queue: exit 1, one ``rule: workload: message`` line."""
    plan_file = write_plan(tmp_path, ["default/a", "default/b"], fmt="json")
    assert main(["validate", *instance, "--plan", plan_file]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "quota.nominal: default/a, default/b: ClusterQueue solo (no cohort): usage "
        "of cpu in flavor f would be 5, above its nominalQuota 4 by 1"
    ]


def test_json_report(
    instance: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--format json gives a machine-readable verdict with every violation."""
    plan_file = write_plan(tmp_path, ["default/a", "default/b"])
    assert main(["validate", *instance, "--plan", plan_file, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["feasible"] is False
    assert [v["rule"] for v in report["violations"]] == ["quota.nominal"]


@pytest.mark.parametrize(
    "content",
    [
        "admissions: [\n",  # YAML syntax
        "apiVersion: placewise.io/v1alpha1\nkind: Plan\nadmissions: 3\n",  # shape
        "",  # empty file
    ],
)
def test_unreadable_plan_exits_2(
    instance: list[str],
    tmp_path: Path,
    content: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A plan that cannot be parsed is bad input, not an infeasible plan."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    assert main(["validate", *instance, "--plan", str(bad)]) == 2
    assert "bad.yaml" in capsys.readouterr().err


def test_missing_files_exit_2(
    instance: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Missing plan or instance files are reported with their path."""
    assert main(["validate", *instance, "--plan", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err
    plan_file = write_plan(tmp_path, [])
    assert main(["validate", str(tmp_path / "gone.yaml"), "--plan", plan_file]) == 2
    assert "gone.yaml" in capsys.readouterr().err
