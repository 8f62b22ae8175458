"""``placewise simulate --policy FILE``: the optimizer's objective in a replay.

A policy knob is judged over hours, not in one snapshot, so the replay must
run the optimizer under the policy the user gives (issue 19's sweep of
``cross_tier_price``).  Two jobs on one 8-GPU host: a low-priority job runs
from 0 for an hour, a high-priority one arrives at 10 minutes.  At the
default price the high job evicts the low one (80 GPU-minutes lost); at
``cross_tier_price`` 10 that loss costs 13.3 GPUs of the high tier, more
than the 8 it gains, so it waits instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.benchmarks.replay import ReplayConfig
from placewise.benchmarks.replay.engine import run_workset
from placewise.cli import main
from tests.benchmarks.test_simulate import CLUSTER, SMALL, _preemption_workset


def _replay(tmp_path: Path, policy: str | None) -> dict[str, object]:
    config = ReplayConfig(
        instances=(CLUSTER,),
        job_trace="unused",
        solver="cpsat",
        workers=1,
        time_limit=10,
        deterministic_time=0.5,
        policy=policy,
    )
    res = run_workset(config, _preemption_workset(tmp_path))
    assert res.ok, res.error
    return res.metrics()


def test_the_policy_file_reaches_every_solve_of_the_replay(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("cross_tier_price: 10\n")
    default, priced = _replay(tmp_path, None), _replay(tmp_path, str(path))
    assert default["preemptions"] == 1
    assert default["wasted_gpu_h"] == pytest.approx(8 * 600 / 3600)
    assert priced["preemptions"] == 0 and priced["wasted_gpu_h"] == 0
    # high waits for low's end at 3,600 s: 3,000 s, low none.
    assert priced["mean_delay_s"] == pytest.approx(3000 / 2)


def test_the_json_records_the_policy_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("cross_tier_price: 0.25\n")
    argv = ["simulate", CLUSTER, "--job-trace", SMALL, "--policy", str(path)]
    assert main([*argv, "--format", "json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["config"]["policy"] == str(path)
    config = ReplayConfig.from_dict(run["config"])
    assert config.policy == str(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cross_tier_price: -1\n", "Policy: cross_tier_price must be in [0, 1000]"),
        ("nonsense_key: 1\n", "Policy: unknown policy keys ['nonsense_key']"),
    ],
)
def test_a_bad_policy_file_exits_2_naming_it(
    tmp_path: Path, text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(text)
    argv = ["simulate", CLUSTER, "--job-trace", SMALL, "--policy", str(path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: {message}" in err
    assert "Traceback" not in err
