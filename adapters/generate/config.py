"""Generator configuration: documented, immutable, loadable from YAML.

Every knob of a generated instance lives here, with a default chosen to give
a small but realistic GPU cluster.  Families (``families.py``) are values of
these classes; committed YAML files in ``benchmarks/configs/`` are the same
values written out in full, so a benchmark keeps its instance even if a
default changes later.  The parts (node types, workload classes, queues...)
are in :mod:`.parts`; this module re-exports them.
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
    parse_time,
)
from placewise.adapters.generate.parts import (
    LEVELS,
    ApiVersion,
    ConfigError,
    Level,
    NodeType,
    PodShape,
    PriorityClassSpec,
    QueueConfig,
    TopologyMode,
    WorkloadClass,
    check,
    quantity,
)
from placewise.adapters.io.documents import load_one
from placewise.models.errors import InstanceError, describe

__all__ = [
    "LEVELS",
    "ApiVersion",
    "ConfigError",
    "GeneratorConfig",
    "Level",
    "NodeType",
    "PodShape",
    "PriorityClassSpec",
    "QueueConfig",
    "TopologyMode",
    "WorkloadClass",
]


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
    queues: QueueConfig = field(default_factory=QueueConfig)
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
    movable_classes: tuple[str, ...] = ()
    """Running Workloads of these classes carry the opt-in label
    ``placewise.io/movable: "true"`` (a plan may move them, issue 20)."""
    checkpointed_fraction: float = 0.0
    """Share of the movable ones also annotated ``placewise.io/checkpointed:
    "true"`` (a move loses no work)."""
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
        check(bool(self.name), "name", "must not be empty")
        check(
            min(self.blocks, self.racks_per_block, self.hosts_per_rack) >= 1,
            "shape",
            "blocks, racks_per_block and hosts_per_rack must be >= 1",
        )
        check(self.nodes is None or self.nodes >= 1, "nodes", "must be >= 1")
        check(bool(self.node_types), "node_types", "needs at least one node type")
        names = [t.name for t in self.node_types]
        flavors = [t.flavor for t in self.node_types]
        check(len(set(names)) == len(names), "node_types", "names must be unique")
        check(len(set(flavors)) == len(flavors), "node_types", "flavors must be unique")
        for frac in (
            "unschedulable_fraction",
            "tainted_fraction",
            "not_ready_fraction",
            "running_fill",
            "running_workload_share",
            "checkpointed_fraction",
        ):
            check(0 <= getattr(self, frac) <= 1, frac, "must be in [0, 1]")
        check(
            self.running_pods is None or self.running_pods >= 0, "running_pods", ">= 0"
        )
        check(self.pending >= 0, "pending", "must be >= 0")
        check(self.pending_interval_s >= 0, "pending_interval_s", "must be >= 0")
        try:
            parse_time(self.snapshot_time)
        except ValueError as exc:
            raise ConfigError(f"snapshot_time: {exc}") from exc
        check(
            not self.pending or bool(self.classes), "classes", "needed for pending work"
        )
        check(
            not self.running_pod_shapes
            or sum(s.weight for s in self.running_pod_shapes) > 0,
            "running_pod_shapes",
            "weights must have a positive sum",
        )
        check(
            not self.running_pods or bool(self.running_pod_shapes),
            "running_pod_shapes",
            "needed for running pods",
        )
        prios = {p.name for p in self.priority_classes}
        check(
            len(prios) == len(self.priority_classes), "priority_classes", "unique names"
        )
        for group in ("classes", "running_classes"):
            wl_classes: tuple[WorkloadClass, ...] = getattr(self, group)
            check(
                len({c.name for c in wl_classes}) == len(wl_classes),
                group,
                "class names must be unique",
            )
            check(
                not wl_classes or sum(c.weight for c in wl_classes) > 0,
                group,
                "weights must have a positive sum",
            )
            for c in wl_classes:
                where = f"{group}[{c.name}]"
                for p in c.priority_classes:
                    check(p in prios, f"{where}.priority_classes", f"unknown class {p}")
                for t in c.node_types:
                    check(t in names, f"{where}.node_types", f"unknown node type {t}")
                self._check_covered(c, where)

    def _check_covered(self, c: WorkloadClass, where: str) -> None:
        """Kueue blocks a workload requesting a resource its queue does not cover."""
        covered = set(self.queues.covered_resources)
        cpu = quantity(c.cpu_per_pod, CPU, where) + quantity(c.cpu_per_gpu, CPU, where)
        mem = quantity(c.memory_per_pod, MEMORY, where) + quantity(
            c.memory_per_gpu, MEMORY, where
        )
        wants = {CPU: cpu > 0, MEMORY: mem > 0, GPU: max(c.gpus_per_pod) > 0}
        for res, used in wants.items():
            check(
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
