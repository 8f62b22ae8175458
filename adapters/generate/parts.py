"""The parts of a generator config: node types, pod shapes, priority classes,
workload classes and queues, each checked when it is built.

:class:`placewise.adapters.generate.config.GeneratorConfig` puts them
together (and re-exports them); a part's checks are those that need only
itself, the config's those across parts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    parse_quantity,
)

Level = Literal["block", "rack", "hostname"]
LEVELS: tuple[Level, ...] = ("block", "rack", "hostname")
TopologyMode = Literal["required", "preferred", "unconstrained", "none"]
ApiVersion = Literal["v1beta1", "v1beta2"]


class ConfigError(ValueError):
    """A generator config that cannot describe a consistent instance."""


def quantity(value: str, resource: str, where: str) -> int:
    try:
        return parse_quantity(value, resource)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def check(ok: bool, where: str, message: str) -> None:
    if not ok:
        raise ConfigError(f"{where}: {message}")


def check_weights(
    values: tuple[Any, ...], weights: tuple[float, ...], where: str
) -> None:
    check(len(values) > 0, where, "needs at least one choice")
    if weights:
        check(
            len(weights) == len(values),
            f"{where}_weights",
            f"has {len(weights)} entries for {len(values)} choices",
        )
        check(
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
        check(bool(self.name) and bool(self.flavor), where, "needs a name and a flavor")
        check(self.fraction > 0, f"{where}.fraction", "must be positive")
        check(self.gpus >= 0 and self.pods > 0, where, "gpus >= 0 and pods > 0")
        for key in self.flavor_label_keys:
            check(
                key in self.labels, f"{where}.flavor_label_keys", f"{key} not in labels"
            )
        check(
            bool(self.flavor_label_keys),
            f"{where}.flavor_label_keys",
            "a flavor needs at least one node label",
        )
        cpu = quantity(self.cpu, CPU, where) - quantity(self.reserved_cpu, CPU, where)
        mem = quantity(self.memory, MEMORY, where) - quantity(
            self.reserved_memory, MEMORY, where
        )
        check(cpu > 0 and mem > 0, where, "reserved resources exceed capacity")


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
        check(
            self.weight >= 0 and self.gpus >= 0,
            f"running_pod_shapes[{self.name}]",
            "weight and gpus must be non-negative",
        )
        quantity(self.cpu, CPU, f"running_pod_shapes[{self.name}].cpu")
        quantity(self.memory, MEMORY, f"running_pod_shapes[{self.name}].memory")


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
        check(bool(self.name), where, "needs a name")
        check(self.weight >= 0, f"{where}.weight", "must be non-negative")
        check_weights(self.pod_counts, self.pod_count_weights, f"{where}.pod_count")
        check_weights(
            self.gpus_per_pod, self.gpus_per_pod_weights, f"{where}.gpus_per_pod"
        )
        check(
            all(c >= 1 for c in self.pod_counts), f"{where}.pod_counts", "must be >= 1"
        )
        check(
            all(g >= 0 for g in self.gpus_per_pod),
            f"{where}.gpus_per_pod",
            "must be >= 0",
        )
        for name in ("cpu_per_pod", "cpu_per_gpu"):
            quantity(getattr(self, name), CPU, f"{where}.{name}")
        for name in ("memory_per_pod", "memory_per_gpu"):
            quantity(getattr(self, name), MEMORY, f"{where}.{name}")
        check(
            0 <= self.partial_probability <= 1,
            f"{where}.partial_probability",
            "in [0, 1]",
        )
        check(
            0 < self.min_count_fraction <= 1, f"{where}.min_count_fraction", "in (0, 1]"
        )
        if (self.slice_level is None) != (self.slice_size is None):
            raise ConfigError(f"{where}: slice_level and slice_size go together")
        if self.slice_size is not None and self.slice_level is not None:
            check(self.slice_size >= 1, f"{where}.slice_size", "must be >= 1")
            bad = [c for c in self.pod_counts if c % self.slice_size]
            check(
                not bad,
                f"{where}.slice_size",
                f"{self.slice_size} does not divide pod counts {bad}",
            )
            if self.topology in ("required", "preferred"):
                check(
                    LEVELS.index(self.slice_level) >= LEVELS.index(self.level),
                    f"{where}.slice_level",
                    f"must not be above level {self.level}",
                )
            check(
                self.partial_probability == 0,
                f"{where}.partial_probability",
                "partial admission is not generated for sliced pod sets",
            )
        check(
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
        check(
            0 <= self.cohort_quota_share < 1
            and (self.cohort_quota_share == 0 or self.cohorts >= 1),
            f"{where}.cohort_quota_share",
            "in [0, 1), and needs cohorts",
        )
        check(
            not self.fair_weights or len(self.fair_weights) == self.cluster_queues,
            f"{where}.fair_weights",
            "one weight per ClusterQueue",
        )
        for w in self.fair_weights:
            check(quantity(w, "weight", where) >= 0, f"{where}.fair_weights", ">= 0")
        check(self.cluster_queues >= 1, f"{where}.cluster_queues", "must be >= 1")
        check(
            0 <= self.cohorts <= self.cluster_queues,
            f"{where}.cohorts",
            "between 0 and cluster_queues",
        )
        check(
            not self.names or len(self.names) == self.cluster_queues,
            f"{where}.names",
            "one name per ClusterQueue",
        )
        check(
            len(set(self.names)) == len(self.names), f"{where}.names", "must be unique"
        )
        check(self.quota_scale > 0, f"{where}.quota_scale", "must be positive")
        check(
            self.cpu_memory_quota_scale is None or self.cpu_memory_quota_scale > 0,
            f"{where}.cpu_memory_quota_scale",
            "must be positive",
        )
        check(
            self.share_concentration is None or self.share_concentration > 0,
            f"{where}.share_concentration",
            "must be positive",
        )
        standalone = self.cohorts == 0
        if standalone:
            check(
                self.borrowing_limit_fraction is None
                and not self.borrowing_limit
                and self.lending_limit_fraction is None,
                where,
                "borrowing and lending limits need a cohort",
            )
            check(self.root_cohort is None, f"{where}.root_cohort", "needs cohorts")
        check(
            self.borrowing_limit_fraction is None or self.borrowing_limit_fraction >= 0,
            f"{where}.borrowing_limit_fraction",
            "must be >= 0",
        )
        check(
            self.lending_limit_fraction is None
            or 0 <= self.lending_limit_fraction <= 1,
            f"{where}.lending_limit_fraction",
            "lendingLimit must not exceed nominalQuota",
        )
        check(
            not (
                self.reclaim_within_cohort == "Never"
                and self.borrow_within_cohort != "Never"
            ),
            f"{where}.borrow_within_cohort",
            "needs reclaim_within_cohort != Never",
        )
        check(self.namespaces_per_queue >= 1, f"{where}.namespaces_per_queue", ">= 1")
        check(
            bool(self.covered_resources),
            f"{where}.covered_resources",
            "must not be empty",
        )
        for res, q in (*self.nominal_quota.items(), *self.borrowing_limit.items()):
            check(
                res in self.covered_resources, where, f"{res} is not a covered resource"
            )
            quantity(q, res, f"{where}.{res}")

    def team_names(self) -> tuple[str, ...]:
        if self.names:
            return self.names
        n = self.cluster_queues
        if n <= 26:
            return tuple(f"team-{chr(ord('a') + i)}" for i in range(n))
        width = len(str(n))
        return tuple(f"team-{i + 1:0{width}d}" for i in range(n))
