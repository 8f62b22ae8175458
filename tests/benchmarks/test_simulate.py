"""``placewise simulate``: the replay engine, its metrics and its command.

Every replay here is tiny (one 8-GPU host, a handful of jobs, the greedy),
so the figures can be worked out by hand.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from placewise.adapters.io.loader import load_snapshot
from placewise.benchmarks.replay import ReplayConfig, alone, run_replay
from placewise.benchmarks.replay.engine import run_workset
from placewise.benchmarks.replay.jobs import (
    TRACE_START,
    ReplayJob,
    Workset,
    offered_load,
    rescale,
    trace_jobs,
)
from placewise.benchmarks.replay.metrics import JOB_KEYS
from placewise.benchmarks.replay.trace import read_trace
from placewise.cli import main
from placewise.models.workload import PriorityRef

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
CLUSTER = str(DATA / "one-host.yaml")
SMALL = str(DATA / "helios-small.csv")
HEADER = "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status"


def _job(key: str, arrival: float, gpus: int, run: float) -> ReplayJob:
    return ReplayJob(key, arrival, run, gpus, 0, "0", None)  # type: ignore[arg-type]


def test_offered_load_and_rescaling_arithmetic() -> None:
    jobs = [_job("a", 100, 8, 3600), _job("b", 3700, 8, 3600), _job("c", 7300, 4, 0)]
    # Σ GPUs x run = 57,600 GPU-s over 16 GPUs x 7,200 s of arrivals.
    assert offered_load(jobs, 16) == pytest.approx(0.5)
    doubled = rescale(jobs, 1.0, 16)
    assert [j.arrival_s for j in doubled] == pytest.approx([100, 1900, 3700])
    assert offered_load(doubled, 16) == pytest.approx(1.0)
    stretched = rescale(jobs, 0.25, 16)
    assert stretched[-1].arrival_s == pytest.approx(100 + 14400)
    with pytest.raises(ValueError, match="distinct times"):
        rescale([_job("a", 0, 8, 60)], 1.0, 16)


def _workset(tmp_path: Path, rows: str, priorities: list[str]) -> Workset:
    """Trace ``rows`` on the 8-GPU cluster, the jobs given ``priorities``
    (``low``: 100, ``high``: 10000) in row order."""
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n{rows}")
    snap = load_snapshot([CLUSTER])
    jobs = trace_jobs(snap, read_trace(path).jobs, 1, TRACE_START)
    values = {"low": 100, "high": 10000}
    fixed = []
    for job, name in zip(jobs, priorities, strict=True):
        w = job.workload.model_copy(update={"priority_class": PriorityRef(name=name)})
        fixed.append(
            dataclasses.replace(
                job, priority=values[name], priority_name=name, workload=w
            )
        )
    return Workset(snap, fixed, [], 8, 0, TRACE_START)


def _preemption_workset(tmp_path: Path) -> Workset:
    """A low-priority 8-GPU job at 0 (1 h), a high one at 600 s (10 min)."""
    return _workset(
        tmp_path,
        "low,1,8,4,1,0,3600,0,Pass\nhigh,2,8,4,1,600,600,0,Pass\n",
        ["low", "high"],
    )


def test_preempted_job_counts_both_waits_and_its_lost_work(tmp_path: Path) -> None:
    config = ReplayConfig(instances=(CLUSTER,), job_trace="unused")
    res = run_workset(config, _preemption_workset(tmp_path))
    assert res.ok, res.error
    rec = {r.key: r for r in res.records}
    low, high = rec["team/trace-low"], rec["team/trace-high"]
    # low runs 0-600, is evicted for high (600-1200), runs again 1200-4800.
    assert (low.starts, low.evictions, low.finish_s) == (2, 1, 4800)
    assert (high.waited_s, high.finish_s) == (0, 1200)
    assert low.waited_s == 600  # the wait after the eviction counts
    m = res.metrics()
    assert m["preemptions"] == 1
    assert m["wasted_gpu_h"] == pytest.approx(8 * 600 / 3600)
    assert m["mean_delay_s"] == pytest.approx(300)
    assert m["by_priority"]["low"]["mean_delay_s"] == pytest.approx(600)
    assert m["by_priority"]["high"]["mean_delay_s"] == 0
    assert m["mean_jct_s"] == pytest.approx((4800 + 600) / 2)
    assert m["goodput_gpu_h"] == pytest.approx(8 * (3600 + 600) / 3600)
    assert m["utilization_pct"] == pytest.approx(100.0)
    assert m["finished"] == 2 and m["jobs"] == 2
    assert list(m["by_priority"]) == ["high", "low"]


def test_a_preempted_job_keeps_its_place_in_the_queue(tmp_path: Path) -> None:
    """Kueue orders a preempted workload by its creation time, so it goes
    before work that arrived after it and before its eviction."""
    # first (0 s, 1 h) runs; second (300 s) waits; high (600 s, 10 min)
    # evicts first; when high ends both low jobs wait, first the older.
    work = _workset(
        tmp_path,
        "first,1,8,4,1,0,3600,0,Pass\nsecond,1,8,4,1,300,3600,0,Pass\n"
        "high,2,8,4,1,300,600,0,Pass\n",
        ["low", "low", "high"],
    )
    res = run_workset(ReplayConfig(instances=(CLUSTER,), job_trace="unused"), work)
    assert res.ok, res.error
    rec = {r.key.split("-")[-1]: r for r in res.records}
    assert (rec["first"].evictions, rec["high"].finish_s) == (1, 1200)
    # Requeued at its eviction time (600 s) it went after second (300 s).
    assert rec["first"].finish_s == 1200 + 3600
    assert rec["second"].first_start_s == 1200 + 3600


@pytest.mark.parametrize(("phase", "start"), [(0.0, 120), (7.0, 127)])
def test_the_solve_grid_can_be_shifted(
    tmp_path: Path, phase: float, start: float
) -> None:
    """``first`` (0-100 s) fills the host; ``second`` (40 s) starts at the
    first solve after 100 s: 120 on the 30 s grid, 127 shifted by 7 s."""
    work = _workset(
        tmp_path,
        "first,1,8,4,1,0,100,0,Pass\nsecond,1,8,4,1,40,60,0,Pass\n",
        ["low", "low"],
    )
    config = ReplayConfig(instances=(CLUSTER,), job_trace="unused", tick_phase_s=phase)
    res = run_workset(config, work)
    assert res.ok, res.error
    rec = {r.key.split("-")[-1]: r for r in res.records}
    assert rec["second"].first_start_s == start


@pytest.mark.parametrize("phase", [-1.0, 30.0])
def test_the_grid_shift_stays_inside_one_tick(phase: float) -> None:
    config = ReplayConfig(family="default", tick_phase_s=phase)
    with pytest.raises(ValueError, match="phase"):
        config.check()


def test_job_still_waiting_at_the_end_counts_its_wait(tmp_path: Path) -> None:
    work = _preemption_workset(tmp_path)
    config = ReplayConfig(instances=(CLUSTER,), job_trace="unused", drain_s=300)
    res = run_workset(config, work)
    # The replay ends 300 s after the last arrival (600 s): low has been
    # queued since its eviction at 600 s.
    assert res.end_s == 900
    m = res.metrics()
    assert m["finished"] == 0 and m["still_waiting"] == 1 and m["still_running"] == 1
    assert m["by_priority"]["low"]["mean_delay_s"] == pytest.approx(300)


def test_cpu_only_rows_are_skipped_and_counted() -> None:
    res = run_replay(ReplayConfig(instances=(CLUSTER,), job_trace=SMALL))
    m = res.metrics()
    assert res.ok and m["cpu_only_skipped"] == 2
    assert m["jobs"] == m["finished"] == 4


def test_impossible_job_is_warned_counted_and_the_replay_goes_on(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,1,16,4,2,0,60,0,Pass\n1,1,2,4,1,30,60,0,Pass\n")
    with caplog.at_level(logging.WARNING, logger="placewise"):
        code = main(["simulate", CLUSTER, "--job-trace", str(path), "--format", "json"])
    assert code == 0
    assert "team/trace-0: needs 16 GPUs, the cluster has 8" in caplog.text
    run = json.loads(capsys.readouterr().out)["runs"][0]
    assert run["metrics"]["impossible"] == 1
    assert run["metrics"]["jobs"] == run["metrics"]["finished"] == 1


_PLAIN_POD = """
---
apiVersion: v1
kind: Pod
metadata:
  name: serving
  namespace: team
spec:
  nodeName: host-1
  containers:
  - name: main
    image: serving
    resources:
      requests: {nvidia.com/gpu: "4"}
      limits: {nvidia.com/gpu: "4"}
status:
  phase: Running
"""


def test_a_job_no_plan_admits_even_alone_is_left_out_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain pod holds 4 of the host's 8 GPUs for the whole replay: an
    8-GPU job fits the host's size and the cluster's total, yet never runs.
    Kept, it would wait until the replay ends; it is left out and counted,
    and the 4-GPU job beside it runs."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(Path(CLUSTER).read_text() + _PLAIN_POD)
    trace = tmp_path / "t.csv"
    trace.write_text(
        f"{HEADER}\nbig,1,8,4,1,0,600,0,Pass\nsmall,1,4,4,1,30,600,0,Pass\n"
        "big2,1,8,4,1,60,600,0,Pass\n"
    )
    asked: list[str] = []
    real = alone._lone_verdict

    def counted(base: Any, w: Any) -> Any:
        asked.append(w.key)
        return real(base, w)

    monkeypatch.setattr(alone, "_lone_verdict", counted)
    res = run_replay(ReplayConfig(instances=(str(cluster),), job_trace=str(trace)))
    assert res.ok, res.error
    left_out = [i.split(":")[0] for i in res.impossible]
    assert left_out == ["team/trace-big", "team/trace-big2"]
    assert len(asked) == 2  # one question per shape: big2 is big's twin
    assert "no plan admits it even alone on the cluster" in res.impossible[0]
    m = res.metrics()
    assert (m["impossible"], m["jobs"], m["finished"]) == (2, 1, 1)
    assert m["mean_delay_s"] == 0


def test_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", CLUSTER, "--job-trace", SMALL, "--compare", "kube-default"]
    assert main([*argv, "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [(r["solver"], r["seed"], r["ok"]) for r in runs] == [
        ("greedy", 1, True),
        ("kube-default", 1, True),
    ]
    for run in runs:
        m = run["metrics"]
        assert set(JOB_KEYS) <= set(m)
        assert m["by_priority"]
        for group in m["by_priority"].values():
            assert set(JOB_KEYS) <= set(group)
        assert sum(g["jobs"] for g in m["by_priority"].values()) == m["jobs"] == 4


def test_the_table_judges_the_second_solver_by_the_issues_checks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", CLUSTER, "--job-trace", SMALL, "--compare", "kube-default"]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "kube-default against greedy (each at most greedy's):" in out
    for name in ("JCT", "top p95", "largest p95", "wasted"):
        assert f"{name} yes" in out or f"{name} NO" in out
    assert "mean delay" in out and "12 of 90 runs" in out


def test_same_seed_gives_the_same_metrics() -> None:
    config = ReplayConfig(instances=(CLUSTER,), job_trace=SMALL, load=2.0, seed=7)
    first, second = run_replay(config).metrics(), run_replay(config).metrics()
    for m in (first, second):
        m.pop("solver_seconds")  # wall time, the one figure that varies
    assert first == second
    assert first["offered_load"] == pytest.approx(2.0)
    # A sweep ships configs to workers as plain data.
    assert ReplayConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_a_deterministic_budget_makes_the_optimizer_replay_reproducible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a deterministic budget and one worker the optimizer's replay is
    the same run twice, and the budget reaches every solve (the config
    round-trips through a sweep's plain data with it)."""
    config = ReplayConfig(
        instances=(CLUSTER,),
        job_trace=SMALL,
        load=2.0,
        seed=7,
        solver="cpsat",
        workers=1,
        time_limit=30,
        deterministic_time=0.2,
    )
    import placewise.solver.solve as solve_module

    budgets = []
    real = solve_module.solve

    def spy(snapshot: Any, params: Any) -> Any:
        if params.time_limit == config.time_limit:  # not a lone-job check
            budgets.append(params.deterministic_time)
        return real(snapshot, params)

    monkeypatch.setattr(solve_module, "solve", spy)
    first, second = run_replay(config), run_replay(config)
    assert first.ok and second.ok
    assert budgets and set(budgets) == {0.2}
    segments = [sorted(r.segments) for r in (first, second)]
    assert segments[0] == segments[1] and segments[0]
    assert ReplayConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_table_and_output_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = ["simulate", CLUSTER, "--job-trace", SMALL, "-o", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "greedy" in text and "queueing delay p95 (min)" in text
    names = {p.name for p in out.iterdir()}
    assert names == {
        "simulate.json",
        "simulate.csv",
        "simulate-timeline.png",
        "simulate-delay-cdf.png",
    }
    rows = (out / "simulate.csv").read_text().splitlines()
    assert rows[0].startswith("solver,seed,ok,scope,jobs,")
    assert rows[1].startswith("greedy,1,True,all,4,")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--load", "0"], "--load must be > 0"),
        (["--family", "nope"], "give INSTANCE files or --family"),
        (["--arrivals", "3"], "--arrivals counts generated arrivals"),
        (["--hours", "-1"], "--hours must be > 0"),
        (["--deterministic-time", "0"], "--deterministic-time must be > 0"),
    ],
)
def test_bad_settings_exit_2(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", CLUSTER, "--job-trace", SMALL, *extra]) == 2
    assert message in capsys.readouterr().err


def test_unknown_family_and_solver_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--family", "nope"]) == 2
    assert "unknown family 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--family", "default", "--solver", "magic"])
    assert info.value.code == 2


def test_family_arrivals_replay_without_a_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["simulate", "--family", "default", "--arrivals", "4", "--format", "json"]
    assert main(argv) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    m = run["metrics"]
    assert run["ok"] and m["jobs"] == 4 and m["capacity_gpus"] == 512
    assert m["cpu_only_skipped"] == 0 and m["offered_load"] > 0


def test_helios_family_and_its_generated_files_replay_the_same(
    tmp_path: Path, shared: Path
) -> None:
    """The README's two forms: ``--family helios`` and ``placewise generate
    --config benchmarks/configs/helios.yaml`` files give the same figures."""
    trace = str(shared / "data" / "helios-15k" / "helios_data_training.csv")
    config = Path(__file__).resolve().parents[2] / "benchmarks/configs/helios.yaml"
    files = tmp_path / "helios.yaml"
    assert main(["generate", "--config", str(config), "-o", str(files)]) == 0
    family = ReplayConfig(family="helios", job_trace=trace, hours=0.25)
    inst = dataclasses.replace(family, family=None, instances=(str(files),))
    a, b = run_replay(family).metrics(), run_replay(inst).metrics()
    for m in (a, b):
        m.pop("solver_seconds")
    assert a == b
    assert a["capacity_gpus"] == 1024 and a["jobs"] > 0 and a["impossible"] == 0


def test_a_plan_the_validator_rejects_fails_the_run_and_is_not_applied(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from placewise.benchmarks.replay import engine

    calls: list[int] = []

    def reject(snapshot: object, plan: object) -> list[str]:
        calls.append(1)
        return ["capacity exceeded on host-1"] if len(calls) == 2 else []

    monkeypatch.setattr(engine, "validate", reject)
    config = ReplayConfig(instances=(CLUSTER,), job_trace="unused")
    res = run_workset(config, _preemption_workset(tmp_path))
    assert not res.ok
    assert res.error == (
        "plan at t=600s fails the validator (1 violation(s)); "
        "first: capacity exceeded on host-1"
    )
    # The rejected plan (evict low for high) was never applied.
    assert res.preemptions == 0 and res.end_s == 600
    monkeypatch.setattr(engine, "validate", lambda snapshot, plan: ["bad plan"])
    assert main(["simulate", CLUSTER, "--job-trace", SMALL]) == 1
    assert "greedy FAILED: plan at t=0s fails the validator" in capsys.readouterr().out
