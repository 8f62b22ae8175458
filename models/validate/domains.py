"""Topology domains of TAS flavors: which leaf an assignment entry names.

Both the topology rules and the capacity rule need to turn a
``topologyAssignment`` domain into concrete nodes; doing it in one place
keeps the two from disagreeing about what a domain is (kueue-semantics §6.1:
a hostname leaf is one node, any other leaf pools the nodes of one path).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from placewise.models.cluster import HOSTNAME_LABEL, Node, ResourceFlavor, Topology
from placewise.models.snapshot import Snapshot

Path = tuple[str, ...]
"""Label values of every topology level, highest first."""


@dataclass
class FlavorDomains:
    """The leaves of one TAS flavor and the nodes behind them."""

    flavor: ResourceFlavor
    topology: Topology
    by_path: dict[Path, list[Node]] = field(default_factory=dict)
    by_host: dict[str, Node] = field(default_factory=dict)

    @property
    def levels(self) -> tuple[str, ...]:
        """The levels Kueue lists in an assignment for this topology."""
        if self.topology.hostname_leaves:
            return (HOSTNAME_LABEL,)
        return self.topology.levels

    def path_of(self, node: Node) -> Path:
        return tuple(node.labels[level] for level in self.topology.levels)

    def resolve(self, values: tuple[str, ...]) -> Path | None:
        """Full level path of an assignment domain, if it is a usable leaf."""
        if self.topology.hostname_leaves:
            node = self.by_host.get(values[0]) if len(values) == 1 else None
            return self.path_of(node) if node is not None else None
        return values if values in self.by_path else None

    def resolve_as(
        self, levels: tuple[str, ...], values: tuple[str, ...]
    ) -> Path | None:
        """Like :meth:`resolve`, also accepting the full-path form of
        hostname topologies that older running admissions may carry."""
        if levels == self.levels:
            return self.resolve(values)
        if levels == self.topology.levels and self.topology.hostname_leaves and values:
            return self.resolve(values[-1:])
        return None

    def leaf_nodes(self, path: Path) -> list[Node]:
        return self.by_path.get(path, [])


class DomainIndex:
    """Per-flavor leaves, built on first use."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self._cache: dict[str, FlavorDomains | None] = {}

    def of(self, flavor: ResourceFlavor) -> FlavorDomains | None:
        if flavor.name not in self._cache:
            self._cache[flavor.name] = self._build(flavor)
        return self._cache[flavor.name]

    def _build(self, flavor: ResourceFlavor) -> FlavorDomains | None:
        topo = self.snap.topologies.get(flavor.topology_name or "")
        if topo is None:
            return None
        out = FlavorDomains(flavor, topo)
        for node in self.snap.flavor_nodes(flavor):
            out.by_path.setdefault(out.path_of(node), []).append(node)
            if topo.hostname_leaves:
                out.by_host.setdefault(node.labels[HOSTNAME_LABEL], node)
        return out

    def why_unusable(self, fd: FlavorDomains, values: tuple[str, ...]) -> str:
        """Explain, in user terms, why a domain is not a leaf of the flavor."""
        levels = fd.levels
        if len(values) != len(levels):
            return (
                f"has {len(values)} value(s) but the assignment levels are "
                f"{', '.join(levels)}"
            )
        candidates = [
            n
            for n in self.snap.nodes.values()
            if all(n.labels.get(k) == v for k, v in zip(levels, values, strict=True))
        ]
        if not candidates:
            return "no node carries these topology labels"
        node = sorted(candidates, key=lambda n: n.name)[0]
        if not node.ready:
            return f"node {node.name} is not Ready"
        if node.unschedulable:
            return f"node {node.name} is unschedulable"
        for k, v in sorted(fd.flavor.node_labels.items()):
            if node.labels.get(k) != v:
                return f"node {node.name} lacks the flavor's label {k}={v}"
        for level in fd.topology.levels:
            if level not in node.labels:
                return f"node {node.name} lacks the topology level label {level}"
        return f"node {node.name} is not a node of flavor {fd.flavor.name}"


def show(values: tuple[str, ...]) -> str:
    return "/".join(values)
