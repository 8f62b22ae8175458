"""``placewise simulate`` with admission fair sharing: LocalQueue usage over time.

One 8-GPU host, one job, the greedy: the usage can be worked out by hand
(half-life 1 h, sampling 5 min, so 12 samples halve the gap to the live usage).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot
from placewise.benchmarks.replay import ReplayConfig, run_replay
from placewise.benchmarks.replay.engine import run_workset
from placewise.benchmarks.replay.jobs import TRACE_START, Workset, trace_jobs
from placewise.benchmarks.replay.trace import read_trace
from placewise.cli import main
from placewise.models.cluster import LocalQueue
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PriorityRef

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


def _two_queue_workset(tmp_path: Path) -> Workset:
    """One 8-GPU host, LocalQueues ``main`` and ``other`` in one ClusterQueue:
    ``main`` runs a 1-h job from 0; at 60 s ``main`` queues a second job, at
    120 s ``other`` one; both 8 GPUs, same priority, so only one fits at a time."""
    path = tmp_path / "t.csv"
    rows = ["a1,1,8,4,1,0,3600,0,Pass", "a2,1,8,4,1,60,600,0,Pass"]
    rows.append("b1,2,8,4,1,60,600,0,Pass")
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    snap = load_snapshot([CLUSTER])
    other = LocalQueue(namespace="team", name="other", cluster_queue="team-cq")
    queues = {**snap.objects.local_queues, "team/other": other}
    snap = Snapshot(dataclasses.replace(snap.objects, local_queues=queues))
    fixed = []
    for job in trace_jobs(snap, read_trace(path).jobs, 1, TRACE_START):
        queue = "other" if job.key.endswith("b1") else "main"
        update = {"priority_class": PriorityRef(name="low"), "queue_name": queue}
        w = job.workload.model_copy(update=update)
        fixed.append(
            dataclasses.replace(job, priority=100, priority_name="low", workload=w)
        )
    return Workset(snap, fixed, [], 8, 0, TRACE_START)


@pytest.mark.parametrize("solver", ["greedy", "cpsat"])
def test_usage_carried_into_solves_reorders_the_queues(
    tmp_path: Path, solver: str
) -> None:
    """When a1 ends at 3600 s, ``main`` has an hour of 8-GPU usage and
    ``other`` none: with AFS b1 goes first although a2 queued earlier."""
    work = _two_queue_workset(tmp_path)
    base = ReplayConfig(
        instances=(CLUSTER,), job_trace="unused", solver=solver, time_limit=2, workers=1
    )
    starts = {}
    # Both jobs have waited past the default 30 minutes by 3600 s: the
    # reservation (default policy) must follow AFS's order, not the wait.
    for afs in (False, True):
        config = dataclasses.replace(base, admission_fair_sharing=afs)
        work_afs = _two_queue_workset(tmp_path) if afs else work
        res = run_workset(config, work_afs)
        assert res.ok, res.error
        starts[afs] = {r.key.split("-")[-1]: r.first_start_s for r in res.records}
    assert starts[False]["a2"] == 3600 and starts[False]["b1"] == 4200
    assert starts[True]["b1"] == 3600 and starts[True]["a2"] == 4200
