"""The physical cluster: hosts in blocks and racks, and their Kubernetes objects.

The layout is kept as numpy arrays indexed by host (block, rack, node type,
allocatable per resource) so that placement can work on whole-cluster vectors;
the Node, Topology and ResourceFlavor dicts are built from it at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    RESOURCES,
    format_kibibytes,
    format_quantity,
    make_uid,
    parse_quantity,
    timestamp,
)
from placewise.adapters.generate.config import GeneratorConfig, NodeType
from placewise.models.cluster import HOSTNAME_LABEL, PODS

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

MAINTENANCE_TAINT = {
    "key": "placewise.io/maintenance",
    "value": "true",
    "effect": "NoSchedule",
}
NODE_AGE_S = 30 * 24 * 3600
"""Hosts joined the cluster a month before the snapshot."""


@dataclass(frozen=True)
class Layout:
    """Hosts as parallel arrays; level 0 is block, 1 rack, 2 host."""

    names: list[str]
    block_values: list[str]
    rack_values: list[str]
    block: IntArray
    """Block index of each host."""
    rack: IntArray
    """Global rack index of each host."""
    node_type: IntArray
    """Index into ``config.node_types`` of each host."""
    allocatable: IntArray
    """Shape (len(RESOURCES), hosts): cpu milli, memory bytes, gpus, pods."""
    capacity: IntArray
    unschedulable: BoolArray
    tainted: BoolArray
    not_ready: BoolArray

    @property
    def size(self) -> int:
        return len(self.names)

    @property
    def usable(self) -> BoolArray:
        """Hosts Kueue's TAS counts as capacity (Ready, schedulable, untainted)."""
        return ~(self.unschedulable | self.tainted | self.not_ready)

    def domains(self, level: int) -> IntArray:
        """Domain index of every host at a level (block, rack or host)."""
        if level == 0:
            return self.block
        if level == 1:
            return self.rack
        return np.arange(self.size, dtype=np.int64)

    def domain_count(self, level: int) -> int:
        return (len(self.block_values), len(self.rack_values), self.size)[level]


def _type_per_rack(types: tuple[NodeType, ...], racks: int) -> list[int]:
    """Deal racks to node types by largest remainder, in contiguous runs.

    Contiguous runs keep a block (mostly) one GPU generation, as data centres
    are built.
    """
    weights = np.array([t.fraction for t in types], dtype=float)
    exact = weights / weights.sum() * racks
    counts = np.floor(exact).astype(int)
    order = np.argsort(-(exact - counts), kind="stable")
    for i in order[: racks - int(counts.sum())]:
        counts[i] += 1
    out: list[int] = []
    for i, c in enumerate(counts):
        out.extend([i] * int(c))
    return out


def build_layout(config: GeneratorConfig, rng: np.random.Generator) -> Layout:
    """Place hosts rack by rack; the last rack and block may be partial."""
    n = config.node_count
    hpr, rpb = config.hosts_per_rack, config.racks_per_block
    racks = -(-n // hpr)
    blocks = -(-racks // rpb)
    bw = (
        len(str(max(blocks - 1, 0)))
        if config.naming == "kueue-perf"
        else max(2, len(str(blocks - 1)))
    )
    rw = max(2, len(str(rpb - 1)))
    hw = max(2, len(str(hpr - 1)))
    rack_type = _type_per_rack(config.node_types, racks)

    names: list[str] = []
    block_values = [
        f"block-{b}" if config.naming == "kueue-perf" else f"block-{b:0{bw}d}"
        for b in range(blocks)
    ]
    rack_values: list[str] = []
    block = np.empty(n, dtype=np.int64)
    rack = np.empty(n, dtype=np.int64)
    node_type = np.empty(n, dtype=np.int64)
    for r in range(racks):
        b, local = divmod(r, rpb)
        if config.naming == "kueue-perf":
            rack_values.append(f"rack-{local}")
        else:
            rack_values.append(f"{block_values[b]}-rack-{local:0{rw}d}")
        first = r * hpr
        for h in range(min(hpr, n - first)):
            i = first + h
            t = config.node_types[rack_type[r]]
            if config.naming == "kueue-perf":
                names.append(f"node-b{b}-r{local}-n{h}")
            else:
                names.append(f"{t.name}-b{b:0{bw}d}-r{local:0{rw}d}-n{h:0{hw}d}")
            block[i], rack[i], node_type[i] = b, r, rack_type[r]

    cap_by_type = np.array(
        [
            [
                parse_quantity(t.cpu, CPU),
                parse_quantity(t.memory, MEMORY),
                t.gpus,
                t.pods,
            ]
            for t in config.node_types
        ],
        dtype=np.int64,
    )
    reserved = np.array(
        [
            [
                parse_quantity(t.reserved_cpu, CPU),
                parse_quantity(t.reserved_memory, MEMORY),
                0,
                0,
            ]
            for t in config.node_types
        ],
        dtype=np.int64,
    )
    capacity = cap_by_type[node_type].T.copy()
    allocatable = (cap_by_type - reserved)[node_type].T.copy()

    def pick(fraction: float) -> BoolArray:
        mask = np.zeros(n, dtype=bool)
        k = round(fraction * n)
        if k:
            mask[rng.choice(n, size=k, replace=False)] = True
        return mask

    return Layout(
        names=names,
        block_values=block_values,
        rack_values=rack_values,
        block=block,
        rack=rack,
        node_type=node_type,
        allocatable=allocatable,
        capacity=capacity,
        unschedulable=pick(config.unschedulable_fraction),
        tainted=pick(config.tainted_fraction),
        not_ready=pick(config.not_ready_fraction),
    )


def _resources(values: IntArray, i: int, has_gpu: bool) -> dict[str, str]:
    out = {
        CPU: format_quantity(int(values[0, i]), CPU),
        MEMORY: format_kibibytes(int(values[1, i])),
        PODS: str(int(values[3, i])),
    }
    if has_gpu:
        out[GPU] = str(int(values[2, i]))
    return out


def node_objects(
    config: GeneratorConfig, layout: Layout, seed: int, snapshot: datetime
) -> list[dict[str, Any]]:
    """Nodes as ``kubectl get node -o yaml`` prints them (trimmed to what matters)."""
    created = timestamp(snapshot, -NODE_AGE_S)
    heartbeat = timestamp(snapshot, -30)
    out: list[dict[str, Any]] = []
    for i, name in enumerate(layout.names):
        t = config.node_types[int(layout.node_type[i])]
        labels = {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            HOSTNAME_LABEL: name,
            config.block_label: layout.block_values[int(layout.block[i])],
            config.rack_label: layout.rack_values[int(layout.rack[i])],
            **t.labels,
        }
        spec: dict[str, Any] = {}
        if layout.tainted[i]:
            spec["taints"] = [dict(MAINTENANCE_TAINT)]
        if layout.unschedulable[i]:
            spec["unschedulable"] = True
            spec.setdefault("taints", []).append(
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
            )
        ready = not layout.not_ready[i]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": make_uid(seed, "Node", "", name),
                    "creationTimestamp": created,
                    "labels": labels,
                },
                "spec": spec,
                "status": {
                    "allocatable": _resources(layout.allocatable, i, t.gpus > 0),
                    "capacity": _resources(layout.capacity, i, t.gpus > 0),
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True" if ready else "False",
                            "reason": "KubeletReady" if ready else "KubeletNotReady",
                            "message": "kubelet is posting ready status"
                            if ready
                            else "container runtime network not ready",
                            "lastHeartbeatTime": heartbeat,
                            "lastTransitionTime": created,
                        }
                    ],
                },
            }
        )
    return out


def topology_object(config: GeneratorConfig) -> dict[str, Any]:
    return {
        "apiVersion": f"kueue.x-k8s.io/{config.api_version}",
        "kind": "Topology",
        "metadata": {"name": config.topology_name},
        "spec": {
            "levels": [
                {"nodeLabel": config.block_label},
                {"nodeLabel": config.rack_label},
                {"nodeLabel": HOSTNAME_LABEL},
            ]
        },
    }


def flavor_objects(config: GeneratorConfig) -> list[dict[str, Any]]:
    out = []
    for t in config.node_types:
        spec: dict[str, Any] = {"nodeLabels": flavor_labels(t)}
        if t.tas:
            spec["topologyName"] = config.topology_name
        out.append(
            {
                "apiVersion": f"kueue.x-k8s.io/{config.api_version}",
                "kind": "ResourceFlavor",
                "metadata": {"name": t.flavor},
                "spec": spec,
            }
        )
    return out


def flavor_labels(t: NodeType) -> dict[str, str]:
    return {k: t.labels[k] for k in t.flavor_label_keys}


def resource_index(resource: str) -> int:
    return RESOURCES.index(resource)
