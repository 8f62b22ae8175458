"""``placewise sweep``: the spec, its located errors, executors and resuming.

Every sweep here is three variants of the one-host replay cluster with the
six-row trace through the greedy: a point takes milliseconds, so the time
goes to starting executors (the Ray test's ~10-20 s is Ray's own start).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from placewise.benchmarks.sweep import executors
from placewise.benchmarks.sweep.spec import SpecError, load_spec
from placewise.cli import main
from tests.shared import DATA as SHARED_DATA
from tests.shared import requires_shared

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
CLUSTER = str(DATA / "one-host.yaml")
SMALL = str(DATA / "helios-small.csv")
TIMING = {"wall_s"}
HELIOS = SHARED_DATA / "helios-15k" / "helios_data_training.csv"


def _spec(tmp_path: Path, **changes: Any) -> Path:
    spec: dict[str, Any] = {
        "base": {"files": [CLUSTER]},
        "jobs": {"trace": SMALL},
        "axes": {"add_hosts": {"flavor": "h100", "values": [0, 1, 2]}},
        "solvers": ["greedy"],
        "metrics": ["mean_delay_s", "p95_delay_s", "utilization_pct"],
        "target": {"metric": "p95_delay_s", "priority": "high", "at_most": 60},
    }
    for key, value in changes.items():
        head, _, tail = key.partition("__")
        if tail:
            spec[head][tail] = value
        else:
            spec[head] = value
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def _table(out: Path) -> list[dict[str, str]]:
    with (out / "sweep.csv").open(encoding="utf-8") as fh:
        return [
            {k: v for k, v in row.items() if k not in TIMING}
            for row in csv.DictReader(fh)
        ]


def test_spec_parses_with_defaults(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path))
    assert spec.kind == "replay" and spec.axes.seed == [1]
    assert spec.axes.add_hosts is not None and spec.axes.add_hosts.grow_quota
    assert spec.target is not None and spec.target.over_seeds == "worst"


@pytest.mark.parametrize(
    ("changes", "located"),
    [
        (
            {"axes": {"add_host": {"flavor": "h100", "values": [1]}}},
            "axes.add_host: unknown key",
        ),
        (
            {"axes": {"add_hosts": {"flavor": "h200", "values": [1]}}},
            "axes.add_hosts.flavor: unknown flavor 'h200'",
        ),
        (
            {"axes": {"quota": {"cluster_queue": "nope", "values": [4]}}},
            "axes.quota.cluster_queue: unknown ClusterQueue 'nope'",
        ),
        (
            {"axes": {"policy": {"move_budgett": [1]}}},
            "axes.policy.move_budgett: unknown policy key",
        ),
        (
            {"axes": {"policy": {"objective": ["tiers", "most"]}}},
            "axes.policy.objective.1: objective must be",
        ),
        ({"axes": {"seed": ["one"]}}, "axes.seed.0: Input should be a valid integer"),
        (
            {"target": {"metric": "p99_delay_s", "at_most": 1}},
            "target.metric: unknown metric 'p99_delay_s'",
        ),
        (
            {"target": {"metric": "p95_delay_s", "priority": 7, "at_most": 1}},
            "target.priority: unknown priority '7'",
        ),
        ({"target": {"metric": "p95_delay_s"}}, "target: give at_most or at_least"),
        ({"solvers": ["magic"]}, "solvers.0: unknown solver 'magic'"),
        ({"jobs__trace": "missing.csv"}, "jobs.trace: no such file"),
    ],
)
def test_bad_spec_exits_2_located_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    located: str,
) -> None:
    path = _spec(tmp_path, **changes)
    out = tmp_path / "out"
    assert main(["sweep", str(path), "-o", str(out), "--jobs", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {located}" in err, err
    assert not out.exists()


def test_priority_by_value_and_every_problem_listed(tmp_path: Path) -> None:
    from placewise.benchmarks.sweep.check import check

    path = _spec(
        tmp_path,
        target={"metric": "p95_delay_s", "priority": 10000, "at_most": 60},
        solvers=["magic", "greedy"],
        metrics=["nope"],
    )
    with pytest.raises(SpecError) as info:
        check(load_spec(path), path)
    assert len(info.value.problems) == 2  # the solver and the metric
    path = _spec(
        tmp_path, target={"metric": "p95_delay_s", "priority": 10000, "at_most": 60}
    )
    checked = check(load_spec(path), path)
    assert checked.target is not None and checked.target.label == "p95_delay_s@high"


def test_unreachable_ray_address_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    argv = [
        "sweep",
        str(_spec(tmp_path)),
        "-o",
        str(out),
        "--ray-address",
        "127.0.0.1:1",
    ]
    assert main(argv) == 2
    assert "--ray-address 127.0.0.1:1: cannot reach" in capsys.readouterr().err
    assert not (out / "points").exists()


def test_ray_without_ray_installed_exits_2_with_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--ray"]) == 2
    assert "pip install 'placewise[ray]'" in capsys.readouterr().err
    assert not (out / "points").exists()


def test_interrupted_sweep_resumes_computing_only_the_missing_point(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    real = executors.run_point

    def counting(data: dict[str, Any]) -> dict[str, Any]:
        rec = real(data)
        ran.append(rec["key"])
        return rec

    monkeypatch.setattr(executors, "run_point", counting)
    path, out = _spec(tmp_path), tmp_path / "out"
    argv = ["sweep", str(path), "-o", str(out), "--jobs", "1"]
    assert main(argv) == 0
    assert len(ran) == 3
    first = _table(out)
    # More hosts (with their quota) cut the high-priority wait below a minute.
    assert first[0]["p95_delay_s@high"] == "1027.5"
    assert "greedy: add_hosts:h100=1" in capsys.readouterr().out
    gone = sorted((out / "points").glob("*.json"))[1]
    gone.unlink()
    ran.clear()
    assert main(argv) == 0
    assert ran == [gone.stem]
    assert _table(out) == first
    ran.clear()
    assert main(argv) == 0 and ran == []  # all cached


@pytest.fixture(scope="module")
def pool_table(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    """The tiny sweep through the local process pool (two workers)."""
    tmp = tmp_path_factory.mktemp("pool")
    out = tmp / "out"
    assert main(["sweep", str(_spec(tmp)), "-o", str(out), "--jobs", "2"]) == 0
    assert (out / "sweep.md").read_text().startswith("**Target:**")
    assert (out / "sweep-add_hosts-h100.png").stat().st_size > 0
    return _table(out)


def test_local_pool_gives_the_inline_table(
    pool_table: list[dict[str, str]], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert main(["sweep", str(_spec(tmp_path)), "-o", str(out), "--jobs", "1"]) == 0
    assert _table(out) == pool_table
    assert [r["add_hosts:h100"] for r in pool_table] == ["0", "1", "2"]


def test_ray_gives_the_local_pool_table(
    pool_table: list[dict[str, str]], tmp_path: Path
) -> None:
    pytest.importorskip("ray", reason="ray not installed: pip install 'placewise[ray]'")
    out = tmp_path / "out"
    argv = ["sweep", str(_spec(tmp_path)), "-o", str(out), "--ray", "--jobs", "2"]
    assert main(argv) == 0
    assert _table(out) == pool_table


def test_load_is_offered_against_the_base_so_more_hosts_get_the_same_jobs(
    tmp_path: Path,
) -> None:
    from placewise.benchmarks.sweep.check import check
    from placewise.benchmarks.sweep.points import run_point

    path = _spec(tmp_path, jobs={"trace": SMALL, "load": 0.5})
    checked = check(load_spec(path), path)
    base, more, _ = (run_point(p.to_dict()) for p in checked.points)
    assert (
        base["metrics"]["capacity_gpus"] == 8 and more["metrics"]["capacity_gpus"] == 16
    )
    assert base["metrics"]["offered_load"] == pytest.approx(0.5)
    assert more["metrics"]["offered_load"] == pytest.approx(0.25)


def test_solve_sweep_decides_the_base_pending_work_per_variant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    demo = sorted(
        str(p) for p in (DATA.parents[2] / "instances" / "demo").glob("*.yaml")
    )
    spec = {
        "kind": "solve",
        "base": {"files": demo},
        "axes": {
            "add_hosts": {"flavor": "h100", "values": [-4, 0]},
            "policy": {"objective": ["tiers"]},
        },
        "target": {"metric": "gpus_after", "at_least": 40},
    }
    path = tmp_path / "solve.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(path), "-o", str(out), "--jobs", "1"]) == 0
    rows = _table(out)
    # Half the hosts (and, following them, half the quota) run half the GPUs.
    assert [r["gpus_after"] for r in rows] == ["24", "48"]
    assert "greedy: add_hosts:h100=0, policy.objective=tiers" in capsys.readouterr().out


def test_readme_example_and_committed_helios_sweep_are_valid_specs(
    tmp_path: Path,
) -> None:
    import re

    from placewise.benchmarks.sweep.check import check
    from placewise.benchmarks.sweep.spec import SweepSpec, resolve

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(kind: replay.*?)```", readme, re.S)
    assert block is not None
    example = SweepSpec.model_validate(yaml.safe_load(block.group(1)))
    assert example.solvers == ["greedy", "cpsat"] and example.target is not None
    helios = root / "benchmarks" / "configs" / "sweeps" / "sweep-helios.yaml"
    spec = resolve(load_spec(helios), helios)
    if not Path(spec.jobs.trace).is_file():  # type: ignore[union-attr, arg-type]
        pytest.skip("../shared not found beside the checkout: the Helios trace")
    checked = check(spec, helios)
    assert len(checked.points) == 18
    assert checked.target is not None and checked.target.label == "p95_delay_s@normal"


def test_an_edited_input_file_gives_new_point_keys(tmp_path: Path) -> None:
    from placewise.benchmarks.sweep.check import check

    trace = tmp_path / "trace.csv"
    trace.write_text(Path(SMALL).read_text(encoding="utf-8"), encoding="utf-8")
    path = _spec(tmp_path, jobs={"trace": str(trace)})
    before = [p.key for p in check(load_spec(path), path).points]
    assert before == [p.key for p in check(load_spec(path), path).points]
    with trace.open("a", encoding="utf-8") as fh:
        fh.write("6,5,1,4,1,60,600,0,Pass\n")
    after = [p.key for p in check(load_spec(path), path).points]
    assert not set(before) & set(after)


def test_a_failed_point_is_cached_and_still_fails_the_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = executors.run_point

    def failing(data: dict[str, Any]) -> dict[str, Any]:
        rec = real(data)
        if dict(data["coords"])["add_hosts:h100"] == 2:
            rec.update(ok=False, error="plan fails the validator")
        return rec

    monkeypatch.setattr(executors, "run_point", failing)
    argv = ["sweep", str(_spec(tmp_path)), "-o", str(tmp_path / "out"), "--jobs", "1"]
    assert main(argv) == 1
    monkeypatch.setattr(executors, "run_point", real)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "0 computed (inline), 3 cached, 1 failed" in err
    assert "FAILED add_hosts:h100=2" in err


@requires_shared
def test_ray_and_the_pool_agree_on_a_helios_window(tmp_path: Path) -> None:
    """The issue's check: greedy, a 6-hour window of the Helios trace on the
    `helios` family cut to 8 hosts, three variants, Ray with 2 CPUs."""
    pytest.importorskip("ray", reason="ray not installed: pip install 'placewise[ray]'")
    spec = {
        "base": {"family": "helios", "overrides": {"nodes": 8}},
        "jobs": {"trace": str(HELIOS), "hours": 6},
        "axes": {"add_hosts": {"flavor": "h100", "values": [0, 4, 8]}},
        "solvers": ["greedy"],
        "metrics": ["mean_delay_s", "p95_delay_s", "preemptions"],
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    pool, ray = tmp_path / "pool", tmp_path / "ray"
    assert main(["sweep", str(path), "-o", str(pool), "--jobs", "2"]) == 0
    assert main(["sweep", str(path), "-o", str(ray), "--ray", "--jobs", "2"]) == 0
    assert _table(ray) == _table(pool)
    assert len(_table(pool)) == 3


def test_a_variant_that_leaves_jobs_out_meets_no_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On one host the 16-GPU job can never run and the replay leaves it out,
    so nobody waits there; that is not a cluster that meets the target.  The
    first variant that runs every job the others run is the answer."""
    trace = tmp_path / "t.csv"
    trace.write_text(
        "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status\n"
        "big,1,16,4,2,0,600,0,Pass\nsmall,1,4,4,1,30,600,0,Pass\n"
    )
    path = _spec(
        tmp_path,
        jobs={"trace": str(trace)},
        axes={"add_hosts": {"flavor": "h100", "values": [0, 1]}},
        target={"metric": "p95_delay_s", "at_most": 3600},
    )
    out = tmp_path / "out"
    assert main(["sweep", str(path), "-o", str(out), "--jobs", "1"]) == 0
    table = _table(out)
    assert table[0]["p95_delay_s"] == "0"  # the base: one job, no wait
    assert "greedy: add_hosts:h100=1" in capsys.readouterr().out
