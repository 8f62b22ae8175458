"""Generator configuration: documented, immutable, loadable from YAML.

Every knob of a generated instance lives here, with a default chosen to give
a small but realistic GPU cluster.  Families (``families.py``) are values of
these classes; committed YAML files in ``benchmarks/configs/`` are the same
values written out in full, so a benchmark keeps its instance even if a
default changes later.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, Self

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    parse_quantity,
    parse_time,
)
from placewise.adapters.io.documents import load_one
from placewise.models.errors import InstanceError, describe

Level = Literal["block", "rack", "hostname"]
LEVELS: tuple[Level, ...] = ("block", "rack", "hostname")
TopologyMode = Literal["required", "preferred", "unconstrained", "none"]
ApiVersion = Literal["v1beta1", "v1beta2"]


class ConfigError(ValueError):
    """A generator config that cannot describe a consistent instance."""


def _quantity(value: str, resource: str, where: str) -> int:
    try:
        return parse_quantity(value, resource)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _check(ok: bool, where: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: {message}")


def _check_weights(
    values: tuple[Any, ...], weights: tuple[float, ...], where: str
) -> None:
    _check(len(values) > 0, where, "needs at least one choice")
    if weights:
        _check(
            len(weights) == len(values),
            f"{where}_weights",
            f"has {len(weights)} entries for {len(values)} choices",
        )
        _check(
            all(w >= 0 for w in weights) and sum(weights) > 0,
            f"{where}_weights",
            "must be non-negative with a positive sum",
        )


@dataclass(frozen=True)
class NodeType:
    """One kind of host; each node type gets its own ResourceFlavor."""

    name: str
    """Short name, also the prefix of the host names (``h100-b00-r03-n07``)."""
    flavor: str
    """Name of the ResourceFlavor that selects these hosts."""
    fraction: float = 1.0
    """Share of the racks built from this type (racks are homogeneous)."""
    gpus: int = 8
    """``nvidia.com/gpu`` per host; 0 makes a CPU-only host."""
    cpu: str = "208"
    """CPU capacity; allocatable is this minus ``reserved_cpu``."""
    memory: str = "1872Gi"
    """Memory capacity; allocatable is this minus ``reserved_memory``."""
    pods: int = 110
    """Pod slots per host (the kubelet default)."""
    reserved_cpu: str = "2"
    """System-reserved CPU, so allocatable differs from capacity as on real nodes."""
    reserved_memory: str = "16Gi"
    """System-reserved memory."""
    tas: bool = True
    """Whether the flavor is topology-aware (has ``topologyName``)."""
    labels: dict[str, str] = field(
        default_factory=lambda: {
            "node.kubernetes.io/instance-type": "a3-highgpu-8g",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        }
    )
    """Labels every host of this type carries besides the topology labels."""
    flavor_label_keys: tuple[str, ...] = ("node.kubernetes.io/instance-type",)
    """Which of ``labels`` the flavor's ``nodeLabels`` select on (and pinned
    workloads put in their nodeSelector)."""

    def __post_init__(self) -> None:
        where = f"node_types[{self.name}]"
        _check(
            bool(self.name) and bool(self.flavor), where, "needs a name and a flavor"
        )
        _check(self.fraction > 0, f"{where}.fraction", "must be positive")
        _check(self.gpus >= 0 and self.pods > 0, where, "gpus >= 0 and pods > 0")
        for key in self.flavor_label_keys:
            _check(
                key in self.labels, f"{where}.flavor_label_keys", f"{key} not in labels"
            )
        _check(
            bool(self.flavor_label_keys),
            f"{where}.flavor_label_keys",
            "a flavor needs at least one node label",
        )
        cpu = _quantity(self.cpu, CPU, where) - _quantity(self.reserved_cpu, CPU, where)
        mem = _quantity(self.memory, MEMORY, where) - _quantity(
            self.reserved_memory, MEMORY, where
        )
        _check(cpu > 0 and mem > 0, where, "reserved resources exceed capacity")


@dataclass(frozen=True)
class PodShape:
    """A kind of plain (non-Kueue) running pod that fragments the hosts."""

    name: str = "inference"
    """Pod name prefix (``inference-00042``)."""
    namespace: str = "inference"
    """Namespace of these pods; emitted as a Namespace object too."""
    weight: float = 1.0
    """Relative frequency among running pods."""
    gpus: int = 1
    cpu: str = "12"
    memory: str = "96Gi"

    def __post_init__(self) -> None:
        _check(
            self.weight >= 0 and self.gpus >= 0,
            f"running_pod_shapes[{self.name}]",
            "weight and gpus must be non-negative",
        )
        _quantity(self.cpu, CPU, f"running_pod_shapes[{self.name}].cpu")
        _quantity(self.memory, MEMORY, f"running_pod_shapes[{self.name}].memory")


@dataclass(frozen=True)
class PriorityClassSpec:
    """A WorkloadPriorityClass."""

    name: str
    value: int
    description: str = ""


@dataclass(frozen=True)
class WorkloadClass:
    """A kind of Workload: its gang size, per-pod shape, topology and priority.

    A class with ``pod_counts: [1]`` is a single-pod job; anything larger is a
    gang.  Per-pod requests are ``cpu_per_pod + gpus * cpu_per_gpu`` (and the
    same for memory), so GPU-heavy pods bring proportional CPU and memory.
    """

    name: str
    """Class name: prefix of workload names and value of ``placewise.io/class``."""
    weight: float = 1.0
    """Relative frequency of this class."""
    pod_counts: tuple[int, ...] = (1,)
    """Possible pod counts of the (single) pod set."""
    pod_count_weights: tuple[float, ...] = ()
    """Weights of ``pod_counts`` (empty: uniform)."""
    gpus_per_pod: tuple[int, ...] = (1,)
    """Possible GPUs per pod (0: a CPU-only pod)."""
    gpus_per_pod_weights: tuple[float, ...] = ()
    cpu_per_pod: str = "2"
    cpu_per_gpu: str = "12"
    memory_per_pod: str = "8Gi"
    memory_per_gpu: str = "96Gi"
    topology: TopologyMode = "none"
    """``required``/``preferred`` at ``level``, ``unconstrained: true``, or
    ``none`` (no request, unless a slice constraint is set)."""
    level: Level = "rack"
    """Topology level of a required or preferred request."""
    slice_level: Level | None = None
    """``podSetSliceRequiredTopology``: each slice of ``slice_size`` pods must
    fit in one domain of this level."""
    slice_size: int | None = None
    """``podSetSliceSize``; must divide every pod count."""
    partial_probability: float = 0.0
    """Chance that a gang allows partial admission (sets ``minCount``)."""
    min_count_fraction: float = 0.5
    """``minCount = ceil(fraction * count)`` when partial admission is allowed."""
    priority_classes: dict[str, float] = field(default_factory=dict)
    """WorkloadPriorityClass name -> weight; empty uses ``priority``."""
    priority: int | None = None
    """Raw ``spec.priority`` without a class (Kueue's perf tests do this)."""
    node_types: tuple[str, ...] = ()
    """Pin to one of these node types through a nodeSelector (empty: any)."""
    pod_set_name: str = ""
    """Pod set name; empty gives ``main`` for single pods, ``workers`` for gangs."""
    creation_interval_ms: int | None = None
    """Fixed arrival interval per ClusterQueue (Kueue perf-test style);
    unset classes arrive as a Poisson stream."""
    image: str = "registry.example.com/ml/trainer:2.4"

    def __post_init__(self) -> None:
        where = f"classes[{self.name}]"
        _check(bool(self.name), where, "needs a name")
        _check(self.weight >= 0, f"{where}.weight", "must be non-negative")
        _check_weights(self.pod_counts, self.pod_count_weights, f"{where}.pod_count")
        _check_weights(
            self.gpus_per_pod, self.gpus_per_pod_weights, f"{where}.gpus_per_pod"
        )
        _check(
            all(c >= 1 for c in self.pod_counts), f"{where}.pod_counts", "must be >= 1"
        )
        _check(
            all(g >= 0 for g in self.gpus_per_pod),
            f"{where}.gpus_per_pod",
            "must be >= 0",
        )
        for name in ("cpu_per_pod", "cpu_per_gpu"):
            _quantity(getattr(self, name), CPU, f"{where}.{name}")
        for name in ("memory_per_pod", "memory_per_gpu"):
            _quantity(getattr(self, name), MEMORY, f"{where}.{name}")
        _check(
            0 <= self.partial_probability <= 1,
            f"{where}.partial_probability",
            "in [0, 1]",
        )
        _check(
            0 < self.min_count_fraction <= 1, f"{where}.min_count_fraction", "in (0, 1]"
        )
        if (self.slice_level is None) != (self.slice_size is None):
            raise ConfigError(f"{where}: slice_level and slice_size go together")
        if self.slice_size is not None and self.slice_level is not None:
            _check(self.slice_size >= 1, f"{where}.slice_size", "must be >= 1")
            bad = [c for c in self.pod_counts if c % self.slice_size]
            _check(
                not bad,
                f"{where}.slice_size",
                f"{self.slice_size} does not divide pod counts {bad}",
            )
            if self.topology in ("required", "preferred"):
                _check(
                    LEVELS.index(self.slice_level) >= LEVELS.index(self.level),
                    f"{where}.slice_level",
                    f"must not be above level {self.level}",
                )
            _check(
                self.partial_probability == 0,
                f"{where}.partial_probability",
                "partial admission is not generated for sliced pod sets",
            )
        _check(
            self.creation_interval_ms is None or self.creation_interval_ms > 0,
            f"{where}.creation_interval_ms",
            "must be positive",
        )

    @property
    def has_topology_request(self) -> bool:
        return self.topology != "none" or self.slice_size is not None


@dataclass(frozen=True)
class QueueConfig:
    """ClusterQueues, their cohorts and quotas, one team namespace each."""

    cluster_queues: int = 3
    cohorts: int = 1
    """ClusterQueues are dealt round-robin into this many cohorts (0: standalone)."""
    cohort_objects: bool = True
    """Emit Cohort objects (Kueue also accepts implicit cohorts)."""
    root_cohort: str | None = None
    """Parent Cohort of every cohort, making a two-level tree."""
    names: tuple[str, ...] = ()
    """Team names (default ``team-a``, ``team-b``, ... or ``team-01``...)."""
    quota_scale: float = 1.0
    """Sum of all nominal quotas of a flavor / that flavor's capacity."""
    cpu_memory_quota_scale: float | None = None
    """Same for cpu and memory (default ``quota_scale``); a larger value keeps
    GPUs the binding quota."""
    share_concentration: float | None = None
    """Dirichlet concentration of the teams' quota shares (None: equal shares;
    small values give very unequal teams)."""
    nominal_quota: dict[str, str] = field(default_factory=dict)
    """Explicit per-flavor nominal quota by resource; overrides the scale."""
    borrowing_limit: dict[str, str] = field(default_factory=dict)
    """Explicit borrowingLimit by resource; overrides the fraction."""
    borrowing_limit_fraction: float | None = None
    """borrowingLimit = fraction * nominal (None: unlimited borrowing)."""
    lending_limit_fraction: float | None = None
    """lendingLimit = fraction * nominal (None: everything is lendable)."""
    covered_resources: tuple[str, ...] = (CPU, MEMORY, GPU)
    within_cluster_queue: Literal[
        "Never", "LowerPriority", "LowerOrNewerEqualPriority"
    ] = "LowerPriority"
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = "Any"
    borrow_within_cohort: Literal["Never", "LowerPriority"] = "Never"
    borrow_max_priority_threshold: int | None = None
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = "MayStopSearch"
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = "TryNextFlavor"
    queueing_strategy: Literal["BestEffortFIFO", "StrictFIFO"] = "BestEffortFIFO"
    namespace_selector: Literal["all", "team"] = "all"
    """``{}`` (all namespaces) or ``matchLabels`` on the team label."""
    namespaces_per_queue: int = 1
    """Namespaces (each with a LocalQueue) per ClusterQueue."""
    flavor_order: Literal["same", "rotate"] = "same"
    """``rotate`` gives each team a different preferred flavor."""
    cohort_quota_share: float = 0.0
    """Share of the quota each cohort holds itself (a pool its queues borrow
    from, Kueue's Cohort ``resourceGroups``); the teams split the rest."""
    fair_sharing: bool = False
    """Emit Kueue's Configuration with fair sharing enabled."""
    fair_weights: tuple[str, ...] = ()
    """``spec.fairSharing.weight`` per ClusterQueue, in team order (empty: none)."""

    def __post_init__(self) -> None:
        where = "queues"
        _check(
            0 <= self.cohort_quota_share < 1
            and (self.cohort_quota_share == 0 or self.cohorts >= 1),
            f"{where}.cohort_quota_share",
            "in [0, 1), and needs cohorts",
        )
        _check(
            not self.fair_weights or len(self.fair_weights) == self.cluster_queues,
            f"{where}.fair_weights",
            "one weight per ClusterQueue",
        )
        for w in self.fair_weights:
            _check(_quantity(w, "weight", where) >= 0, f"{where}.fair_weights", ">= 0")
        _check(self.cluster_queues >= 1, f"{where}.cluster_queues", "must be >= 1")
        _check(
            0 <= self.cohorts <= self.cluster_queues,
            f"{where}.cohorts",
            "between 0 and cluster_queues",
        )
        _check(
            not self.names or len(self.names) == self.cluster_queues,
            f"{where}.names",
            "one name per ClusterQueue",
        )
        _check(
            len(set(self.names)) == len(self.names), f"{where}.names", "must be unique"
        )
        _check(self.quota_scale > 0, f"{where}.quota_scale", "must be positive")
        _check(
            self.cpu_memory_quota_scale is None or self.cpu_memory_quota_scale > 0,
            f"{where}.cpu_memory_quota_scale",
            "must be positive",
        )
        _check(
            self.share_concentration is None or self.share_concentration > 0,
            f"{where}.share_concentration",
            "must be positive",
        )
        standalone = self.cohorts == 0
        if standalone:
            _check(
                self.borrowing_limit_fraction is None
                and not self.borrowing_limit
                and self.lending_limit_fraction is None,
                where,
                "borrowing and lending limits need a cohort",
            )
            _check(self.root_cohort is None, f"{where}.root_cohort", "needs cohorts")
        _check(
            self.borrowing_limit_fraction is None or self.borrowing_limit_fraction >= 0,
            f"{where}.borrowing_limit_fraction",
            "must be >= 0",
        )
        _check(
            self.lending_limit_fraction is None
            or 0 <= self.lending_limit_fraction <= 1,
            f"{where}.lending_limit_fraction",
            "lendingLimit must not exceed nominalQuota",
        )
        _check(
            not (
                self.reclaim_within_cohort == "Never"
                and self.borrow_within_cohort != "Never"
            ),
            f"{where}.borrow_within_cohort",
            "needs reclaim_within_cohort != Never",
        )
        _check(self.namespaces_per_queue >= 1, f"{where}.namespaces_per_queue", ">= 1")
        _check(
            bool(self.covered_resources),
            f"{where}.covered_resources",
            "must not be empty",
        )
        for res, q in (*self.nominal_quota.items(), *self.borrowing_limit.items()):
            _check(
                res in self.covered_resources, where, f"{res} is not a covered resource"
            )
            _quantity(q, res, f"{where}.{res}")

    def team_names(self) -> tuple[str, ...]:
        if self.names:
            return self.names
        n = self.cluster_queues
        if n <= 26:
            return tuple(f"team-{chr(ord('a') + i)}" for i in range(n))
        width = len(str(n))
        return tuple(f"team-{i + 1:0{width}d}" for i in range(n))


@dataclass(frozen=True)
class GeneratorConfig:
    """Everything that shapes a generated instance, except the seed."""

    name: str = "default"
    """Family name (recorded in the instance as a Namespace label)."""
    description: str = (
        "Default: 64 H100 hosts (2 blocks x 4 racks x 8), half used by plain pods and "
        "admitted Workloads, 3 teams in one cohort, 40 pending single pods and gangs "
        "with required, preferred and unconstrained topology."
    )
    api_version: ApiVersion = "v1beta2"
    """Kueue API version of every Kueue object."""
    blocks: int = 2
    racks_per_block: int = 4
    hosts_per_rack: int = 8
    nodes: int | None = None
    """Exact host count; racks fill in order and the last may be partial.
    None: ``blocks * racks_per_block * hosts_per_rack``."""
    naming: Literal["placewise", "kueue-perf"] = "placewise"
    """Host and domain names; ``kueue-perf`` copies Kueue's perf generator
    (``node-b0-r2-n15``, ``block-0``, ``rack-2``)."""
    block_label: str = "cloud.provider.com/topology-block"
    rack_label: str = "cloud.provider.com/topology-rack"
    topology_name: str = "gpu-topology"
    node_types: tuple[NodeType, ...] = (NodeType(name="h100", flavor="h100"),)
    unschedulable_fraction: float = 0.0
    """Share of hosts cordoned (``spec.unschedulable``)."""
    tainted_fraction: float = 0.0
    """Share of hosts with an untolerated NoSchedule maintenance taint."""
    not_ready_fraction: float = 0.0
    """Share of hosts whose Ready condition is False."""
    queues: QueueConfig = QueueConfig()
    priority_classes: tuple[PriorityClassSpec, ...] = (
        PriorityClassSpec("low", 100, "Preemptible batch and experiments"),
        PriorityClassSpec("normal", 1000, "Default training jobs"),
        PriorityClassSpec("high", 10000, "Production training and deadlines"),
    )
    running_fill: float = 0.5
    """Target share of GPU capacity (CPU if no GPUs) used by running work."""
    running_workload_share: float = 0.3
    """Share of that fill taken by admitted TAS Workloads (the rest: plain pods)."""
    running_pods: int | None = None
    """Exact number of plain running pods (overrides their share of the fill)."""
    running_pod_shapes: tuple[PodShape, ...] = (
        PodShape("inference", "inference", 4.0, 1, "12", "96Gi"),
        PodShape("inference-large", "inference", 2.0, 2, "24", "192Gi"),
        PodShape("notebook", "notebooks", 1.0, 1, "8", "64Gi"),
        PodShape("etl", "data", 1.0, 0, "32", "128Gi"),
    )
    running_classes: tuple[WorkloadClass, ...] = ()
    """Classes of running Workloads (empty: ``classes``)."""
    running_queue_choice: Literal["share", "uniform"] = "share"
    """Pick the team of a running Workload by quota share or uniformly
    (uniform makes small teams borrow)."""
    emit_workload_pods: bool = False
    """Also emit the bound pods of running Workloads (TAS-annotated)."""
    pending: int = 40
    classes: tuple[WorkloadClass, ...] = (
        WorkloadClass(
            "single",
            weight=4,
            pod_counts=(1,),
            gpus_per_pod=(1, 2, 4),
            gpus_per_pod_weights=(4, 2, 1),
            topology="unconstrained",
            priority_classes={"low": 1, "normal": 3},
        ),
        WorkloadClass(
            "gang",
            weight=3,
            pod_counts=(2, 3, 4, 6),
            gpus_per_pod=(2, 4, 8),
            topology="required",
            level="rack",
            priority_classes={"normal": 3, "high": 1},
        ),
        WorkloadClass(
            "large",
            weight=1,
            pod_counts=(8, 16),
            gpus_per_pod=(8,),
            topology="preferred",
            level="block",
            slice_level="rack",
            slice_size=4,
            priority_classes={"normal": 1, "high": 1},
        ),
    )
    class_mix: Literal["random", "proportional"] = "random"
    """``proportional`` makes class counts exactly proportional to weights."""
    queue_choice: Literal["share", "uniform", "round-robin"] = "share"
    """How pending workloads are spread over teams."""
    pending_interval_s: float = 20.0
    """Mean gap between pending arrivals (Poisson), in seconds."""
    snapshot_time: str = "2026-01-01T00:00:00Z"
    """The instant the snapshot describes; every timestamp is before it."""

    def __post_init__(self) -> None:
        _check(bool(self.name), "name", "must not be empty")
        _check(
            min(self.blocks, self.racks_per_block, self.hosts_per_rack) >= 1,
            "shape",
            "blocks, racks_per_block and hosts_per_rack must be >= 1",
        )
        _check(self.nodes is None or self.nodes >= 1, "nodes", "must be >= 1")
        _check(bool(self.node_types), "node_types", "needs at least one node type")
        names = [t.name for t in self.node_types]
        flavors = [t.flavor for t in self.node_types]
        _check(len(set(names)) == len(names), "node_types", "names must be unique")
        _check(
            len(set(flavors)) == len(flavors), "node_types", "flavors must be unique"
        )
        for frac in (
            "unschedulable_fraction",
            "tainted_fraction",
            "not_ready_fraction",
            "running_fill",
            "running_workload_share",
        ):
            _check(0 <= getattr(self, frac) <= 1, frac, "must be in [0, 1]")
        _check(
            self.running_pods is None or self.running_pods >= 0, "running_pods", ">= 0"
        )
        _check(self.pending >= 0, "pending", "must be >= 0")
        _check(self.pending_interval_s >= 0, "pending_interval_s", "must be >= 0")
        try:
            parse_time(self.snapshot_time)
        except ValueError as exc:
            raise ConfigError(f"snapshot_time: {exc}") from exc
        _check(
            not self.pending or bool(self.classes), "classes", "needed for pending work"
        )
        _check(
            not self.running_pod_shapes
            or sum(s.weight for s in self.running_pod_shapes) > 0,
            "running_pod_shapes",
            "weights must have a positive sum",
        )
        _check(
            not self.running_pods or bool(self.running_pod_shapes),
            "running_pod_shapes",
            "needed for running pods",
        )
        prios = {p.name for p in self.priority_classes}
        _check(
            len(prios) == len(self.priority_classes), "priority_classes", "unique names"
        )
        for group in ("classes", "running_classes"):
            wl_classes: tuple[WorkloadClass, ...] = getattr(self, group)
            _check(
                len({c.name for c in wl_classes}) == len(wl_classes),
                group,
                "class names must be unique",
            )
            _check(
                not wl_classes or sum(c.weight for c in wl_classes) > 0,
                group,
                "weights must have a positive sum",
            )
            for c in wl_classes:
                where = f"{group}[{c.name}]"
                for p in c.priority_classes:
                    _check(
                        p in prios, f"{where}.priority_classes", f"unknown class {p}"
                    )
                for t in c.node_types:
                    _check(t in names, f"{where}.node_types", f"unknown node type {t}")
                self._check_covered(c, where)

    def _check_covered(self, c: WorkloadClass, where: str) -> None:
        """Kueue blocks a workload requesting a resource its queue does not cover."""
        covered = set(self.queues.covered_resources)
        cpu = _quantity(c.cpu_per_pod, CPU, where) + _quantity(
            c.cpu_per_gpu, CPU, where
        )
        mem = _quantity(c.memory_per_pod, MEMORY, where) + _quantity(
            c.memory_per_gpu, MEMORY, where
        )
        wants = {CPU: cpu > 0, MEMORY: mem > 0, GPU: max(c.gpus_per_pod) > 0}
        for res, used in wants.items():
            _check(
                not used or res in covered,
                where,
                f"requests {res}, not covered by queues",
            )

    @property
    def node_count(self) -> int:
        if self.nodes is not None:
            return self.nodes
        return self.blocks * self.racks_per_block * self.hosts_per_rack

    def with_overrides(self, **changes: Any) -> GeneratorConfig:
        """A validated copy with some fields replaced (CLI flags use this)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build from plain data; unknown keys are errors, so typos surface."""
        result = _convert(cls, data, "")
        assert isinstance(result, cls)
        return result

    @classmethod
    def from_file(cls, path: str | Path) -> Self:
        """Load a YAML config (one mapping; see ``benchmarks/configs/``)."""
        try:
            data = load_one(str(path), "generator config")
        except InstanceError as exc:
            raise ConfigError(str(exc)) from None
        if not isinstance(data, Mapping):
            raise ConfigError(f"{path}: a generator config is a YAML mapping")
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        """Plain data with every field spelled out (what the YAML files hold)."""
        out = _plain(self)
        assert isinstance(out, dict)
        return out


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _convert(tp: Any, value: Any, where: str) -> Any:
    """Check ``value`` against the annotation ``tp`` and build dataclasses."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    label = where or "config"
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        if not isinstance(value, Mapping):
            raise ConfigError(f"{label}: expected a mapping")
        hints = typing.get_type_hints(tp)
        known = {f.name for f in fields(tp) if f.init}
        unknown = sorted(set(map(str, value)) - known)
        if unknown:
            raise ConfigError(f"{label}: unknown field(s) {', '.join(unknown)}")
        kwargs = {
            key: _convert(hints[key], item, f"{where}.{key}" if where else key)
            for key, item in value.items()
        }
        try:
            return tp(**kwargs)
        except TypeError as exc:
            raise ConfigError(f"{label}: {exc}") from exc
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in args:
            if option is type(None):
                continue
            try:
                return _convert(option, value, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(
            errors[0] if errors else f"{label}: invalid value {describe(value)}"
        )
    if origin is Literal:
        if value not in args:
            raise ConfigError(
                f"{label}: {describe(value)} is not one of {', '.join(map(str, args))}"
            )
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{label}: expected a list")
        item_type = args[0]
        return tuple(
            _convert(item_type, v, f"{where}[{i}]") for i, v in enumerate(value)
        )
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{label}: expected a mapping")
        return {str(k): _convert(args[1], v, f"{where}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{label}: expected true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{label}: expected an integer")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{label}: expected a number")
        return float(value)
    if tp is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{label}: expected a string")
        return str(value)
    raise ConfigError(f"{label}: unsupported type {tp!r}")  # pragma: no cover
