"""Issue 19's per-run checks, and the benchmark that judges a solver
against itself on a shifted solve grid."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from placewise.benchmarks import replay_noise
from placewise.benchmarks.replay.checks import judge, summarize


def _metrics(
    jct: float = 3600.0,
    top: float = 600.0,
    largest: float = 1200.0,
    wasted: float = 10.0,
    goodput: float = 1000.0,
    delay: float = 900.0,
    util: float = 50.0,
) -> dict[str, Any]:
    return {
        "mean_jct_s": jct,
        "largest_p95_delay_s": largest,
        "wasted_gpu_h": wasted,
        "goodput_gpu_h": goodput,
        "mean_delay_s": delay,
        "utilization_pct": util,
        "by_priority": {"high": {"p95_delay_s": top}, "low": {"p95_delay_s": 1e6}},
    }


def test_a_run_equal_to_the_baseline_holds_every_check() -> None:
    c = judge(_metrics(), _metrics())
    assert c.all_four and c.marks == "YYYY"
    assert c.gain == 0.0 and c.utilization == 0.0


@pytest.mark.parametrize(
    ("worse", "marks"),
    [
        ({"jct": 3601.0}, "nYYY"),
        ({"top": 601.0}, "YnYY"),
        ({"largest": 1201.0}, "YYnY"),
        # 0.5 % of 1,000 GPU-h of goodput: 5 GPU-h over Kueue's 10 is allowed.
        ({"wasted": 15.0}, "YYYY"),
        ({"wasted": 15.1}, "YYYn"),
    ],
)
def test_each_check_fails_on_its_own_figure(
    worse: dict[str, float], marks: str
) -> None:
    assert judge(_metrics(), _metrics(**worse)).marks == marks


def test_the_top_priority_is_the_baselines_first() -> None:
    """The highest priority class is read from the baseline (highest
    first); a lower class's p95 does not count."""
    cand = _metrics()
    cand["by_priority"] = {"high": {"p95_delay_s": 600.0}, "low": {"p95_delay_s": 0}}
    assert judge(_metrics(), cand).passed[1]
    cand["by_priority"] = {"high": {"p95_delay_s": 700.0}, "low": {"p95_delay_s": 0}}
    assert not judge(_metrics(), cand).passed[1]


def test_no_finished_job_holds_only_against_none() -> None:
    assert not judge(_metrics(), _metrics(jct=None)).passed[0]  # type: ignore[arg-type]
    assert judge(_metrics(jct=None), _metrics(jct=None)).passed[0]  # type: ignore[arg-type]


def test_gain_and_summary() -> None:
    runs = [
        judge(_metrics(), _metrics(delay=450.0, util=51.0)),  # +50 %
        judge(_metrics(), _metrics(delay=900.0, jct=4000.0)),  # 0 %, fails JCT
        judge(_metrics(), _metrics(delay=1800.0, wasted=99.0, util=49.0)),  # -100 %
    ]
    assert [r.gain for r in runs] == [0.5, 0.0, -1.0]
    s = summarize(runs)
    assert (s.runs, s.all_four, s.fails) == (3, 1, (1, 0, 0, 1))
    assert (s.median_gain, s.min_gain, s.max_gain) == (0.0, -1.0, 0.5)
    assert s.median_utilization == 0.0
    assert "all four on 1 of 3" in s.line() and "+0.0 %" in s.line()
    with pytest.raises(ValueError):
        summarize([])


def _config() -> Any:
    (config,) = replay_noise.configs("greedy", ["default"], [1], ["openb"], 0.5)
    return replace(config, arrivals=20)


def test_the_same_grid_replays_the_same_run() -> None:
    """The base of the comparison: at the base tick a replay is repeated
    exactly, so whatever a shifted tick changes is the shift's."""
    config = _config()
    (same,) = replay_noise.shifted(config, [0.0])
    assert same.checks.all_four and same.checks.gain == 0.0
    assert same.checks.utilization == 0.0


@pytest.mark.parametrize("phases", ["0", "30", "-1", ""])
def test_a_shift_is_inside_one_tick(
    phases: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        replay_noise.main(["--phases", phases])
    assert exc.value.code == 2
    assert "--phases" in capsys.readouterr().err
