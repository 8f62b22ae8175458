"""The work a replay feeds the solver: the cluster, its jobs, their times.

Two sources, one shape.  A generated family brings its pending Workloads,
which arrive at their creation times (the generator draws a Poisson stream)
and run for seeded durations.  A trace (``--job-trace``) brings real jobs:
each becomes a Workload of ``pods`` pods of ``gpus_per_pod`` GPUs (a gang,
all or nothing) in a LocalQueue of the instance, with a priority class of
the instance, both chosen by the seeded rules below, and runs for its
recorded run time.  The instance's own pending Workloads join a trace
replay queued at time 0; its running Workloads keep running for a seeded
remaining time (they are not counted in the metrics: their past is unknown).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from placewise.benchmarks.replay.alone import never_admitted
from placewise.benchmarks.replay.config import ReplayConfig
from placewise.benchmarks.replay.trace import Trace, TraceJob, read_trace
from placewise.models.cluster import KUEUE_GROUP, QUEUE_NAME_LABEL
from placewise.models.errors import InstanceError, Problem
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.metrics import gpus_of, requested_gpus, usable, workload_gpus

MEDIAN_S = 1800.0
SIGMA = 0.75
MIN_S, MAX_S = 300.0, 4 * 3600.0
"""Generated run times: lognormal, median 30 min, clipped to 5 min .. 4 h."""
OPENB_MIN_S, OPENB_MAX_S = 60.0, 8 * 3600.0
RUNNING_LEFT_S = 3600.0
"""Running work at the start has a uniform remaining time up to this."""
CPU_PER_POD, CPU_PER_GPU = 2, 12
MEMORY_PER_POD_GI, MEMORY_PER_GPU_GI = 8, 96
"""Requests of a trace pod: 2 CPU + 12 per GPU, 8 GiB + 96 GiB per GPU (the
generator's workload classes' defaults; an 8-GPU pod fits an H100 host)."""
TRACE_START = datetime(2026, 1, 1)
"""Creation time of a trace's first job (the trace has no absolute times)."""


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """One unit of work: arrives, waits, runs ``run_s`` once admitted."""

    key: str
    arrival_s: float
    run_s: float
    gpus: int
    priority: int
    priority_name: str
    workload: Workload
    """Its queued (unadmitted) form: what goes back to the queue on eviction."""


@dataclass(frozen=True, slots=True)
class Carried:
    """A workload already running when the replay starts."""

    key: str
    workload: Workload
    queued: Workload
    remaining_s: float
    gpus: int


@dataclass(slots=True)
class Workset:
    """The cluster without workloads, and everything that will run on it."""

    base: Snapshot
    jobs: list[ReplayJob]
    carried: list[Carried]
    capacity_gpus: int
    background_gpus: int
    """GPUs held by plain pods for the whole replay."""
    start: datetime
    cpu_only: int = 0
    impossible: list[str] = field(default_factory=list)
    """Why each job no plan can ever admit was left out."""
    warnings: list[str] = field(default_factory=list)
    """The loader's warnings about the instance (dangling references, ...)."""
    offered_load: float = 0.0

    @property
    def span_s(self) -> float:
        if not self.jobs:
            return 0.0
        return self.jobs[-1].arrival_s - self.jobs[0].arrival_s


def build(config: ReplayConfig, cluster: Snapshot | None = None) -> Workset:
    """Cluster, jobs and times for ``config`` (already checked).

    ``cluster`` replaces the one ``config`` names (a sweep's edited copy of
    it: more hosts, other quotas); the jobs still come from ``config``.
    """
    snapshot = load_cluster(config) if cluster is None else cluster
    base = _without_workloads(snapshot)
    capacity, background = _capacity(snapshot)
    rng = np.random.default_rng(config.seed)
    pending = sorted(snapshot.pending, key=lambda w: w.key)
    jobs: list[ReplayJob]
    cpu_only = 0
    if config.job_trace:
        trace = read_trace(config.job_trace, config.trace_format)
        cpu_only = trace.cpu_only
        runs = durations([w.key for w in pending], rng, config.durations)
        jobs = [_job(w, 0.0, runs[w.key]) for w in pending]
        start = TRACE_START
        jobs += trace_jobs(snapshot, _window(trace, config.hours), config.seed, start)
    else:
        runs = durations([w.key for w in pending], rng, config.durations)
        start = min((w.creation_timestamp for w in pending), default=TRACE_START)
        jobs = [
            _job(w, (w.creation_timestamp - start).total_seconds(), runs[w.key])
            for w in pending
        ]
        if config.hours is not None:
            jobs = [j for j in jobs if j.arrival_s < config.hours * 3600]
    carried = [
        Carried(
            w.key,
            w,
            _requeued(w),
            float(rng.uniform(0, RUNNING_LEFT_S)),
            workload_gpus(w),  # what its admission holds (minCount may cut it)
        )
        for w in sorted(snapshot.running, key=lambda w: w.key)
    ]
    impossible: list[str] = []
    kept: list[ReplayJob] = []
    limits = _host_limits(snapshot)
    for job in jobs:
        why = impossible_reason(job, capacity, limits)
        if why is None:
            kept.append(job)
        else:
            impossible.append(f"{job.key}: {why}")
    alone = never_admitted(base, (j.workload for j in kept))
    impossible += [f"{j.key}: {alone[j.key]}" for j in kept if j.key in alone]
    kept = [j for j in kept if j.key not in alone]
    kept.sort(key=lambda j: (j.arrival_s, j.key))
    out = Workset(base, kept, carried, capacity, background, start, cpu_only)
    out.impossible = impossible
    out.warnings = [str(w) for w in snapshot.warnings]
    out.offered_load = offered_load(kept, capacity)
    if config.load is not None:
        out.jobs = rescale(kept, config.load, capacity)
        out.offered_load = offered_load(out.jobs, capacity)
    return out


def load_cluster(
    config: ReplayConfig, overrides: tuple[tuple[str, Any], ...] = ()
) -> Snapshot:
    """The cluster ``config`` names: its files, or its family generated at its
    seed (``overrides``: generator settings changed, as ``generate`` flags do)."""
    if config.family:
        from placewise.benchmarks.harness.matrix import (
            Instance,
            generate_snapshot,
            known_families,
        )

        if config.family not in known_families():
            raise ValueError(
                f"unknown family {config.family!r}; known: "
                f"{', '.join(known_families())}"
            )
        if config.arrivals:
            overrides = (*overrides, ("pending", config.arrivals))
        return generate_snapshot(Instance(config.family, config.seed, overrides))
    from placewise.adapters.io.loader import load_snapshot

    return load_snapshot(config.instances)


def _without_workloads(snapshot: Snapshot) -> Snapshot:
    import dataclasses

    return Snapshot(dataclasses.replace(snapshot.objects, workloads={}))


def _capacity(snapshot: Snapshot) -> tuple[int, int]:
    """GPUs of usable hosts, and those plain pods hold on them."""
    capacity = sum(gpus_of(n.allocatable) for n in snapshot.nodes.values() if usable(n))
    background = 0
    for pod in snapshot.pods.values():
        node = snapshot.nodes.get(pod.node_name or "")
        if pod.consumes_node and node is not None and usable(node):
            background += gpus_of(pod.requests)
    return capacity, background


def _host_limits(snapshot: Snapshot) -> list[Mapping[str, int]]:
    return [n.allocatable for n in snapshot.nodes.values() if usable(n)]


def impossible_reason(
    job: ReplayJob, capacity: int, hosts: Sequence[Mapping[str, int]]
) -> str | None:
    """Why no plan can ever admit ``job`` (more GPUs than the cluster, a pod
    no host can hold), or None."""
    if job.gpus > capacity:
        return f"needs {job.gpus} GPUs, the cluster has {capacity}"
    for ps in job.workload.pod_sets:
        need = {r: v for r, v in ps.requests.items() if v > 0}
        if not any(all(h.get(r, 0) >= v for r, v in need.items()) for h in hosts):
            shown = ", ".join(f"{r}={v}" for r, v in sorted(need.items()))
            return f"a pod of pod set {ps.name!r} ({shown}) fits no host"
    return None


def offered_load(jobs: Sequence[ReplayJob], capacity: int) -> float:
    """Σ GPUs x run time / (cluster GPUs x span of arrivals); 0 if undefined."""
    if not jobs or capacity <= 0:
        return 0.0
    span = max(j.arrival_s for j in jobs) - min(j.arrival_s for j in jobs)
    if span <= 0:
        return 0.0
    return sum(j.gpus * j.run_s for j in jobs) / (capacity * span)


def rescale(jobs: Sequence[ReplayJob], load: float, capacity: int) -> list[ReplayJob]:
    """Stretch or compress arrival times (about the first) to offer ``load``.

    The work stays the same; the span becomes Σ GPUs x run / (capacity x load).
    """
    now = offered_load(jobs, capacity)
    if now <= 0:
        raise ValueError(
            "--load needs jobs with GPUs arriving at two or more distinct times"
        )
    factor = now / load
    first = min(j.arrival_s for j in jobs)
    return [replace(j, arrival_s=first + (j.arrival_s - first) * factor) for j in jobs]


def _window(trace: Trace, hours: float | None) -> list[TraceJob]:
    if not trace.jobs or hours is None:
        return list(trace.jobs)
    first = trace.jobs[0].arrival_s
    return [j for j in trace.jobs if j.arrival_s - first < hours * 3600]


def durations(
    keys: Sequence[str], rng: np.random.Generator, kind: str = "generated"
) -> dict[str, float]:
    """Seeded run time of each generated workload (seconds)."""
    if kind == "openb":
        pool = openb_durations()
        raw = rng.choice(pool, size=len(keys))
        return {k: float(d) for k, d in zip(keys, raw, strict=True)}
    raw = rng.lognormal(math.log(MEDIAN_S), SIGMA, size=len(keys))
    return {k: float(min(MAX_S, max(MIN_S, d))) for k, d in zip(keys, raw, strict=True)}


def openb_durations(name: str = "default") -> np.ndarray[Any, np.dtype[np.float64]]:
    """Run times of the openb trace's GPU pods (deletion - scheduled), clipped
    to 1 min .. 8 h; median about 10 min, with a long tail."""
    import csv

    from placewise.benchmarks.fgd.trace import data_dir

    path = data_dir() / f"openb_pod_list_{name}.csv"
    out: list[float] = []
    with path.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["num_gpu"] in ("", "0") or not row["deletion_time"]:
                continue
            if not row["scheduled_time"]:
                continue
            d = float(int(row["deletion_time"]) - int(row["scheduled_time"]))
            out.append(min(OPENB_MAX_S, max(OPENB_MIN_S, d)))
    if not out:
        raise ValueError(f"no GPU pod durations in {path}")
    return np.asarray(out, dtype=np.float64)


def _priority_name(w: Workload) -> str:
    return w.priority_class.name if w.priority_class is not None else str(w.priority)


def _job(w: Workload, arrival: float, run: float) -> ReplayJob:
    gpus = requested_gpus(w)
    return ReplayJob(w.key, arrival, run, gpus, w.priority, _priority_name(w), w)


def _requeued(w: Workload) -> Workload:
    return w.model_copy(
        update={"admission": None, "quota_reserved": False, "quota_reserved_at": None}
    )


# -- trace jobs as Workloads ----------------------------------------------------


def _unit(seed: int, *parts: str) -> float:
    """A seeded uniform number in [0, 1) from names: the same job gets the
    same draw whatever window or load the replay uses."""
    text = ":".join([str(seed), *parts]).encode()
    digest = hashlib.blake2b(text, digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def queue_of(user: str, seed: int, queues: Sequence[str]) -> str:
    """The LocalQueue (``ns/name``) a trace user submits to."""
    return queues[int(_unit(seed, "user", user) * len(queues))]


def priority_weights(snapshot: Snapshot) -> list[tuple[str, int, float]]:
    """(class, value, weight) of the WorkloadPriorityClasses, by value: weighted
    by how many of the instance's workloads use each, uniform if none does."""
    classes = sorted(
        snapshot.objects.priority_classes.values(), key=lambda p: (p.value, p.name)
    )
    used = {p.name: 0 for p in classes}
    for w in snapshot.workloads.values():
        if w.priority_class is not None and w.priority_class.name in used:
            used[w.priority_class.name] += 1
    total = sum(used.values())
    return [
        (p.name, p.value, used[p.name] / total if total else 1.0 / len(classes))
        for p in classes
    ]


def priority_of(
    job_id: str, seed: int, weights: Sequence[tuple[str, int, float]]
) -> tuple[str, int] | None:
    """The priority class a trace job gets (None: the instance has none)."""
    if not weights:
        return None
    u = _unit(seed, "job", job_id) * sum(w for _, _, w in weights)
    for name, value, weight in weights:
        if u < weight:
            return name, value
        u -= weight
    return weights[-1][0], weights[-1][1]


def trace_jobs(
    snapshot: Snapshot, jobs: Sequence[TraceJob], seed: int, start: datetime
) -> list[ReplayJob]:
    """The trace's jobs as Workloads of the instance, decoded as the loader would."""
    from placewise.adapters.io.loader import RawObject, decode_objects

    queues = sorted(snapshot.local_queues)
    if not queues:
        raise ValueError("the instance has no LocalQueue to submit trace jobs to")
    weights = priority_weights(snapshot)
    tas = any(f.is_tas for f in snapshot.flavors.values())
    first = jobs[0].arrival_s if jobs else 0
    raws, meta = [], []
    for job in jobs:
        ns, lq = queue_of(job.user, seed, queues).split("/", 1)
        prio = priority_of(job.job_id, seed, weights)
        created = start + timedelta(seconds=job.arrival_s - first)
        obj = _trace_workload(job, ns, lq, prio, tas, created)
        raws.append(RawObject(obj, f"<trace line {job.line}>", None))
        meta.append((job, prio))
    problems: list[Problem] = []
    decoded, _ = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    out = []
    for job, prio in meta:
        ns, _ = queue_of(job.user, seed, queues).split("/", 1)
        w = decoded.workloads[f"{ns}/{_name(job)}"]
        value, name = (prio[1], prio[0]) if prio is not None else (0, "0")
        arrival = float(job.arrival_s - first)
        out.append(
            ReplayJob(w.key, arrival, float(job.run_s), job.gpus, value, name, w)
        )
    return out


def _name(job: TraceJob) -> str:
    return f"trace-{job.job_id}".lower().replace("_", "-")


def _trace_workload(
    job: TraceJob,
    namespace: str,
    local_queue: str,
    prio: tuple[str, int] | None,
    tas: bool,
    created: datetime,
) -> dict[str, object]:
    g = job.gpus_per_pod
    resources = {
        "requests": {
            "cpu": str(CPU_PER_POD + CPU_PER_GPU * g),
            "memory": f"{MEMORY_PER_POD_GI + MEMORY_PER_GPU_GI * g}Gi",
            "nvidia.com/gpu": str(g),
        },
        "limits": {"nvidia.com/gpu": str(g)},
    }
    pod_set: dict[str, object] = {
        "name": "main",
        "count": job.pods,
        "template": {
            "spec": {
                "containers": [
                    {"name": "main", "image": "trace", "resources": resources}
                ],
                "restartPolicy": "Never",
            }
        },
    }
    if tas:
        pod_set["topologyRequest"] = {"unconstrained": True}
    spec: dict[str, object] = {
        "active": True,
        "queueName": local_queue,
        "podSets": [pod_set],
    }
    if prio is not None:
        spec["priorityClassRef"] = {
            "group": KUEUE_GROUP,
            "kind": "WorkloadPriorityClass",
            "name": prio[0],
        }
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": _name(job),
            "namespace": namespace,
            "creationTimestamp": stamp,
            "labels": {QUEUE_NAME_LABEL: local_queue},
        },
        "spec": spec,
    }
