"""The trace reader of ``placewise simulate``: good rows, and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.benchmarks.replay.trace import read_trace
from placewise.cli import main
from placewise.models.errors import InstanceError

DATA = Path(__file__).resolve().parents[1] / "data" / "replay"
CLUSTER = str(DATA / "one-host.yaml")
HEADER = "u_id,user,gpu_num,cpu_num,node_num,interval,run_time,wall_time,new_status"


def test_reads_jobs_arrivals_and_skips_cpu_only_rows() -> None:
    trace = read_trace(DATA / "helios-small.csv")
    assert trace.cpu_only == 2
    assert [j.job_id for j in trace.jobs] == ["0", "2", "3", "5"]
    # interval is the gap since the previous row, CPU-only rows included.
    assert [j.arrival_s for j in trace.jobs] == [0, 90, 180, 315]
    assert [(j.pods, j.gpus_per_pod) for j in trace.jobs] == [
        (1, 1),
        (1, 8),
        (1, 4),
        (1, 2),
    ]
    assert trace.jobs[1].run_s == 1200 and trace.jobs[1].line == 4


def test_multi_host_jobs_split_gpus_evenly_and_extra_columns_are_ignored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"extra,{HEADER}\nz,7,u,32,64,4,5,100,0,Pass\n")
    (job,) = read_trace(path).jobs
    assert (job.pods, job.gpus_per_pod, job.gpus, job.arrival_s) == (4, 8, 32, 5)


def _simulate(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "trace.csv"
    path.write_text(text)
    code = main(["simulate", CLUSTER, "--job-trace", str(path)])
    assert code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.replace(str(path), "FILE")


def test_missing_column_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = HEADER.replace(",run_time", "")
    err = _simulate(tmp_path, f"{header}\n0,1,8,4,1,0,0,Pass\n", capsys)
    assert "error: FILE:1: column run_time: missing in header" in err


def test_negative_value_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = "0,1,8,4,1,0,60,0,Pass\n1,1,8,4,1,10,-5,0,Pass\n"
    err = _simulate(tmp_path, f"{HEADER}\n{rows}", capsys)
    assert "error: FILE:3: column run_time: -5 is negative" in err


def test_non_numeric_value_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _simulate(tmp_path, f"{HEADER}\n0,1,eight,4,1,0,60,0,Pass\n", capsys)
    assert "error: FILE:2: column gpu_num: 'eight' is not a number" in err


def test_every_bad_row_is_reported_not_only_the_first(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,1,8,4,1,x,60,0,Pass\n1,1,8,4,3,0,1.5,0,Pass\n")
    with pytest.raises(InstanceError) as info:
        read_trace(path)
    shown = [str(p).replace(str(path), "FILE") for p in info.value.problems]
    assert shown == [
        "FILE:2: column interval: 'x' is not a number",
        "FILE:3: column run_time: '1.5' is not a whole number",
    ]


def test_gpus_that_do_not_split_over_hosts_are_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(f"{HEADER}\n0,1,8,4,3,0,60,0,Pass\n")
    with pytest.raises(InstanceError, match="8 GPUs do not split evenly"):
        read_trace(path)
