"""The replay itself: arrivals and run times through repeated solves.

Kueue admits work in cycles; a platform team cares about what that does to
waiting times over days, not about one decision.  So the replay keeps the
cluster's state over simulated time and asks the solver for a plan whenever
something changed (an arrival, a finish, an eviction), on a grid of
``tick_s`` seconds so that events close together share one solve.  Each plan
is checked by the independent validator and applied as Kueue would: admitted
workloads run for their run time; a preempted one goes back to its queue
at its old place (Kueue orders a preempted workload by its creation time:
the eviction timestamp only requeues work evicted for PodsReady timeouts or
admission checks) and loses its work, restarting from zero when admitted
again.  An invalid plan, or a solver error, ends that replay as a failure;
it is never applied.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from placewise.adapters.cli.common import read_policy
from placewise.benchmarks.replay.afs import UsageTracker, with_afs
from placewise.benchmarks.replay.config import SOLVER_NAMES, ReplayConfig
from placewise.benchmarks.replay.jobs import Workset, build
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import Admission, Workload
from placewise.solver.metrics import pod_set_gpus
from placewise.solver.policy import Policy

Progress = Callable[[float, float], None]
"""Called with (simulated seconds so far, the horizon) after each solve."""


@dataclass(slots=True)
class JobRecord:
    """What happened to one job; the metrics are computed from these alone."""

    key: str
    arrival_s: float
    run_s: float
    gpus: int
    priority: int
    priority_name: str
    counted: bool = True
    """False for work running at the start (its past is unknown)."""
    waited_s: float = 0.0
    """Total time spent in the queue, every wait (after evictions too)."""
    wait_since: float | None = None
    started_at: float | None = None
    """Start of the current run (None while not running)."""
    first_start_s: float | None = None
    finish_s: float | None = None
    starts: int = 0
    evictions: int = 0
    wasted_gpu_s: float = 0.0
    """Σ over its evictions of GPUs x time since its last start."""
    run_gpus: int = 0
    """GPUs its current (or last) admission holds: fewer than ``gpus`` when
    an elastic pod set (``minCount``) was admitted short."""


@dataclass(slots=True)
class ReplayResult:
    """Everything one replay observed; :meth:`metrics` summarises it."""

    config: ReplayConfig
    ok: bool = True
    error: str | None = None
    records: list[JobRecord] = field(default_factory=list)
    segments: list[tuple[float, float, int, str]] = field(default_factory=list)
    """(start, stop, GPUs, job) of every run, finished, evicted or cut at the end."""
    samples: list[tuple[float, int, int]] = field(default_factory=list)
    """(time, busy GPUs, queued jobs) after each visited tick."""
    end_s: float = 0.0
    last_arrival_s: float = 0.0
    capacity_gpus: int = 0
    background_gpus: int = 0
    preemptions: int = 0
    solves: int = 0
    solver_seconds: float = 0.0
    wall_seconds: float = 0.0
    cpu_only: int = 0
    impossible: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    offered_load: float = 0.0
    afs_usage: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    """(time, admission-fair-sharing usage per LocalQueue) after each visited
    tick and each sampling; empty when the instance has no usage-based ClusterQueue."""

    @property
    def solver(self) -> str:
        return self.config.solver

    def metrics(self) -> dict[str, Any]:
        from placewise.benchmarks.replay.metrics import compute

        return compute(self)


def run_replay(config: ReplayConfig, progress: Progress | None = None) -> ReplayResult:
    """Replay ``config``; bad input raises (ValueError, InstanceError), a
    solver failure or an invalid plan is returned as ``ok=False``."""
    config.check()
    return run_workset(config, build(config), progress)


def run_workset(
    config: ReplayConfig,
    work: Workset,
    progress: Progress | None = None,
    policy: Policy | None = None,
) -> ReplayResult:
    """Replay ready-made work (what :func:`run_replay` builds from ``config``;
    tests and other front ends may build their own).  ``policy``: the
    solver's objective settings (a sweep varies them); without it the
    config's ``--policy`` file, else the defaults.  A bad file raises
    InstanceError naming it, before any solve."""
    if policy is None:
        policy = read_policy(config.policy)
    wall = time.perf_counter()
    if config.admission_fair_sharing:
        work = dataclasses.replace(work, base=with_afs(work.base))
    res = ReplayResult(
        config,
        capacity_gpus=work.capacity_gpus,
        background_gpus=work.background_gpus,
        cpu_only=work.cpu_only,
        impossible=list(work.impossible),
        warnings=list(work.warnings),
        offered_load=work.offered_load,
    )
    loop = _Loop(config, work, res, progress, policy)
    try:
        loop.run()
    except Exception as exc:  # a solver crash is that run's failure, reported
        res.ok = False
        res.error = f"{type(exc).__name__}: {exc}"
        res.end_s = loop.t  # the figures so far stay readable
    res.wall_seconds = time.perf_counter() - wall
    return res


class _Loop:
    """The state of one replay between ticks."""

    def __init__(
        self,
        config: ReplayConfig,
        work: Workset,
        res: ReplayResult,
        progress: Progress | None,
        policy: Policy,
    ) -> None:
        self.config, self.work, self.res, self.progress = config, work, res, progress
        self.policy = policy
        self.base = work.base
        self.afs = UsageTracker.of(self.base)
        """Each LocalQueue's AFS usage over time (None: AFS is off)."""
        self.queued: dict[str, Workload] = {}
        self.running: dict[str, Workload] = {}
        self.waiting: dict[str, Workload] = {}
        self.ends: dict[str, float] = {}
        self.heap: list[tuple[float, str]] = []
        self.records: dict[str, JobRecord] = {}
        for j in work.jobs:
            self.queued[j.key] = j.workload
            self.records[j.key] = JobRecord(
                j.key, j.arrival_s, j.run_s, j.gpus, j.priority, j.priority_name
            )
        for c in work.carried:
            self.queued[c.key] = c.queued
            rec = JobRecord(
                c.key,
                0.0,
                c.remaining_s,
                c.gpus,
                c.workload.priority,
                _name(c.workload),
                counted=False,
            )
            rec.started_at, rec.first_start_s, rec.starts = 0.0, 0.0, 1
            rec.run_gpus = c.gpus
            self.records[c.key] = rec
            self.running[c.key] = c.workload
            self._schedule_end(c.key, c.remaining_s)
        res.records = list(self.records.values())
        res.last_arrival_s = work.jobs[-1].arrival_s if work.jobs else 0.0
        self.horizon = res.last_arrival_s + config.drain_s
        self._evicted_last = 0
        self.t = 0.0
        """The tick being processed."""

    def _grid(self, at: float) -> float:
        """The first solve time at or after ``at`` (the tick grid, shifted
        by its phase)."""
        tick, phase = self.config.tick_s, self.config.tick_phase_s
        return phase + math.ceil((at - phase) / tick) * tick

    def now(self, t: float) -> datetime:
        return self.work.start + timedelta(seconds=t)

    def _schedule_end(self, key: str, end: float) -> None:
        self.ends[key] = end
        heapq.heappush(self.heap, (end, key))

    def run(self) -> None:
        res, jobs, tick = self.res, self.work.jobs, self.config.tick_s
        upcoming = 0
        changed = bool(self.running) or bool(jobs)
        t = 0.0
        while True:
            if self.afs is not None:  # samples due before this tick's changes
                self.afs.advance(t, self.running.values())
            changed |= self._finish_until(t)
            while upcoming < len(jobs) and jobs[upcoming].arrival_s <= t:
                job = jobs[upcoming]
                upcoming += 1
                stamp = self.now(job.arrival_s)
                queued = job.workload.model_copy(
                    update={"creation_timestamp": stamp, "queue_order_timestamp": stamp}
                )
                self.queued[job.key] = self.waiting[job.key] = queued
                self.records[job.key].wait_since = job.arrival_s
                changed = True
            if self.waiting and changed:
                if not self._solve_and_apply(t):
                    res.end_s = t
                    break
                changed = bool(self._evicted_last)
            else:
                changed = False
            res.samples.append((t, self._busy(), len(self.waiting)))
            if self.afs is not None:
                self.afs.record(t)
            if self.progress is not None:
                self.progress(t, self.horizon)
            nxt = []
            while self.heap and self.ends.get(self.heap[0][1]) != self.heap[0][0]:
                heapq.heappop(self.heap)  # an evicted run's end: stale
            if self.heap:
                nxt.append(self.heap[0][0])
            if upcoming < len(jobs):
                nxt.append(jobs[upcoming].arrival_s)
            if changed and self.waiting:
                nxt.append(t + tick)
            if not nxt:
                # Drained, or only work no plan admits is left and nothing
                # will change any more: the replay ends here.
                res.end_s = self._drained_end(t) if not self.waiting else t
                break
            t_next = max(self._grid(t + tick), self._grid(min(nxt)))
            if t_next > self.horizon:
                self._finish_until(self.horizon)
                res.end_s = self.horizon
                break
            t = self.t = t_next
        if res.samples and res.samples[-1][0] < res.end_s:
            res.samples.append((res.end_s, self._busy(), len(self.waiting)))
        if self.afs is not None:
            res.afs_usage = self.afs.series
        self._close(res.end_s)

    def _drained_end(self, t: float) -> float:
        stops = [r.finish_s for r in self.res.records if r.finish_s is not None]
        return max([self.res.last_arrival_s, *stops]) if stops else t

    def _finish_until(self, t: float) -> bool:
        done = False
        while self.heap and self.heap[0][0] <= t:
            end, key = heapq.heappop(self.heap)
            if self.ends.get(key) != end:
                continue  # evicted since: a stale entry
            del self.ends[key]
            self.running.pop(key)
            rec = self.records[key]
            assert rec.started_at is not None
            self.res.segments.append((rec.started_at, end, rec.run_gpus, key))
            rec.finish_s, rec.started_at = end, None
            done = True
        return done

    def _busy(self) -> int:
        return self.work.background_gpus + sum(
            self.records[k].run_gpus for k in self.running
        )

    def _solve_and_apply(self, t: float) -> bool:
        res = self.res
        now = self.now(t)
        base = self.base if self.afs is None else self.afs.snapshot_base(now)
        snap = snapshot_of(base, self.running, self.waiting, now)
        start = time.perf_counter()
        plan = _solve(self.config, snap, self.policy)
        res.solver_seconds += time.perf_counter() - start
        res.solves += 1
        bad = validate(snap, plan)
        if bad:
            res.ok = False
            res.error = (
                f"plan at t={t:.0f}s fails the validator ({len(bad)} "
                f"violation(s)); first: {bad[0]}"
            )
            return False
        self._apply(plan, t)
        if self.afs is not None:
            admitted = [self.running[a.workload] for a in plan.admissions]
            self.afs.settle(t, admitted, self.running.values())
        return True

    def _apply(self, plan: Plan, t: float) -> None:
        stamp = self.now(t)
        self._evicted_last = 0
        for p in plan.preemptions:
            if p.workload in self.running:
                self._evict(p.workload, t)
        for a in plan.admissions:
            key = a.workload
            if key in self.running:  # re-placed while running: a restart
                self._evict(key, t)
            w = self.waiting.pop(key)
            rec = self.records[key]
            assert rec.wait_since is not None
            rec.waited_s += t - rec.wait_since
            rec.wait_since, rec.started_at = None, t
            rec.starts += 1
            rec.run_gpus = sum(pod_set_gpus(p) for p in a.pod_set_assignments)
            if rec.first_start_s is None:
                rec.first_start_s = t
            self.running[key] = w.model_copy(
                update={
                    "admission": Admission(
                        cluster_queue=a.cluster_queue,
                        pod_set_assignments=a.pod_set_assignments,
                    ),
                    "quota_reserved": True,
                    "quota_reserved_at": stamp,
                    "running_since": stamp,
                }
            )
            self._schedule_end(key, t + rec.run_s)

    def _evict(self, key: str, t: float) -> None:
        """Back to the queue at its old place, work lost.  Kueue keeps a
        preempted workload's creation time as its queue order (with
        PrioritySortingWithinCohort, on by default); requeuing it at the
        eviction time sent every victim to the back of its queue, under
        both solvers, and each further eviction pushed it back again."""
        self.running.pop(key)
        del self.ends[key]
        rec = self.records[key]
        assert rec.started_at is not None
        self.res.segments.append((rec.started_at, t, rec.run_gpus, key))
        rec.wasted_gpu_s += rec.run_gpus * (t - rec.started_at)
        rec.evictions += 1
        rec.started_at, rec.wait_since = None, t
        self.res.preemptions += 1
        self._evicted_last += 1
        self.waiting[key] = self.queued[key]

    def _close(self, end: float) -> None:
        """Cut what still runs or waits at the end of the replay."""
        for key in list(self.running):
            rec = self.records[key]
            assert rec.started_at is not None
            self.res.segments.append(
                (rec.started_at, max(end, rec.started_at), rec.run_gpus, key)
            )
        for key in self.waiting:
            rec = self.records[key]
            assert rec.wait_since is not None
            rec.waited_s += max(0.0, end - rec.wait_since)
            rec.wait_since = end


def _name(w: Workload) -> str:
    return w.priority_class.name if w.priority_class is not None else str(w.priority)


def _solve(config: ReplayConfig, snap: Snapshot, policy: Policy) -> Plan:
    from placewise.solver.solve import SolveParams, solve

    return solve(
        snap,
        SolveParams(
            solver=SOLVER_NAMES[config.solver],
            time_limit=config.time_limit,
            workers=config.workers,
            seed=config.seed,
            deterministic_time=config.deterministic_time,
            policy=policy,
        ),
    )


def snapshot_of(
    base: Snapshot,
    running: Mapping[str, Workload],
    waiting: Mapping[str, Workload],
    now: datetime | None = None,
) -> Snapshot:
    """The base cluster with the replay's running and queued workloads, at
    the simulated ``now`` (what the optimizer prices lost work against)."""
    objects = dataclasses.replace(
        base.objects, workloads={**running, **waiting}, now=now
    )
    return Snapshot(objects)
