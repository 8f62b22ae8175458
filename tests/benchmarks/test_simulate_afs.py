"""``placewise simulate`` with admission fair sharing: LocalQueue usage over time.

One 8-GPU host, one job, the greedy: the usage can be worked out by hand
(half-life 1 h, sampling 5 min, so 12 samples halve the gap to the live usage).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.benchmarks.replay import ReplayConfig, run_replay
from placewise.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
CLUSTER = str(DATA / "one-host.yaml")
HEADER = "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status"


def _trace(tmp_path: Path) -> str:
    """One 8-GPU job at 0 running exactly 1 h."""
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,1,8,4,1,0,3600,0,Pass\n")
    return str(path)


def test_usage_accrues_decays_and_carries_the_entry_penalty(tmp_path: Path) -> None:
    config = ReplayConfig(
        instances=(CLUSTER,),
        job_trace=_trace(tmp_path),
        admission_fair_sharing=True,
        drain_s=2 * 3600,
    )
    res = run_replay(config)
    assert res.ok, res.error
    series = dict(res.afs_usage)
    (lq,) = series[0.0]
    a = 1 - 0.5 ** (300 / 3600)
    penalty = 8 * a
    assert series[0.0][lq] == pytest.approx(penalty, abs=1e-8)
    # 12 samples at 8 GPUs halve the gap to 8; the job ends at 3600 s.
    assert series[3600.0][lq] == pytest.approx(8 - (8 - penalty) / 2, abs=1e-6)
    # Nothing runs after that: one more half-life halves it.
    at_end = res.afs_usage[-1]
    assert at_end[0] == 3600.0 or at_end[1][lq] < series[3600.0][lq]


def test_off_by_default_and_the_json_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    res = run_replay(ReplayConfig(instances=(CLUSTER,), job_trace=_trace(tmp_path)))
    assert res.ok and res.afs_usage == []
    assert (
        main(["simulate", CLUSTER, "--job-trace", _trace(tmp_path), "--format", "json"])
        == 0
    )
    assert "afs_usage" not in json.loads(capsys.readouterr().out)["runs"][0]


def test_cli_reports_usage_in_json_table_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["simulate", CLUSTER, "--job-trace", _trace(tmp_path)]
    argv += ["--admission-fair-sharing", "--compare", "kube-default"]
    assert main([*argv, "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    for run in runs:
        first = run["afs_usage"][0]
        assert first["t_s"] == 0 and list(first["usage"]) == ["team/main"]
        assert run["config"]["admission_fair_sharing"] is True
    out = tmp_path / "out"
    assert main([*argv, "-o", str(out)]) == 0
    assert "│ team/main  │   4.22 │         4.22 │" in capsys.readouterr().out
    assert (out / "simulate-afs-usage.png").stat().st_size > 0
