"""Incremental quota arithmetic on the cohort tree (kueue-semantics §2).

This is the solvers' quota engine: Kueue's ``resource_node.go`` rules kept
incrementally (usage propagates up the tree on every add/remove) so a greedy
cycle or a preemption simulation costs a walk to the root, not a rebuild.
The validator checks the same rules in their closed linear form, written
separately; the tests keep the two in agreement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from placewise.models.cluster import ClusterQueue, Cohort, ResourceGroup
from placewise.models.quantity import UNLIMITED
from placewise.models.snapshot import Snapshot

FR = tuple[str, str]
"""A flavor-resource, Kueue's unit of quota accounting."""


def cq_id(name: str) -> str:
    return f"cq:{name}"


def cohort_id(name: str) -> str:
    return f"co:{name}"


@dataclass(slots=True)
class QuotaNode:
    """A ClusterQueue or cohort with its own quota and its subtree totals."""

    id: str
    parent: QuotaNode | None = None
    children: list[QuotaNode] = field(default_factory=list)
    nominal: dict[FR, int] = field(default_factory=dict)
    borrowing_limit: dict[FR, int] = field(default_factory=dict)
    lending_limit: dict[FR, int] = field(default_factory=dict)
    subtree: dict[FR, int] = field(default_factory=dict)
    usage: dict[FR, int] = field(default_factory=dict)
    lq: dict[FR, int] = field(default_factory=dict)
    """Local quota per fr, precomputed once the subtree quotas are known."""

    def local_quota(self, fr: FR) -> int:
        """Quota never visible to the parent: S - lendingLimit (if set)."""
        return self.lq.get(fr, 0)

    def _compute_lq(self) -> None:
        self.lq = {
            fr: max(0, self.subtree.get(fr, 0) - lend)
            for fr, lend in self.lending_limit.items()
        }

    def local_available(self, fr: FR) -> int:
        lq = self.lq.get(fr, 0)
        if lq == 0:
            return 0
        return max(0, lq - self.usage.get(fr, 0))

    @property
    def height(self) -> int:
        """Distance to the deepest leaf; a cohort of only queues has height 1."""
        if not self.children:
            return 0
        return max(
            [1] + [c.height + 1 for c in self.children if c.id.startswith("co:")]
        )


def _quotas(groups: Iterable[ResourceGroup], node: QuotaNode) -> None:
    for group in groups:
        for fq in group.flavors:
            for rq in fq.resources:
                fr = (fq.name, rq.name)
                node.nominal[fr] = rq.nominal
                if rq.borrowing_limit is not None:
                    node.borrowing_limit[fr] = rq.borrowing_limit
                if rq.lending_limit is not None:
                    node.lending_limit[fr] = rq.lending_limit


class QuotaTree:
    """All cohort trees of a snapshot, with live usage."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._build(snapshot.cluster_queues, snapshot.cohorts, snapshot.cohort_in_cycle)
        for w in snapshot.running:
            assert w.admission is not None
            self.add_usage(w.admission.cluster_queue, w.usage())

    @classmethod
    def of_queues(
        cls, cluster_queues: Mapping[str, ClusterQueue], cohorts: Mapping[str, Cohort]
    ) -> QuotaTree:
        """The trees of queues and cohorts alone, with no usage (the
        generator admits its running work through it, as Kueue would)."""
        tree = cls.__new__(cls)
        tree._build(cluster_queues, cohorts, frozenset())
        return tree

    def _build(
        self,
        cluster_queues: Mapping[str, ClusterQueue],
        cohorts: Mapping[str, Cohort],
        in_cycle: AbstractSet[str],
    ) -> None:
        self.nodes: dict[str, QuotaNode] = {}
        for name, co in sorted(cohorts.items()):
            node = QuotaNode(cohort_id(name))
            _quotas(co.resource_groups, node)
            self.nodes[node.id] = node
        for name, cq in sorted(cluster_queues.items()):
            node = QuotaNode(cq_id(name))
            _quotas(cq.resource_groups, node)
            self.nodes[node.id] = node
            if cq.cohort is not None:
                self._link(node, cohort_id(cq.cohort))
        for name, co in sorted(cohorts.items()):
            # A cohort inside a cycle is cut loose: its queues are inactive
            # anyway and the walk to the root must terminate.
            if co.parent is not None and name not in in_cycle:
                self._link(self.nodes[cohort_id(name)], cohort_id(co.parent))
        for node in self.nodes.values():
            if node.parent is None:
                self._compute_subtree(node)
                node._compute_lq()

    def _link(self, child: QuotaNode, parent_id: str) -> None:
        parent = self.nodes[parent_id]
        child.parent = parent
        parent.children.append(child)

    def _compute_subtree(self, node: QuotaNode) -> None:
        for child in node.children:
            self._compute_subtree(child)
            child._compute_lq()
        subtree = dict(node.nominal)
        for child in node.children:
            for fr in set(child.subtree) | set(child.lending_limit):
                contribution = child.subtree.get(fr, 0) - child.local_quota(fr)
                subtree[fr] = subtree.get(fr, 0) + contribution
        node.subtree = subtree

    # -- usage -------------------------------------------------------------

    # add/remove are the hottest loops of a large preemption search, so the
    # propagation is inlined (local quota absorbs first; only what it cannot
    # hold reaches the parent, the same rules as local_available).

    def add_usage(self, cq: str, usage: Mapping[FR, int]) -> None:
        node = self.nodes[cq_id(cq)]
        for fr, v in usage.items():
            n: QuotaNode | None = node
            while n is not None and v > 0:
                u = n.usage
                used = u.get(fr, 0)
                u[fr] = used + v
                lq = n.lq.get(fr, 0)
                if lq > used:
                    if v <= lq - used:
                        break
                    v -= lq - used
                n = n.parent

    def remove_usage(self, cq: str, usage: Mapping[FR, int]) -> None:
        node = self.nodes[cq_id(cq)]
        for fr, v in usage.items():
            n: QuotaNode | None = node
            while n is not None and v > 0:
                u = n.usage
                used = u.get(fr, 0)
                u[fr] = used - v
                stored = used - n.lq.get(fr, 0)
                if stored <= 0:
                    break
                if stored < v:
                    v = stored
                n = n.parent

    # -- queries -------------------------------------------------------------

    def node(self, cq: str) -> QuotaNode:
        return self.nodes[cq_id(cq)]

    def usage(self, cq: str, fr: FR) -> int:
        return self.nodes[cq_id(cq)].usage.get(fr, 0)

    def nominal(self, cq: str, fr: FR) -> int:
        return self.nodes[cq_id(cq)].nominal.get(fr, 0)

    def _available(self, n: QuotaNode, fr: FR) -> int:
        s, u = n.subtree.get(fr, 0), n.usage.get(fr, 0)
        if n.parent is None:
            return s - u
        p = self._available(n.parent, fr)
        limit = n.borrowing_limit.get(fr)
        if limit is not None:
            lq = n.local_quota(fr)
            p = min(p, (s - lq) - max(0, u - lq) + limit)
        return n.local_available(fr) + p

    def available(self, cq: str, fr: FR) -> int:
        """What the queue may still take on ``fr`` (never negative)."""
        return max(0, self._available(self.nodes[cq_id(cq)], fr))

    def _potential(self, n: QuotaNode, fr: FR) -> int:
        if n.parent is None:
            return n.subtree.get(fr, 0)
        a = n.local_quota(fr) + self._potential(n.parent, fr)
        limit = n.borrowing_limit.get(fr)
        if limit is not None:
            a = min(a, n.subtree.get(fr, 0) + limit)
        return a

    def potential_available(self, cq: str, fr: FR) -> int:
        """Capacity if the whole tree were idle."""
        return self._potential(self.nodes[cq_id(cq)], fr)

    def node_potential(self, node: QuotaNode, fr: FR) -> int:
        """``potential_available`` of any node, cohorts included (what a
        cohort could lend to its children if the whole tree were idle)."""
        return self._potential(node, fr)

    def borrowing_with(self, cq: str, fr: FR, v: int) -> bool:
        n = self.nodes[cq_id(cq)]
        return n.usage.get(fr, 0) + v > n.subtree.get(fr, 0)

    def is_borrowing(self, cq: str, frs: Iterable[FR] | None = None) -> bool:
        n = self.nodes[cq_id(cq)]
        keys = n.usage.keys() if frs is None else frs
        return any(n.usage.get(fr, 0) > n.subtree.get(fr, 0) for fr in keys)

    def within_nominal(self, node: QuotaNode, frs: Iterable[FR]) -> bool:
        return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)

    def lowest_fitting_subtree(self, cq: str, fr: FR, v: int) -> tuple[int, bool]:
        """Kueue's FindHeightOfLowestSubtreeThatFits: (borrowing level, may reclaim)."""
        n = self.nodes[cq_id(cq)]
        if not self.borrowing_with(cq, fr, v) or n.parent is None:
            return 0, n.parent is not None
        rem = v - n.local_available(fr)
        a: QuotaNode | None = n.parent
        root = n.parent
        while a is not None:
            if a.usage.get(fr, 0) + rem <= a.subtree.get(fr, 0):
                return a.height, a.parent is not None
            rem -= a.local_available(fr)
            root = a
            a = a.parent
        return root.height, False

    def root(self, cq: str) -> QuotaNode:
        n = self.nodes[cq_id(cq)]
        while n.parent is not None:
            n = n.parent
        return n


def unlimited(value: int) -> bool:
    return value >= UNLIMITED // 2
