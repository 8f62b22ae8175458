"""Time in a snapshot: since when each running workload runs, how long it
may still run.

A preemption throws away the work a victim did since it started, and work
about to finish frees its room soon anyway; the optimizer prices victims
by both (:mod:`placewise.solver.lost_work`).  Every figure may be unknown
(None) — a dump without times, a pod not started yet, no declared
duration — and the pricing says what it assumes then; nothing here ever
turns "unknown" into zero.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from placewise.models.cluster import Pod
from placewise.models.scheduling import Frozen
from placewise.models.workload import Workload

EXPECTED_DURATION = "placewise.io/expected-duration"
"""Workload annotation: how long one run is expected to take (a Go duration
such as ``90m`` or ``1h30m``, or whole seconds)."""


class RunTime(Frozen):
    """One running workload's clock, in whole seconds."""

    started: datetime | None = None
    """Its Admitted (else QuotaReserved) condition's time, else its pods'
    earliest ``status.startTime``; None when none is recorded."""
    elapsed: int | None = None
    """Seconds from ``started`` to the snapshot's *now* (never negative)."""
    remaining: int | None = None
    """Seconds it may still run: Kueue's maximum execution time left, or its
    expected duration left, the smaller when both are known; None when
    neither is (an expected duration already overrun is no estimate)."""


def aware(t: datetime | None) -> datetime | None:
    """A time without a zone is UTC (as in the API); code that builds
    workloads (a replay) may set naive ones, and the two never compare."""
    return t if t is None or t.tzinfo else t.replace(tzinfo=UTC)


def newest(workloads: Iterable[Workload], pods: Iterable[Pod]) -> datetime | None:
    """The newest timestamp a dump holds: the default *now* of a solve."""
    stamps = [
        t
        for w in workloads
        for t in (w.newest_timestamp, w.running_since, w.quota_reserved_at)
    ]
    stamps += [t for p in pods for t in (p.start_time, p.created)]
    known = [aware(t) for t in stamps if t is not None]
    return max(t for t in known if t is not None) if known else None


def pod_starts(
    workloads: Iterable[Workload], pods: Iterable[Pod]
) -> dict[str, datetime]:
    """Workload key -> the earliest ``startTime`` of its pods.  A pod
    belongs to a workload it names (Kueue's ``kueue.x-k8s.io/workload``
    annotation, its pod group) or whose owner (the Job) it shares."""
    by_name: dict[str, list[datetime]] = defaultdict(list)
    by_owner: dict[tuple[str, str], list[datetime]] = defaultdict(list)
    for p in pods:
        start = aware(p.start_time)
        if start is None:
            continue
        if p.workload:
            by_name[f"{p.namespace}/{p.workload}"].append(start)
        for uid in p.owner_uids:
            by_owner[(p.namespace, uid)].append(start)
    out: dict[str, datetime] = {}
    for w in workloads:
        found = list(by_name.get(w.key, ()))
        for uid in w.owner_uids:
            found += by_owner.get((w.namespace, uid), ())
        if found:
            out[w.key] = min(found)
    return out


def run_times(
    running: Iterable[Workload],
    pods: Iterable[Pod],
    now: datetime | None,
) -> dict[str, RunTime]:
    """Workload key -> its clock, for every running workload."""
    running = list(running)
    starts = pod_starts(running, pods)
    return {w.key: run_time(w, starts, now) for w in running}


def run_time(
    w: Workload, pod_starts: Mapping[str, datetime], now: datetime | None
) -> RunTime:
    # A workload built in code (a replay) may set only quota_reserved_at.
    started = aware(w.running_since or w.quota_reserved_at or pod_starts.get(w.key))
    now = aware(now)
    elapsed = None
    if started is not None and now is not None:
        elapsed = max(0, int((now - started).total_seconds()))
    left: list[int] = []
    if w.max_execution_seconds is not None and elapsed is not None:
        used = w.past_execution_seconds + elapsed
        left.append(max(0, w.max_execution_seconds - used))
    if (
        w.expected_seconds is not None
        and elapsed is not None
        and elapsed < w.expected_seconds
    ):
        left.append(w.expected_seconds - elapsed)
    return RunTime(
        started=started, elapsed=elapsed, remaining=min(left) if left else None
    )
