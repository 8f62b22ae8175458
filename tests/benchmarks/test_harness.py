"""placewise bench: metrics on hand-made plans, failure reporting, a tiny run."""

from __future__ import annotations

import csv
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from placewise.benchmarks.harness.matrix import Instance, Task, build_tasks
from placewise.benchmarks.harness.report import ReportInputs, write_report
from placewise.benchmarks.harness.runner import RunResult, _check, run_task, run_tasks
from placewise.benchmarks.harness.simulate import SimJob
from placewise.benchmarks.harness.trace import (
    TraceJob,
    TraceResult,
    _summarize,
    published_curves,
)
from placewise.cli import main
from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import (
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
)
from placewise.solver import metrics
from tests.shared import requires_shared
from tests.solver.test_baselines import HOST, RACK, cluster, pod, snap, workload

SOLVER = SolverInfo(name="hand", status="FEASIBLE")


def running(name: str, hosts: dict[str, int], gpus: int, priority: int = 0) -> str:
    """A running TAS workload of ``gpus``-GPU pods on the given hosts."""
    count = sum(hosts.values())
    domains = "".join(
        f"        - {{values: [{h}], count: {n}}}\n" for h, n in hosts.items()
    )
    return (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
        f"metadata: {{name: {name}, namespace: team, "
        "creationTimestamp: '2025-12-31T00:00:00Z'}\n"
        f"spec:\n  queueName: q\n  priority: {priority}\n  podSets:\n"
        f"  - name: main\n    count: {count}\n    template:\n      spec:\n"
        "        containers:\n        - name: c\n          resources:\n"
        f"            requests: {{cpu: '1', nvidia.com/gpu: '{gpus}'}}\n"
        "status:\n  admission:\n    clusterQueue: cq\n    podSetAssignments:\n"
        f"    - name: main\n      count: {count}\n"
        "      flavors: {cpu: gpu, nvidia.com/gpu: gpu}\n"
        f"      resourceUsage: {{cpu: '{count}', nvidia.com/gpu: '{gpus * count}'}}\n"
        f"      topologyAssignment:\n        levels: [{HOST}]\n        domains:\n"
        f"{domains}"
        "  conditions:\n  - {type: QuotaReserved, status: 'True', reason: R, "
        "lastTransitionTime: '2025-12-31T00:00:01Z'}\n"
    )


def admit(key: str, count: int, gpus: int, hosts: dict[str, int]) -> PlanAdmission:
    return PlanAdmission(
        workload=key,
        cluster_queue="cq",
        pod_set_assignments=(
            PodSetAssignment(
                name="main",
                flavors={"cpu": "gpu", "nvidia.com/gpu": "gpu"},
                resource_usage={"cpu": 1000 * count, "nvidia.com/gpu": gpus * count},
                count=count,
                topology_assignment=TopologyAssignment(
                    levels=(HOST,),
                    domains=tuple(
                        TopologyDomain(values=(h,), count=n) for h, n in hosts.items()
                    ),
                ),
            ),
        ),
    )


@pytest.fixture
def four_hosts() -> Snapshot:
    """Racks r1 = a1, a2 and r2 = b1, b2 (8 GPUs each); a1 has a 3-GPU pod;
    a low-priority 2 x 4-GPU workload runs on b1; three pending workloads."""
    return snap(
        *cluster({"r1": ["a1", "a2"], "r2": ["b1", "b2"]}, within="LowerPriority"),
        pod("inference", "a1", gpus=3),
        running("old", {"b1": 2}, gpus=4, priority=0),
        workload("gang", 2, 4, priority=100, topology=f"preferred: {RACK}"),
        workload("solo", 1, 2, priority=10),
        workload("huge", 4, 8, priority=10),
    )


def test_metrics_of_a_hand_made_plan(four_hosts):
    """The gang spans both racks (preferred, not required), one pod where
    the running workload was, which is preempted for it; the solo job lands
    beside the inference pod (a plan the validator accepts: metrics of an
    infeasible plan mean nothing)."""
    plan = Plan(
        solver=SOLVER,
        admissions=(
            admit("team/gang", 2, 4, {"a2": 1, "b1": 1}),
            admit("team/solo", 1, 2, {"a1": 1}),
        ),
        preemptions=(
            PlanPreemption(
                workload="team/old", preemptor="team/gang", reason="InClusterQueue"
            ),
        ),
        pending=(PlanPending(workload="team/huge", reason="no room"),),
    )
    assert validate(four_hosts, plan) == []
    m = metrics.compute(four_hosts, plan)
    assert m.admitted_workloads == 2
    assert m.admitted_gpus == 10
    assert (m.preemptions, m.preempted_gpus) == (1, 8)
    assert m.net_gpus == 2
    assert (m.gpus_running_before, m.gpus_after) == (8, 10)
    assert m.tier_demand == ((100, 8), (10, 2), (0, -8))
    # In use: 3 (pod) + 4 (a2) + 4 (b1) + 2 (a1); b2 stays empty.
    assert (m.gpu_capacity, m.gpu_in_use) == (32, 13)
    assert m.gpu_alloc_pct == pytest.approx(100 * 13 / 32)
    # Free: a1 3, a2 4, b1 4, b2 8 — each fits a 2-, 4- or 8-GPU pod.
    assert m.stranded_gpus == 0
    assert (m.topology_gangs, m.gangs_in_domain) == (1, 0)
    assert m.domains_per_gang == 2.0


def test_stranded_gpus_are_free_gpus_no_pending_shape_fits(four_hosts):
    """With 7 of 8 GPUs used on a1 and a2 (one pending shape needs 2 GPUs),
    their single free GPUs are stranded; whole free hosts are not."""
    plan = Plan(
        solver=SOLVER,
        admissions=(admit("team/gang", 2, 4, {"a1": 1, "a2": 1}),),
        pending=(
            PlanPending(workload="team/solo", reason="x"),
            PlanPending(workload="team/huge", reason="x"),
        ),
    )
    assert validate(four_hosts, plan) == []
    m = metrics.compute(four_hosts, plan)
    # a1: 3 + 4 used -> 1 free (stranded); a2: 4 used -> 4 free (a 2-GPU pod fits).
    assert m.stranded_gpus == 1
    assert (m.topology_gangs, m.gangs_in_domain, m.domains_per_gang) == (1, 1, 1.0)


def test_held_pods_count_as_used_and_as_partial_gangs(four_hosts):
    plan = Plan(
        solver=SOLVER,
        pending=tuple(
            PlanPending(workload=w.key, reason="x") for w in four_hosts.pending
        ),
    )
    held = [
        metrics.Held(
            "team/huge",
            2,
            4,
            16,
            {"a2": {"nvidia.com/gpu": 8}, "b2": {"nvidia.com/gpu": 8}},
        )
    ]
    m = metrics.compute(four_hosts, plan, held)
    assert (m.partial_gangs, m.partial_gpus) == (1, 16)
    assert m.gpu_in_use == 3 + 8 + 16


def test_tier_vectors_compare_lexicographically():
    high_first = ((100, 8), (10, -50))
    more_low = ((100, 0), (10, 64))
    assert metrics.compare_tiers(high_first, more_low) == 1
    assert metrics.compare_tiers(more_low, high_first) == -1
    assert metrics.compare_tiers(more_low, more_low) == 0


def test_an_invalid_plan_is_a_failed_run(four_hosts):
    """A plan that forgets a pending workload is reported, not dropped."""
    plan = Plan(solver=SOLVER, admissions=(admit("team/solo", 1, 2, {"a1": 1}),))
    assert validate(four_hosts, plan)
    res = RunResult(family="hand", instance="hand", seed=1, solver="broken")
    _check(four_hosts, plan, [], res)
    assert not res.ok
    assert "validator" in (res.error or "")
    assert res.n_violations == len(res.violations) == 2
    assert res.metrics is not None and res.metrics.admitted_gpus == 2


def test_failed_runs_are_listed_in_the_report(tmp_path, four_hosts):
    plan = Plan(solver=SOLVER)
    bad = RunResult(family="hand", instance="hand", seed=1, solver="kueue")
    _check(four_hosts, plan, [], bad)
    good = RunResult(
        family="hand",
        instance="hand",
        seed=1,
        solver="binpack-gang",
        ok=True,
        metrics=metrics.compute(
            four_hosts,
            Plan(
                solver=SOLVER,
                pending=tuple(
                    PlanPending(workload=w.key, reason="x") for w in four_hosts.pending
                ),
            ),
        ),
    )
    write_report(tmp_path, ReportInputs([bad, good], "placewise bench", 1.0, {}))
    text = (tmp_path / "summary.md").read_text()
    assert "## Failed runs (1)" in text
    assert "`kueue`: plan fails the validator" in text
    rows = list(csv.DictReader((tmp_path / "runs.csv").open()))
    assert {(r["solver"], r["ok"]) for r in rows} == {
        ("kueue", "False"),
        ("binpack-gang", "True"),
    }


def test_a_worker_reports_exceptions_instead_of_raising():
    task = Task(Instance("no-such-family", 1), "kueue", 1.0, 1, 60.0)
    res = run_task(task)
    assert not res.ok
    assert res.error


def test_matrix_orders_big_instances_first_and_rejects_unknown_names():
    tasks = build_tasks(["default", "scale-300"], ["kueue"], [1, 2], 1.0, 1, 60.0)
    assert [(t.instance.family, t.instance.seed, t.solver) for t in tasks][:2] == [
        ("scale-300", 1, "kueue"),
        ("scale-300", 1, "limit"),
    ]
    assert len(tasks) == 8
    with pytest.raises(ValueError, match="unknown families"):
        build_tasks(["nope"], ["kueue"], [1], 1.0, 1, 60.0)
    with pytest.raises(ValueError, match="unknown solvers"):
        build_tasks(["default"], ["magic"], [1], 1.0, 1, 60.0)


@requires_shared
def test_published_reference_and_replay_summaries():
    from placewise.benchmarks.fgd.report import RunSummary

    pub = published_curves("default")
    assert pub["05-BestFit"][130] == pytest.approx(93.08, abs=0.01)
    assert pub["06-FGD"][130] == pytest.approx(95.39, abs=0.01)

    def run(seed: int, a100: float, a130: float, bound: float | None) -> RunSummary:
        return RunSummary(
            trace="default",
            policy="window",
            seed=seed,
            arrivals=10,
            placed=9,
            dropped=1,
            alloc_100=a100,
            alloc_130=a130,
            published_100=None,
            published_130=None,
            wall_s=5.0,
            cpu_s=5.0,
            window=32,
            windows=1,
            window_wall_median_s=0.1,
            window_wall_p95_s=0.1,
            window_wall_max_s=0.1,
            curve={100: a100, 130: a130},
            extra={} if bound is None else {"lp_bound_pct": bound},
        )

    res = TraceResult("default")
    _summarize(res, [run(42, 91.0, 96.0, 97.5), run(43, 93.0, 98.0, 97.0)])
    [row] = res.rows
    assert (row.policy, row.seeds, row.alloc_100, row.alloc_130) == (
        "window",
        2,
        92.0,
        97.0,
    )
    assert res.curves == {"window": {100: 92.0, 130: 97.0}}
    assert res.lp_bound_pct == 97.0
    assert "| window | 2 | 92.00 | 97.00 |" in "\n".join(res.markdown())


def test_trace_job_without_entry_point_says_so(tmp_path, monkeypatch):
    """Without the trace CLI the report says so instead of failing silently."""
    import placewise.benchmarks.fgd

    monkeypatch.setitem(sys.modules, "placewise.benchmarks.fgd.cli", None)
    # An earlier test may have imported it: the package attribute would
    # otherwise still resolve the submodule.
    monkeypatch.delattr(placewise.benchmarks.fgd, "cli", raising=False)
    res = TraceJob(out_dir=str(tmp_path / "trace"), quick=True).execute()
    assert not res.available and not res.ok
    assert "entry point" in (res.error or "")
    assert "Not run" in "\n".join(res.markdown())


def test_simulation_runs_arrivals_to_completion():
    res = SimJob("default", 1, "kueue", 1.0, 1, pending=8).execute()
    assert res.ok, res.error
    assert res.arrivals == 8
    assert 0 < res.finished <= res.started <= res.arrivals
    assert all(d >= 0 for d in res.queue_delay_s)
    assert all(j >= 300 for j in res.jct_s)  # nothing runs shorter than 5 min
    assert all(0 <= u <= 100 for _, u in res.util)
    assert res.solves >= 1


def test_tiny_bench_writes_markdown_csv_and_plots(tmp_path):
    out = tmp_path / "bench"
    code = main(
        [
            "bench",
            "--families",
            "default",
            "--solvers",
            "kueue,kube-default,binpack-gang,cpsat",
            "--time-limit",
            "2",
            "--jobs",
            "2",
            "--no-trace",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert {r["solver"] for r in rows} == {
        "kueue",
        "kube-default",
        "binpack-gang",
        "cpsat",
        "limit",
    }
    assert all(r["ok"] == "True" for r in rows), [r["error"] for r in rows]
    by = {r["solver"]: r for r in rows}
    assert float(by["limit"]["bound"]) >= float(by["cpsat"]["gpus_after"])
    assert float(by["cpsat"]["peak_mib"]) > 0
    text = (out / "summary.md").read_text()
    assert "| default | 64 | 40 |" in text
    assert Path(out / "plots" / "default.png").stat().st_size > 1000
    assert Path(out / "plots" / "default-priority.png").stat().st_size > 1000
    assert "(plots/default-priority.png)" in text


def test_priority_plot_inputs_and_scale_title():
    """Tier medians are per priority over seeds; a partial sweep says so."""
    from placewise.benchmarks.harness.matrix import SCALE_FAMILIES
    from placewise.benchmarks.harness.plots import scale_title, tier_medians

    tiers = {1: ((100, 8), (10, -8)), 2: ((100, 4), (10, 0)), 3: ((100, 0),)}
    assert tier_medians(tiers) == {100: 4.0, 10: -4.0}
    assert scale_title(SCALE_FAMILIES) == "scale sweep (median over seeds)"
    assert scale_title(SCALE_FAMILIES[:2]).startswith("wall time at 2 of 5 sweep")


def test_bench_rejects_bad_options(tmp_path, capsys):
    assert main(["bench", "--families", "nope", "--out", str(tmp_path)]) == 2
    assert "unknown families" in capsys.readouterr().err


@dataclass(frozen=True)
class Crash:
    """A pool job whose worker process dies (as under the OOM killer) when n == 1."""

    n: int

    @property
    def label(self) -> str:
        return f"crash {self.n}"

    def execute(self) -> tuple[str, int]:
        if self.n == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return ("ok", self.n)

    def failed(self, why: str) -> tuple[str, int, str]:
        return ("failed", self.n, why)


def test_a_dead_worker_is_reported_and_the_other_runs_finish():
    results = run_tasks([Crash(0), Crash(1), Crash(2)], jobs=2)
    assert sorted(results, key=str) == [
        ("failed", 1, "worker process died (killed or out of memory)"),
        ("ok", 0),
        ("ok", 2),
    ]


def test_trace_without_its_data_is_skipped_with_the_reason(tmp_path):
    """No ../shared (here: an empty --trace-data folder): the replay is not
    started, the report says why it did not run, and the closing count says
    "trace skipped" instead of folding it into "0 failed"."""
    from placewise.benchmarks.cli import outcome

    job = TraceJob(str(tmp_path / "trace"), quick=True, shared=str(tmp_path))
    why = job.missing_data()
    assert why is not None
    assert str(tmp_path / "data" / "alibaba-gpu-v2023") in why
    assert "openb_node_list_gpu_node.csv" in why
    assert job.argv()[-2:] == ["--shared", str(tmp_path)]
    res = job.skipped(why)
    assert "Not run: the trace data is not in" in "\n".join(res.markdown())
    assert outcome([], res) == "0 runs, 0 failed; trace skipped"
    failed = job.failed("exit code 1")
    assert outcome([], failed) == "0 runs, 0 failed; the trace replay FAILED"


def test_trace_with_its_data_is_not_skipped(tmp_path):
    from placewise.benchmarks.fgd.trace import trace_files

    for path in trace_files("default", tmp_path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("sn\n")
    assert TraceJob("out", quick=True, shared=str(tmp_path)).missing_data() is None


# -- the bench through the sweep's executors -----------------------------------------

TIMING = {"wall_s", "peak_mib"}


def _bench_rows(out: Path, *extra: str) -> list[dict[str, str]]:
    """The smallest family, the greedy (and the bound), one seed, no trace."""
    argv = ["bench", "--families", "fair-share", "--solvers", "kueue"]
    argv += ["--seeds", "1", "--no-trace", "--workers", "1", "--out", str(out)]
    assert main([*argv, *extra]) == 0
    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert rows and all(r["ok"] == "True" for r in rows), rows
    assert all(float(r["peak_mib"]) > 0 for r in rows)  # each run measured
    return sorted(
        ({k: v for k, v in r.items() if k not in TIMING} for r in rows),
        key=lambda r: (r["instance"], r["seed"], r["solver"]),
    )


def test_bench_through_the_pool_gives_the_inline_rows(tmp_path):
    inline = _bench_rows(tmp_path / "inline", "--jobs", "1")
    pool = _bench_rows(tmp_path / "pool", "--jobs", "2")
    assert {r["solver"] for r in pool} == {"kueue", "limit"}
    assert pool == inline


def test_the_executor_runs_each_task_in_a_process_of_its_own():
    """Under any executor (here this process, then the pool) a dead task
    process is that task's failure and every task sees a fresh pid."""
    from placewise.benchmarks.sweep.executors import Inline, LocalPool

    for executor in (Inline(), LocalPool(2)):
        results = run_tasks([Crash(0), Crash(1), Crash(2)], 2, executor=executor)
        assert sorted(results, key=str) == [
            ("failed", 1, "worker process died (killed or out of memory)"),
            ("ok", 0),
            ("ok", 2),
        ]
    pids = run_tasks([Pid(), Pid(), Pid()], jobs=1)
    assert len(set(pids)) == 3 and os.getpid() not in pids


@dataclass(frozen=True)
class Pid:
    label: str = "pid"

    def execute(self) -> int:
        return os.getpid()

    def failed(self, why: str) -> int:
        return -1


def test_bench_ray_without_ray_installed_exits_2_with_the_hint(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    out = tmp_path / "bench"
    argv = ["bench", "--families", "fair-share", "--solvers", "kueue"]
    assert main([*argv, "--no-trace", "--out", str(out), "--ray"]) == 2
    assert "pip install 'placewise[ray]'" in capsys.readouterr().err
    assert not (out / "runs.csv").exists()


def test_bench_on_ray_gives_the_pool_rows(tmp_path):
    pytest.importorskip("ray", reason="ray not installed: pip install 'placewise[ray]'")
    pool = _bench_rows(tmp_path / "pool", "--jobs", "2")
    ray = _bench_rows(tmp_path / "ray", "--ray", "--jobs", "2")
    assert ray == pool
    assert "executor: ray (local)" in (tmp_path / "ray" / "summary.md").read_text()
