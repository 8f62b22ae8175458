"""What a replay measured, as one flat dict per run (and per priority).

Definitions (they are the contract other tools read):

- a job's *delay* is the total time it spent queued: every wait counts,
  also the waits after an eviction; a job still queued at the end counts
  with its wait so far.  ``*_delay_s``: mean, p50, p95 over the jobs that
  arrived.
- *JCT* is finish - arrival of the finished jobs; *slowdown* is JCT / run
  time, the run time bounded below by 10 s (short jobs would otherwise turn
  a one-tick wait into a huge ratio).
- *utilisation* is GPU time in use (runs of replayed jobs, plain pods and
  work running at the start) over cluster GPUs x replay time, time-weighted
  over the whole replay (``utilization_pct``) and over the arrival window.
- *goodput*: Σ GPUs x run time of finished jobs (GPU-hours; the GPUs of the
  run that finished); *wasted*: Σ
  over evictions of GPUs x time since that job's last start.
- *largest*: the tenth of the jobs with the most GPUs (ties: earlier
  arrival first), at least one job.

Work running when the replay starts is not a job here (its past is
unknown), but its evictions count in ``preemptions`` and ``wasted_gpu_h``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from placewise.benchmarks.replay.engine import JobRecord, ReplayResult

SLOWDOWN_FLOOR_S = 10.0
LARGEST_SHARE = 0.10
JOB_KEYS = (
    "jobs",
    "started",
    "finished",
    "mean_delay_s",
    "p50_delay_s",
    "p95_delay_s",
    "mean_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "mean_slowdown",
    "p95_slowdown",
    "utilization_pct",
    "goodput_gpu_h",
    "wasted_gpu_h",
    "preemptions",
    "solver_seconds",
    "largest_jobs",
    "largest_mean_delay_s",
    "largest_p95_delay_s",
)
"""Keys of every metrics dict, overall and per priority."""


def _pct(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _mean(values: Sequence[float]) -> float | None:
    return float(sum(values) / len(values)) if values else None


def largest(records: Sequence[JobRecord]) -> list[JobRecord]:
    """The top tenth of ``records`` by GPUs (at least one)."""
    if not records:
        return []
    n = max(1, math.ceil(LARGEST_SHARE * len(records)))
    return sorted(records, key=lambda r: (-r.gpus, r.arrival_s, r.key))[:n]


def _gpu_seconds(
    res: ReplayResult, lo: float, hi: float, keys: set[str] | None
) -> float:
    total = 0.0
    for start, stop, gpus, key in res.segments:
        if keys is not None and key not in keys:
            continue
        total += gpus * max(0.0, min(stop, hi) - max(start, lo))
    return total


def job_metrics(
    res: ReplayResult, records: Sequence[JobRecord], keys: set[str] | None
) -> dict[str, Any]:
    """The metrics of ``records``; ``keys`` restricts GPU time to them
    (None: all the cluster's work, plain pods included)."""
    end = res.end_s
    arrived = [r for r in records if r.arrival_s <= end]
    delays = [r.waited_s for r in arrived]
    done = [r for r in arrived if r.finish_s is not None]
    jct = [r.finish_s - r.arrival_s for r in done if r.finish_s is not None]
    slow = [
        (r.finish_s - r.arrival_s) / max(r.run_s, SLOWDOWN_FLOOR_S)
        for r in done
        if r.finish_s is not None
    ]
    big = largest(arrived)
    busy = _gpu_seconds(res, 0.0, end, keys)
    if keys is None:
        busy += res.background_gpus * end
    area = res.capacity_gpus * end
    return {
        "jobs": len(records),
        "started": sum(r.first_start_s is not None for r in arrived),
        "finished": len(done),
        "mean_delay_s": _mean(delays),
        "p50_delay_s": _pct(delays, 50),
        "p95_delay_s": _pct(delays, 95),
        "mean_jct_s": _mean(jct),
        "p50_jct_s": _pct(jct, 50),
        "p95_jct_s": _pct(jct, 95),
        "mean_slowdown": _mean(slow),
        "p95_slowdown": _pct(slow, 95),
        "utilization_pct": 100.0 * busy / area if area > 0 else None,
        "goodput_gpu_h": sum(r.run_gpus * r.run_s for r in done) / 3600.0,
        "wasted_gpu_h": sum(r.wasted_gpu_s for r in records) / 3600.0,
        "preemptions": sum(r.evictions for r in records),
        "solver_seconds": None,
        "largest_jobs": len(big),
        "largest_mean_delay_s": _mean([r.waited_s for r in big]),
        "largest_p95_delay_s": _pct([r.waited_s for r in big], 95),
    }


def compute(res: ReplayResult) -> dict[str, Any]:
    """Overall metrics, settings worth keeping with them, and ``by_priority``."""
    jobs = [r for r in res.records if r.counted]
    out = job_metrics(res, jobs, None)
    # Evictions of the work running at the start count too (not its delays).
    out["wasted_gpu_h"] = sum(r.wasted_gpu_s for r in res.records) / 3600.0
    out["preemptions"] = res.preemptions
    out["solver_seconds"] = res.solver_seconds
    window = res.last_arrival_s
    if window > 0:
        busy = _gpu_seconds(res, 0.0, window, None) + res.background_gpus * window
        out["utilization_arrivals_pct"] = 100.0 * busy / (res.capacity_gpus * window)
    else:
        out["utilization_arrivals_pct"] = None
    out.update(
        solves=res.solves,
        still_waiting=sum(r.wait_since is not None for r in jobs),
        still_running=sum(
            r.started_at is not None and r.finish_s is None for r in jobs
        ),
        offered_load=res.offered_load,
        capacity_gpus=res.capacity_gpus,
        simulated_h=res.end_s / 3600.0,
        cpu_only_skipped=res.cpu_only,
        impossible=len(res.impossible),
    )
    groups: dict[str, list[JobRecord]] = {}
    order: dict[str, int] = {}
    for r in jobs:
        groups.setdefault(r.priority_name, []).append(r)
        order[r.priority_name] = r.priority
    out["by_priority"] = {
        name: job_metrics(res, groups[name], {r.key for r in groups[name]})
        for name in sorted(groups, key=lambda n: (-order[n], n))
    }
    return out
