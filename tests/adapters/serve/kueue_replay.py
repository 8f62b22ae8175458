"""A replay's timeline as the live loop lived it, in the replay's own terms.

``placewise simulate`` summarises a replay from per-job records
(:class:`~placewise.benchmarks.replay.engine.JobRecord`) and run segments;
here the same records are rebuilt from what a watch on Workloads served
(arrival, admission, eviction, release, finish), so the end-to-end test of
``serve --mode kueue`` reports its figures with the replay's own metric code
and definitions, not a second copy of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placewise.benchmarks.replay.config import ReplayConfig
from placewise.benchmarks.replay.engine import JobRecord, ReplayResult

JSON = dict[str, Any]
GPU = "nvidia.com/gpu"


def gpus_of(workload: JSON) -> int:
    """GPUs a Workload asks for: Σ pod sets of count x per-pod request."""
    total = 0
    for ps in workload["spec"]["podSets"]:
        for c in ps["template"]["spec"]["containers"]:
            total += int(c["resources"]["requests"].get(GPU, 0)) * int(ps["count"])
    return total


@dataclass(frozen=True)
class Arrival:
    key: str
    at: float
    """Monotonic time the Workload was created."""
    workload: JSON


def records(
    arrivals: Mapping[str, Arrival],
    events: list[tuple[float, str, str]],
    run_s: float,
    t0: float,
    end: float,
) -> tuple[list[JobRecord], list[tuple[float, float, int, str]]]:
    """Job records and run segments (seconds since ``t0``) from the watch's
    events: a job waits from its arrival and again from each release, runs
    from each admission until its release or finish (or ``end``), and an
    eviction wastes its GPUs times the time since that run began."""
    recs: dict[str, JobRecord] = {}
    for a in arrivals.values():
        spec = a.workload["spec"]
        recs[a.key] = JobRecord(
            key=a.key,
            arrival_s=a.at - t0,
            run_s=run_s,
            gpus=gpus_of(a.workload),
            priority=int(spec.get("priority", 0)),
            priority_name=str(
                (spec.get("priorityClassRef") or {}).get("name", "default")
            ),
            wait_since=a.at - t0,
            run_gpus=gpus_of(a.workload),
        )
    segments: list[tuple[float, float, int, str]] = []
    for at, key, what in events:
        r, t = recs.get(key), at - t0
        if r is None:
            continue
        if what == "admitted" and r.started_at is None:
            if r.wait_since is not None:
                r.waited_s += t - r.wait_since
            r.wait_since, r.started_at = None, t
            r.starts += 1
            if r.first_start_s is None:
                r.first_start_s = t
        elif what == "evicted" and r.started_at is not None:
            r.evictions += 1
            r.wasted_gpu_s += r.gpus * (t - r.started_at)
        elif what in ("released", "finished") and r.started_at is not None:
            segments.append((r.started_at, t, r.gpus, key))
            r.started_at = None
            if what == "finished":
                r.finish_s = t
            else:
                r.wait_since = t
    for r in recs.values():
        if r.started_at is not None:
            segments.append((r.started_at, end - t0, r.gpus, r.key))
        if r.wait_since is not None:
            r.waited_s += end - t0 - r.wait_since
    return list(recs.values()), segments


def replay_result(
    arrivals: Mapping[str, Arrival],
    events: list[tuple[float, str, str]],
    *,
    run_s: float,
    t0: float,
    end: float,
    capacity_gpus: int,
    solves: int,
) -> ReplayResult:
    """The timeline as a :class:`ReplayResult`, ready for ``.metrics()``."""
    recs, segments = records(arrivals, events, run_s, t0, end)
    return ReplayResult(
        config=ReplayConfig(family="default", solver="auto"),
        records=recs,
        segments=segments,
        end_s=end - t0,
        last_arrival_s=max((a.at - t0 for a in arrivals.values()), default=0.0),
        capacity_gpus=capacity_gpus,
        preemptions=sum(r.evictions for r in recs),
        solves=solves,
    )
