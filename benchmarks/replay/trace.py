"""Reading a job trace: the Helios CSV format, with located errors.

A trace is what real users submitted; a replay is only as honest as its
reading of it.  So every row is checked and a bad value is reported as
``FILE:LINE: column C: ...`` (exit 2 through the CLI), never a traceback or
a silently skipped job.  Only the columns the replay needs are read, by
name, so any CSV with the Helios header works whatever else it carries.

Helios semantics (``shared/data/helios-15k/PROVENANCE.md``): ``interval`` is
the gap in seconds since the previous row's submission (rows are in submit
order), so a job's arrival is the running sum; ``run_time`` is the seconds it
ran; ``gpu_num`` counts the GPUs of the whole job, spread evenly over
``node_num`` hosts.  Rows without GPUs are skipped and counted; every other
row replays its run time whatever its ``new_status``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from placewise.models.errors import InstanceError, Location, Problem, describe

TRACE_FORMATS = ("helios",)
HELIOS_COLUMNS = (
    "u_id",
    "user",
    "gpu_num",
    "cpu_num",
    "node_num",
    "interval",
    "run_time",
    "wall_time",
    "new_status",
)
"""The Helios header; every one must be present (extra columns are ignored)."""
NUMERIC = ("gpu_num", "cpu_num", "node_num", "interval", "run_time", "wall_time")
MAX_PROBLEMS = 20
"""Errors reported at most (a wrong file would otherwise print every line)."""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One GPU job of the trace: ``pods`` pods of ``gpus_per_pod`` GPUs."""

    job_id: str
    user: str
    arrival_s: int
    """Seconds since the trace's first submission."""
    run_s: int
    pods: int
    gpus_per_pod: int
    line: int

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True, slots=True)
class Trace:
    """The GPU jobs of a trace in arrival order, and what was left out."""

    path: str
    jobs: tuple[TraceJob, ...]
    cpu_only: int
    """Rows without GPUs: skipped (the replay places GPU work)."""


def read_trace(path: str | Path, trace_format: str = "helios") -> Trace:
    """Read ``path``; InstanceError (exit 2) lists every located problem."""
    if trace_format not in TRACE_FORMATS:
        raise ValueError(
            f"unknown trace format {trace_format!r}; known: {', '.join(TRACE_FORMATS)}"
        )
    name = str(path)
    try:
        with Path(path).open(newline="", encoding="utf-8") as fh:
            return _read_helios(name, csv.reader(fh))
    except OSError as exc:
        raise InstanceError(
            [Problem(Location(file=name), f"cannot read: {exc.strerror}")]
        ) from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InstanceError(
            [Problem(Location(file=name), f"not a readable CSV: {exc}")]
        ) from None


def _read_helios(name: str, rows: Iterator[list[str]]) -> Trace:
    header = next(rows, None)
    if header is None:
        raise InstanceError([Problem(Location(file=name, line=1), "empty file")])
    index = {col.strip(): i for i, col in enumerate(header)}
    missing = [c for c in HELIOS_COLUMNS if c not in index]
    if missing:
        raise InstanceError(
            [
                Problem(Location(file=name, line=1), f"column {c}: missing in header")
                for c in missing
            ]
        )
    problems: list[Problem] = []
    jobs: list[TraceJob] = []
    cpu_only = 0
    clock = 0
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        values, bad = _numbers(name, line, row, index)
        problems += bad
        if len(problems) >= MAX_PROBLEMS:
            break
        if bad:
            continue
        clock += values["interval"]
        gpus, hosts = values["gpu_num"], values["node_num"]
        if gpus == 0:
            cpu_only += 1
            continue
        where = Location(file=name, line=line)
        if hosts < 1:
            problems.append(Problem(where, "column node_num: a GPU job needs >= 1"))
            continue
        if gpus % hosts:
            problems.append(
                Problem(
                    where,
                    f"column gpu_num: {gpus} GPUs do not split evenly over "
                    f"node_num {hosts} hosts",
                )
            )
            continue
        jobs.append(
            TraceJob(
                job_id=_cell(row, index["u_id"]) or str(line - 1),
                user=_cell(row, index["user"]),
                arrival_s=clock,
                run_s=values["run_time"],
                pods=hosts,
                gpus_per_pod=gpus // hosts,
                line=line,
            )
        )
    if problems:
        raise InstanceError(problems[:MAX_PROBLEMS])
    return Trace(name, tuple(jobs), cpu_only)


def _cell(row: list[str], i: int) -> str:
    return row[i].strip() if i < len(row) else ""


def _numbers(
    name: str, line: int, row: list[str], index: dict[str, int]
) -> tuple[dict[str, int], list[Problem]]:
    """The numeric columns of one row as exact integers (non-negative)."""
    out: dict[str, int] = {}
    bad: list[Problem] = []
    where = Location(file=name, line=line)
    for col in NUMERIC:
        text = _cell(row, index[col])
        try:
            value = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                bad.append(
                    Problem(where, f"column {col}: {describe(text)} is not a number")
                )
                continue
            if not number.is_integer():
                bad.append(
                    Problem(
                        where, f"column {col}: {describe(text)} is not a whole number"
                    )
                )
                continue
            value = int(number)
        if value < 0:
            bad.append(Problem(where, f"column {col}: {value} is negative"))
            continue
        out[col] = value
    return out, bad
