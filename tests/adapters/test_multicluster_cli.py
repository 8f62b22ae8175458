"""``placewise solve/validate MANAGER... --cluster NAME=FILE``: exit codes,
output in the workers' names, every bad option listed at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from placewise.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "multicluster"
CLUSTERS = [
    "--cluster",
    f"east={DATA / 'east.yaml'}",
    "--cluster",
    f"west={DATA / 'west.yaml'}",
]


def test_solve_then_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.yaml"
    args = [str(DATA / "manager.yaml"), *CLUSTERS]
    assert (
        main(["solve", *args, "--time-limit", "2", "--workers", "1", "-o", str(out)])
        == 0
    )
    plan = yaml.safe_load(out.read_text())
    assert {a["workload"]: a["cluster"] for a in plan["admissions"]} == {
        "team-a/eval-any": "west",
        "team-a/train-h100": "east",
        "team-a/tune-a100": "west",
    }
    assert main(["validate", *args, "--plan", str(out)]) == 0
    assert "feasible in 2 cluster(s)" in capsys.readouterr().out
    # The same admission in both clusters: exit 1, the rule named.
    twin = dict(plan["admissions"][0], cluster="east")
    plan["admissions"].append(twin)
    out.write_text(yaml.safe_dump(plan))
    assert main(["validate", *args, "--plan", str(out)]) == 1
    assert "multicluster.admitted-twice" in capsys.readouterr().out


@pytest.mark.parametrize("solver", ["greedy", "multikueue-incremental"])
def test_baselines_from_the_command_line(
    solver: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "solve",
            str(DATA / "manager.yaml"),
            *CLUSTERS,
            "--solver",
            solver,
            "--format",
            "json",
        ]
    )
    assert code == 0
    assert '"cluster": "east"' in capsys.readouterr().out


def test_bad_options_all_listed(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "solve",
            str(DATA / "manager.yaml"),
            "--cluster",
            "east",
            "--cluster",
            f"west={DATA / 'west.yaml'}",
            "--cluster",
            f"west={DATA / 'east.yaml'}",
            "--cluster",
            "x=",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "--cluster east: expected NAME=FILE" in err
    assert "cluster west is given twice" in err
    assert "--cluster x=: names no file" in err


def test_single_cluster_baselines_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["solve", str(DATA / "manager.yaml"), *CLUSTERS, "--solver", "kube-default"]
    )
    assert code == 2
    assert "single-cluster baseline" in capsys.readouterr().err


def test_policy_cluster_costs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("clusterCosts: {west: -1, east: 2}\npreferenceCost: true\n")
    code = main(
        ["solve", str(DATA / "manager.yaml"), *CLUSTERS, "--policy", str(policy)]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "clusterCosts.west" in err and "preferenceCost" in err
