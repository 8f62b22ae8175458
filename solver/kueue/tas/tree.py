"""Static topology structure of one TAS flavor, built once per snapshot.

Domains of every level are numbered in the order of their value paths, so
Kueue's last tie-break ("compare the level values") becomes an integer
comparison, and the children of a domain form one contiguous index range of
the next level, so bottom-up sums are a single ``np.add.reduceat``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from placewise.models.cluster import HOSTNAME_LABEL as HOSTNAME
from placewise.models.cluster import Node, ResourceFlavor, Topology
from placewise.models.scheduling import PodPlacement, Taint, Toleration, untolerated
from placewise.models.workload import TopologyDomain
from placewise.solver.kueue.tas.capacity import FitCache
from placewise.solver.kueue.tas.types import clip

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

_FILTER_CACHE_LIMIT = 512


@dataclass(frozen=True, slots=True)
class LeafFilter:
    """Which hostname leaves a pod template may use, and why others may not.

    ``mask`` is None when every leaf passes, so the common case costs nothing.
    The counters feed Kueue's "Total nodes: n; excluded: ..." suffix.
    """

    mask: BoolArray | None
    total: int
    node_selector: int = 0
    affinity: int = 0
    taints: Mapping[str, int] = field(default_factory=dict)


def taint_string(taint: Taint) -> str:
    """Kubernetes' ``Taint.ToString``, which Kueue prints in its reasons."""
    if taint.value:
        return f"{taint.key}={taint.value}:{taint.effect}"
    return f"{taint.key}:{taint.effect}"


class FlavorTree:
    """Leaves, domains and capacities of one TAS flavor's topology.

    ``base`` (allocatable minus non-TAS pods, per leaf) never changes; TAS
    usage lives in :class:`~placewise.solver.kueue.tas.state.TasState`, which
    keeps ``rem`` (what is left for new pods) up to date.
    """

    def __init__(
        self,
        flavor: ResourceFlavor,
        topology: Topology,
        nodes: Sequence[Node],
        resource_index: Mapping[str, int],
        node_free: Mapping[str, Sequence[int]],
    ) -> None:
        self.name = flavor.name
        self.topology_name = topology.name
        self.levels: tuple[str, ...] = topology.levels
        self.hostname = topology.levels[-1] == HOSTNAME
        self.tolerations: tuple[Toleration, ...] = flavor.tolerations
        depth = len(self.levels)

        groups: dict[object, tuple[tuple[str, ...], list[Node]]] = {}
        for node in sorted(nodes, key=lambda n: n.name):
            path = tuple(node.labels[level] for level in self.levels)
            # A hostname leaf is keyed by its hostname alone, as in Kueue: the
            # first node seen fixes its path.
            key: object = path[-1] if self.hostname else path
            if key in groups:
                groups[key][1].append(node)
            else:
                groups[key] = (path, [node])
        leaves = sorted(groups.values(), key=lambda g: g[0])
        self.leaf_paths: list[tuple[str, ...]] = [g[0] for g in leaves]
        self.leaf_nodes: list[list[Node]] = [g[1] for g in leaves]
        self.leaf_by_path: dict[tuple[str, ...], int] = {
            p: i for i, p in enumerate(self.leaf_paths)
        }
        self.leaf_by_host: dict[str, int] = (
            {p[-1]: i for i, p in enumerate(self.leaf_paths)} if self.hostname else {}
        )
        self.domains: dict[tuple[int, int], TopologyDomain] = {}
        """(leaf, pods) -> its assignment domain, built once (frozen)."""

        # Domains per level and their parents, in value-path order.
        self.domain_paths: list[list[tuple[str, ...]]] = [[] for _ in range(depth)]
        parents: list[list[int]] = [[] for _ in range(depth)]
        for path in self.leaf_paths:
            for level in range(depth):
                prefix = path[: level + 1]
                row = self.domain_paths[level]
                if not row or row[-1] != prefix:
                    row.append(prefix)
                    if level > 0:
                        parents[level].append(len(self.domain_paths[level - 1]) - 1)
        self.sizes: list[int] = [len(row) for row in self.domain_paths]
        self.zeros: list[IntArray] = []
        """Read-only zero counters per level, shared by every placement."""
        for size in self.sizes:
            zeros = np.zeros(size, dtype=np.int64)
            zeros.flags.writeable = False
            self.zeros.append(zeros)
        self.parent: list[IntArray] = [np.asarray(p, dtype=np.int64) for p in parents]
        # child_start[l][d] .. child_start[l][d + 1] are d's children at l + 1.
        self.child_start: list[IntArray] = []
        for level in range(depth - 1):
            starts = np.searchsorted(
                self.parent[level + 1], np.arange(self.sizes[level] + 1)
            )
            self.child_start.append(starts.astype(np.int64))

        n_res = len(resource_index)
        base = np.zeros((n_res, len(leaves)), dtype=np.int64)
        zero = [0] * n_res
        for i, members in enumerate(self.leaf_nodes):
            totals = [0] * n_res
            for node in members:
                for r, v in enumerate(node_free.get(node.name, zero)):
                    totals[r] += v
            base[:, i] = [clip(v) for v in totals]
        # Capacity tables are [resource, leaf]: one resource is one row.
        self.base: IntArray = base
        self.rem: IntArray = base.copy()
        """base minus TAS usage; maintained by TasState."""
        self.usage: IntArray = np.zeros_like(base)
        """TAS usage per leaf; only used when leaves are not hostnames."""
        self.leaf_host: IntArray = np.zeros(0, dtype=np.int64)
        """Global host row of each leaf (hostname topologies), set by TasState:
        leaves of different flavors with the same row share one capacity."""
        self.fit_cache = FitCache()

        self._taint_leaves: list[tuple[int, tuple[Taint, ...]]] = []
        if self.hostname:
            for i, members in enumerate(self.leaf_nodes):
                taints = tuple(t for t in members[0].taints if t.blocks_scheduling)
                if taints:
                    self._taint_leaves.append((i, taints))
        self._label_arrays: dict[str, npt.NDArray[np.object_]] = {}
        self._filters: dict[
            tuple[PodPlacement, tuple[Toleration, ...]], LeafFilter
        ] = {}
        self._ids: dict[int, list[str]] = {}

    @property
    def depth(self) -> int:
        return len(self.levels)

    @property
    def n_leaves(self) -> int:
        return len(self.leaf_paths)

    def children(self, level: int, domain: int) -> tuple[int, int]:
        """Index range of ``domain``'s children on ``level + 1``."""
        starts = self.child_start[level]
        return int(starts[domain]), int(starts[domain + 1])

    def domain_ids(self, level: int) -> list[str]:
        """Kueue's domain IDs (hostname alone for hostname leaves)."""
        ids = self._ids.get(level)
        if ids is None:
            if self.hostname and level == self.depth - 1:
                ids = [p[-1] for p in self.domain_paths[level]]
            else:
                ids = [",".join(p) for p in self.domain_paths[level]]
            self._ids[level] = ids
        return ids

    def leaf_values(self, leaf: int) -> tuple[str, ...]:
        """The values Kueue writes for a leaf: hostname only, or the full path."""
        path = self.leaf_paths[leaf]
        return (path[-1],) if self.hostname else path

    @property
    def assignment_levels(self) -> tuple[str, ...]:
        return (HOSTNAME,) if self.hostname else self.levels

    def leaf_of(self, values: Sequence[str]) -> int | None:
        """The leaf an assignment domain names, or None if the flavor lacks it."""
        if not values:
            return None
        if self.hostname:
            return self.leaf_by_host.get(values[-1])
        return self.leaf_by_path.get(tuple(values))

    # -- per-node filters (hostname leaves only) ------------------------------

    def leaf_filter(
        self, placement: PodPlacement, tolerations: tuple[Toleration, ...]
    ) -> LeafFilter:
        """Kueue's node feasibility check, cached per pod template.

        Taints first, then the full nodeSelector, then required affinity; a
        leaf is counted under the first check it fails, as Kueue's stats do.
        """
        if not self.hostname:
            return LeafFilter(mask=None, total=self.n_leaves)
        key = (placement, tolerations)
        cached = self._filters.get(key)
        if cached is not None:
            return cached
        n = self.n_leaves
        excluded = np.zeros(n, dtype=np.bool_)
        taint_counts: dict[str, int] = {}
        for leaf, taints in self._taint_leaves:
            bad = untolerated(taints, tolerations)
            if bad:
                excluded[leaf] = True
                name = taint_string(bad[0])
                taint_counts[name] = taint_counts.get(name, 0) + 1
        n_selector = 0
        if placement.node_selector:
            ok = np.ones(n, dtype=np.bool_)
            for label, value in placement.node_selector:
                ok &= self._labels(label) == value
            failed = ~ok & ~excluded
            n_selector = int(failed.sum())
            excluded |= failed
        n_affinity = 0
        if placement.required_terms is not None:
            terms = placement.required_terms
            for leaf in np.flatnonzero(~excluded).tolist():
                node = self.leaf_nodes[leaf][0]
                if not any(t.matches(node.labels, node.name) for t in terms):
                    excluded[leaf] = True
                    n_affinity += 1
        result = LeafFilter(
            mask=~excluded if excluded.any() else None,
            total=n,
            node_selector=n_selector,
            affinity=n_affinity,
            taints=taint_counts,
        )
        if len(self._filters) >= _FILTER_CACHE_LIMIT:
            self._filters.clear()
        self._filters[key] = result
        return result

    def _labels(self, label: str) -> npt.NDArray[np.object_]:
        arr = self._label_arrays.get(label)
        if arr is None:
            arr = np.empty(self.n_leaves, dtype=object)
            arr[:] = [m[0].labels.get(label) for m in self.leaf_nodes]
            self._label_arrays[label] = arr
        return arr
