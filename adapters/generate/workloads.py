"""Running (admitted) Workloads and pending Workloads (plain pods: :mod:`.pods`).

Running work is placed on the hosts through ``placement.Capacity`` and, for
Workloads, admitted through ``quota.quota_tree`` (Kueue's quota arithmetic);
both refuse anything Kueue could not have produced, so the snapshot is
consistent by construction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    format_quantity,
    parse_quantity,
    timestamp,
)
from placewise.adapters.generate.cluster import IntArray, Layout, flavor_labels
from placewise.adapters.generate.config import (
    LEVELS,
    GeneratorConfig,
    WorkloadClass,
)
from placewise.adapters.generate.placement import Capacity
from placewise.adapters.generate.quota import WPC_SOURCE, Team, fits
from placewise.models.cluster import HOSTNAME_LABEL, KUEUE_GROUP, PODS, QUEUE_NAME_LABEL
from placewise.models.moves import CHECKPOINTED, MOVABLE_LABEL
from placewise.solver.kueue.quota import QuotaTree

CLASS_LABEL = "placewise.io/class"
MAX_FAILURES = 60
"""Consecutive misses after which the cluster (or quota) counts as full."""
ANNOTATION = {
    "required": "kueue.x-k8s.io/podset-required-topology",
    "preferred": "kueue.x-k8s.io/podset-preferred-topology",
    "unconstrained": "kueue.x-k8s.io/podset-unconstrained-topology",
    "slice": "kueue.x-k8s.io/podset-slice-required-topology",
}


@dataclass(frozen=True)
class Draw:
    """One concrete workload sampled from a class."""

    cls: WorkloadClass
    count: int
    gpus: int
    cpu: int
    memory: int
    priority_class: str | None
    priority: int | None
    node_type: int | None
    min_count: int | None

    @property
    def request(self) -> IntArray:
        """Per-pod request vector in ``RESOURCES`` order (pods included)."""
        return np.array([self.cpu, self.memory, self.gpus, 1], dtype=np.int64)

    def requests(self) -> dict[str, int]:
        out = {CPU: self.cpu, MEMORY: self.memory, GPU: self.gpus}
        return {k: v for k, v in out.items() if v > 0}

    @property
    def pod_set_name(self) -> str:
        return self.cls.pod_set_name or ("main" if self.count == 1 else "workers")


def _choice(
    rng: np.random.Generator, values: tuple[Any, ...], weights: tuple[float, ...]
) -> Any:
    if len(values) == 1:
        return values[0]
    if not weights:
        return values[int(rng.integers(0, len(values)))]
    w = np.asarray(weights, dtype=float)
    return values[int(rng.choice(len(values), p=w / w.sum()))]


def sample(
    config: GeneratorConfig, cls: WorkloadClass, rng: np.random.Generator
) -> Draw:
    count = int(_choice(rng, cls.pod_counts, cls.pod_count_weights))
    gpus = int(_choice(rng, cls.gpus_per_pod, cls.gpus_per_pod_weights))
    cpu = parse_quantity(cls.cpu_per_pod, CPU) + gpus * parse_quantity(
        cls.cpu_per_gpu, CPU
    )
    memory = parse_quantity(cls.memory_per_pod, MEMORY) + gpus * parse_quantity(
        cls.memory_per_gpu, MEMORY
    )
    pclass: str | None = None
    priority = cls.priority
    if cls.priority_classes:
        names = tuple(cls.priority_classes)
        pclass = str(_choice(rng, names, tuple(cls.priority_classes.values())))
        priority = next(p.value for p in config.priority_classes if p.name == pclass)
    node_type = None
    if cls.node_types:
        name = _choice(rng, cls.node_types, ())
        node_type = next(i for i, t in enumerate(config.node_types) if t.name == name)
    min_count = None
    if count > 1 and cls.partial_probability and rng.random() < cls.partial_probability:
        min_count = max(1, math.ceil(cls.min_count_fraction * count))
    return Draw(cls, count, gpus, cpu, memory, pclass, priority, node_type, min_count)


def _level_label(config: GeneratorConfig, level: str) -> str:
    return {"block": config.block_label, "rack": config.rack_label}.get(
        level, HOSTNAME_LABEL
    )


def pod_set(config: GeneratorConfig, draw: Draw) -> dict[str, Any]:
    cls = draw.cls
    resources: dict[str, Any] = {
        "requests": {k: format_quantity(v, k) for k, v in draw.requests().items()}
    }
    if draw.gpus:
        resources["limits"] = {GPU: str(draw.gpus)}
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": cls.image, "resources": resources}],
        "restartPolicy": "Never",
    }
    if draw.node_type is not None:
        spec["nodeSelector"] = flavor_labels(config.node_types[draw.node_type])
    out: dict[str, Any] = {
        "name": draw.pod_set_name,
        "count": draw.count,
        "template": {"metadata": {"labels": {CLASS_LABEL: cls.name}}, "spec": spec},
    }
    if draw.min_count is not None:
        out["minCount"] = draw.min_count
    request: dict[str, Any] = {}
    if cls.topology in ("required", "preferred"):
        request[cls.topology] = _level_label(config, cls.level)
    elif cls.topology == "unconstrained":
        request["unconstrained"] = True
    if cls.slice_level is not None and cls.slice_size is not None:
        request["podSetSliceRequiredTopology"] = _level_label(config, cls.slice_level)
        request["podSetSliceSize"] = cls.slice_size
    if request:
        out["topologyRequest"] = request
    return out


def _workload(
    config: GeneratorConfig,
    draw: Draw,
    name: str,
    team: Team,
    namespace: str,
    created: str,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "active": True,
        "queueName": team.local_queue,
        "podSets": [pod_set(config, draw)],
    }
    if draw.priority_class is not None:
        if config.api_version == "v1beta2":
            spec["priorityClassRef"] = {
                "group": KUEUE_GROUP,
                "kind": "WorkloadPriorityClass",
                "name": draw.priority_class,
            }
        else:
            spec["priorityClassName"] = draw.priority_class
            spec["priorityClassSource"] = WPC_SOURCE
    if draw.priority is not None:
        spec["priority"] = draw.priority
    return {
        "apiVersion": f"kueue.x-k8s.io/{config.api_version}",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "creationTimestamp": created,
            "labels": {QUEUE_NAME_LABEL: team.local_queue, CLASS_LABEL: draw.cls.name},
        },
        "spec": spec,
    }


def compress_hostnames(hosts: list[str], counts: list[int]) -> dict[str, Any]:
    """One v1beta2 slice: shared prefix/suffix pulled out, universal when equal."""
    first = hosts[0]
    prefix_len = len(first)
    for h in hosts[1:]:
        prefix_len = min(prefix_len, len(h))
        while h[:prefix_len] != first[:prefix_len]:
            prefix_len -= 1
    values: dict[str, Any]
    if len(set(hosts)) == 1:
        values = {"universal": first}
    else:
        prefix = first[:prefix_len]
        rest = [h[prefix_len:] for h in hosts]
        shortest = min(len(r) for r in rest)
        suffix_len = 0
        while (
            suffix_len < shortest
            and len({r[len(r) - suffix_len - 1] for r in rest}) == 1
        ):
            suffix_len += 1
        individual: dict[str, Any] = {}
        if prefix:
            individual["prefix"] = prefix
        if suffix_len:
            individual["suffix"] = rest[0][len(rest[0]) - suffix_len :]
        individual["roots"] = [r[: len(r) - suffix_len] for r in rest]
        values = {"individual": individual}
    pod_counts: dict[str, Any] = (
        {"universal": counts[0]}
        if len(set(counts)) == 1
        else {"individual": list(counts)}
    )
    return {
        "domainCount": len(hosts),
        "valuesPerLevel": [values],
        "podCounts": pod_counts,
    }


def topology_assignment(
    config: GeneratorConfig, layout: Layout, placed: list[tuple[int, int]]
) -> dict[str, Any]:
    """Kueue's hostname-only assignment, in the wire form of the API version."""
    pairs = sorted((layout.names[h], c) for h, c in placed)
    if config.api_version == "v1beta1":
        return {
            "levels": [HOSTNAME_LABEL],
            "domains": [{"values": [h], "count": c} for h, c in pairs],
        }
    return {
        "levels": [HOSTNAME_LABEL],
        "slices": [compress_hostnames([h for h, _ in pairs], [c for _, c in pairs])],
    }


@dataclass
class Running:
    """State shared by the running-work phases."""

    config: GeneratorConfig
    layout: Layout
    capacity: Capacity
    teams: list[Team]
    quota: QuotaTree
    snapshot: datetime

    def primary(self) -> int:
        """Row of the resource whose fill the config targets (GPU, else CPU)."""
        return 2 if self.layout.allocatable[2].sum() > 0 else 0

    def used(self) -> int:
        r = self.primary()
        return int((self.layout.allocatable[r] - self.capacity.free[r]).sum())

    def total(self) -> int:
        return int(self.layout.allocatable[self.primary()].sum())


def _usage(
    config: GeneratorConfig, draw: Draw, flavor: str, count: int
) -> dict[tuple[str, str], int]:
    per_pod = {**draw.requests(), PODS: 1}
    return {
        (flavor, r): per_pod[r] * count
        for r in config.queues.covered_resources
        if per_pod.get(r, 0) > 0
    }


def running_workloads(
    state: Running, rng: np.random.Generator
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Admitted Workloads up to the configured share of the fill, and the pods
    that must accompany them (non-TAS flavors always; TAS ones on request)."""
    config, layout = state.config, state.layout
    classes = config.running_classes or config.classes
    if not classes or config.running_workload_share == 0:
        return [], []
    target = (
        state.used()
        + config.running_fill * config.running_workload_share * state.total()
    )
    weights = np.array([c.weight for c in classes], dtype=float)
    shares = np.array([t.share for t in state.teams], dtype=float)
    usable = layout.usable
    workloads: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    failures = 0
    while state.used() < target and failures < MAX_FAILURES:
        cls = classes[int(rng.choice(len(classes), p=weights / weights.sum()))]
        if config.running_queue_choice == "uniform":
            team = state.teams[int(rng.integers(0, len(state.teams)))]
        else:
            team = state.teams[
                int(rng.choice(len(state.teams), p=shares / shares.sum()))
            ]
        draw = sample(config, cls, rng)
        admitted = _admit(state, rng, draw, team, usable)
        if admitted is None:
            failures += 1
            continue
        failures = 0
        flavor_index, placed = admitted
        name = f"{cls.name}-run-{len(workloads):05d}"
        ns = team.namespaces[int(rng.integers(0, len(team.namespaces)))]
        age = float(rng.uniform(3600, 48 * 3600))
        created = timestamp(state.snapshot, -age)
        admitted_at = timestamp(state.snapshot, -age + float(rng.uniform(5, 600)))
        obj = _workload(config, draw, name, team, ns, created)
        flavor_type = config.node_types[flavor_index]
        usage = _usage(config, draw, flavor_type.flavor, draw.count)
        assignment: dict[str, Any] = {
            "name": draw.pod_set_name,
            "flavors": {res: flavor for flavor, res in usage},
            "resourceUsage": {
                res: format_quantity(v, res) for (_, res), v in usage.items()
            },
            "count": draw.count,
        }
        if flavor_type.tas:
            assignment["topologyAssignment"] = topology_assignment(
                config, layout, placed
            )
        obj["status"] = {
            "admission": {"clusterQueue": team.name, "podSetAssignments": [assignment]},
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": f"Quota reserved in ClusterQueue {team.name}",
                    "lastTransitionTime": admitted_at,
                    "observedGeneration": 1,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "The workload is admitted",
                    "lastTransitionTime": admitted_at,
                    "observedGeneration": 1,
                },
            ],
        }
        if cls.name in config.movable_classes:
            _label_movable(obj, config, rng)
        workloads.append(obj)
        if not flavor_type.tas or config.emit_workload_pods:
            pods.extend(
                _workload_pods(
                    config,
                    layout,
                    draw,
                    obj,
                    placed,
                    tas=flavor_type.tas,
                    started=admitted_at,
                )
            )
    return workloads, pods


def _label_movable(
    obj: dict[str, Any], config: GeneratorConfig, rng: np.random.Generator
) -> None:
    """The opt-in move label, and on a share of them the checkpoint
    annotation (drawn only when that share is set, so families without it
    keep their random stream)."""
    obj["metadata"]["labels"][MOVABLE_LABEL] = "true"
    share = config.checkpointed_fraction
    if share and rng.random() < share:
        obj["metadata"].setdefault("annotations", {})[CHECKPOINTED] = "true"


def _admit(
    state: Running, rng: np.random.Generator, draw: Draw, team: Team, usable: Any
) -> tuple[int, list[tuple[int, int]]] | None:
    """First flavor in the team's order with quota and room, as Kueue tries them."""
    config, layout = state.config, state.layout
    cls = draw.cls
    for flavor in team.flavors:
        ti = next(i for i, t in enumerate(config.node_types) if t.flavor == flavor)
        if draw.node_type is not None and draw.node_type != ti:
            continue
        node_type = config.node_types[ti]
        if cls.has_topology_request and not node_type.tas:
            continue
        usage = _usage(config, draw, flavor, draw.count)
        if not fits(state.quota, team.name, usage):
            continue
        mask = usable & (layout.node_type == ti)
        slice_level = LEVELS.index(cls.slice_level) if cls.slice_level else 2
        level = (
            LEVELS.index(cls.level)
            if cls.topology in ("required", "preferred")
            else None
        )
        placed = state.capacity.place_gang(
            rng,
            draw.request,
            draw.count,
            mask,
            level=level,
            required=cls.topology == "required",
            slice_level=slice_level,
            slice_size=cls.slice_size or 1,
        )
        if placed is None:
            continue
        state.quota.add_usage(team.name, usage)
        return ti, placed
    return None


def _workload_pods(
    config: GeneratorConfig,
    layout: Layout,
    draw: Draw,
    wl: dict[str, Any],
    placed: list[tuple[int, int]],
    *,
    tas: bool,
    started: str,
) -> list[dict[str, Any]]:
    meta = wl["metadata"]
    annotations: dict[str, str] = {}
    if tas:
        cls = draw.cls
        if cls.topology in ("required", "preferred"):
            annotations[ANNOTATION[cls.topology]] = _level_label(config, cls.level)
        elif cls.slice_level is not None:
            annotations[ANNOTATION["slice"]] = _level_label(config, cls.slice_level)
        else:  # implied TAS: mark it so the pod is not also counted as plain
            annotations[ANNOTATION["unconstrained"]] = "true"
    out = []
    index = 0
    for host, k in placed:
        for _ in range(k):
            pod_meta: dict[str, Any] = {
                "name": f"{meta['name']}-{index}",
                "namespace": meta["namespace"],
                "creationTimestamp": started,
                "labels": {
                    "kueue.x-k8s.io/managed": "true",
                    "kueue.x-k8s.io/podset": draw.pod_set_name,
                    CLASS_LABEL: draw.cls.name,
                },
            }
            if annotations:
                pod_meta["annotations"] = dict(annotations)
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": pod_meta,
                    "spec": {
                        # a fresh template per pod: shared dicts would come
                        # out of the YAML emitter as anchors and aliases
                        **pod_set(config, draw)["template"]["spec"],
                        "nodeName": layout.names[host],
                        "schedulerName": "default-scheduler",
                    },
                    "status": {
                        "phase": "Running",
                        "startTime": started,
                        "qosClass": "Burstable",
                    },
                }
            )
            index += 1
    return out


def pending_workloads(
    config: GeneratorConfig,
    teams: list[Team],
    snapshot: datetime,
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """Pending Workloads, named in order of arrival."""
    classes = config.classes
    n = config.pending
    if n == 0:
        return []
    weights = np.array([c.weight for c in classes], dtype=float)
    weights /= weights.sum()
    if config.class_mix == "proportional":
        exact = weights * n
        counts = np.floor(exact).astype(int)
        for i in np.argsort(-(exact - counts), kind="stable")[: n - int(counts.sum())]:
            counts[i] += 1
        order = np.repeat(np.arange(len(classes)), counts)
        order = order[rng.permutation(n)]
    else:
        order = rng.choice(len(classes), size=n, p=weights)
    shares = np.array([t.share for t in teams], dtype=float)
    seen_per_class = np.zeros(len(classes), dtype=np.int64)
    seen_per_class_team: dict[tuple[int, int], int] = {}
    poisson = np.cumsum(rng.exponential(config.pending_interval_s, size=n))
    plan: list[tuple[float, int, int, int]] = []  # (offset, position, class, team)
    for pos, raw_ci in enumerate(order):
        ci = int(raw_ci)
        if config.queue_choice == "round-robin":
            ti = int(seen_per_class[ci]) % len(teams)
        elif config.queue_choice == "uniform":
            ti = int(rng.integers(0, len(teams)))
        else:
            ti = int(rng.choice(len(teams), p=shares / shares.sum()))
        seen_per_class[ci] += 1
        interval = classes[ci].creation_interval_ms
        if interval is not None:
            j = seen_per_class_team.get((ci, ti), 0) + 1
            seen_per_class_team[(ci, ti)] = j
            offset = j * interval / 1000.0
        else:
            offset = float(poisson[pos])
        plan.append((offset, pos, ci, ti))
    plan.sort()
    start = -math.ceil(plan[-1][0]) - 60
    width = len(str(n - 1))
    out = []
    for i, (offset, _, class_index, team_index) in enumerate(plan):
        cls, team = classes[class_index], teams[team_index]
        draw = sample(config, cls, rng)
        ns = team.namespaces[int(rng.integers(0, len(team.namespaces)))]
        created = timestamp(snapshot, start + offset)
        obj = _workload(config, draw, f"{cls.name}-{i:0{width}d}", team, ns, created)
        obj["status"] = {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "Waiting for the scheduler",
                    "lastTransitionTime": created,
                    "observedGeneration": 1,
                }
            ]
        }
        out.append(obj)
    return out
