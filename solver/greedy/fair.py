"""Kueue's fair-sharing preemption (kueue-semantics §5.5): who is evicted
when the preemptor's cohort shares by dominant resource share.

Follows ``preemption.go: fairPreemptions`` and ``fairsharing/*.go``:
candidates are the preemptor's own queue (``withinClusterQueue``) and every
borrowing queue of its cohort tree (``reclaimWithinCohort``); queues are
visited from the root, always entering the child with the highest share; a
victim in another queue is taken only while the preemptor's queue stays
within its nominal quota, or when the configured strategy allows it
(:mod:`placewise.solver.kueue.fairsharing`).  The share arithmetic and the
strategies are shared with the other back-ends; this is the greedy search.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

from placewise.models.cluster import ClusterQueue, PreemptionStrategy
from placewise.solver.kueue.fairsharing import (
    NEGATIVE,
    STRATEGIES,
    Share,
    Shares,
    almost_lcas,
    compare,
    less_than_initial_share,
    node_name,
    subtree_queues,
)
from placewise.solver.kueue.order import candidate_order
from placewise.solver.kueue.preemption import satisfies_policy
from placewise.solver.kueue.quota import FR, QuotaNode
from placewise.solver.kueue.workload import WlInfo

if TYPE_CHECKING:
    from placewise.solver.greedy.preemption import Preemptor

Chosen = list[tuple[WlInfo, str]]
"""Victims with the Preempted reason Kueue writes for each."""


class _Ordering:
    """Kueue's ``TargetClusterQueueOrdering``: which queue to take from next.

    From the root, enter the child with the highest share: queues that no
    longer borrow (except the preemptor's own) or have no candidates left
    are pruned, cohorts that no longer borrow are pruned unless they hold
    the preemptor; a cohort with every child pruned is pruned; the walk ends
    when the root is.
    """

    def __init__(
        self, search: FairSearch, candidates: list[WlInfo], preemptor_cq: str
    ) -> None:
        self.shares = search.shares
        self.own = preemptor_cq
        self.order = candidate_order(preemptor_cq)
        self.lists: dict[str, list[WlInfo]] = {}
        for c in candidates:
            self.lists.setdefault(c.cq, []).append(c)
        node: QuotaNode | None = search.tree.node(preemptor_cq)
        self.node = node
        self.path: set[str] = set()
        while node is not None:
            self.path.add(node.id)
            node = node.parent
        self.pruned: set[str] = set()

    def has(self, cq: str) -> bool:
        return bool(self.lists.get(cq))

    def pop(self, cq: str) -> WlInfo:
        return self.lists[cq].pop(0)

    def drop(self, cq: str) -> None:
        self.pruned.add(f"cq:{cq}")

    def __iter__(self) -> Iterator[str]:
        assert self.node is not None
        if self.node.parent is None:
            while self.node.id not in self.pruned and self.has(self.own):
                yield self.own
            return
        root = self.node
        while root.parent is not None:
            root = root.parent
        while root.id not in self.pruned:
            target = self._next(root)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> str | None:
        best_cq: str | None = None
        best_cq_share = NEGATIVE
        best_co: QuotaNode | None = None
        best_co_share = NEGATIVE
        for child in sorted(cohort.children, key=lambda c: c.id):
            if child.id in self.pruned:
                continue
            share = self.shares.share(child)
            if child.id.startswith("cq:"):
                name = child.id[3:]
                if (not share.borrowing and name != self.own) or not self.has(name):
                    self.pruned.add(child.id)
                    continue
                c = compare(share, best_cq_share)
                if c > 0 or (
                    c == 0
                    and best_cq is not None
                    and self.order(self.lists[name][0])
                    < self.order(self.lists[best_cq][0])
                ):
                    best_cq, best_cq_share = name, share
            elif not share.borrowing and child.id not in self.path:
                self.pruned.add(child.id)
            elif compare(share, best_co_share) >= 0:
                best_co, best_co_share = child, share
        if best_co is None and best_cq is None:
            self.pruned.add(cohort.id)
            return None
        if best_co is not None and compare(best_co_share, best_cq_share) >= 0:
            return self._next(best_co)
        return best_cq


class FairSearch:
    """One fair-sharing target search, against the live cluster state."""

    def __init__(
        self,
        owner: Preemptor,
        wl: WlInfo,
        usage: Mapping[FR, int],
        frs_need: frozenset[FR],
        tas_fits: Callable[[], bool] | None,
    ) -> None:
        self.owner = owner
        self.state = owner.state
        self.tree = owner.state.quota
        self.shares: Shares = owner.shares
        self.wl, self.usage, self.frs_need = wl, usage, frs_need
        self.tas_fits = tas_fits
        self.tas = tas_fits is not None
        self.targets: Chosen = []
        self.blocked: list[str] = []
        """Why victims were refused, for the pending reason."""

    # -- candidates ---------------------------------------------------------

    def candidates(self, cq: ClusterQueue) -> list[WlInfo]:
        """Own-queue workloads under ``withinClusterQueue``; workloads of every
        other active queue of the tree that borrows on a needed
        flavor-resource, under ``reclaimWithinCohort``."""
        wl, frs = self.wl, self.frs_need
        out: list[WlInfo] = []
        pre = cq.preemption
        if pre.within_cluster_queue != "Never":
            out += self._from(wl.cq, pre.within_cluster_queue)
        node = self.tree.node(wl.cq)
        if node.parent is not None and pre.reclaim_within_cohort != "Never":
            root = self.tree.root(wl.cq)
            for q in subtree_queues(root):
                name = q.id[3:]
                if name == wl.cq or not self.owner.snapshot.is_active(name):
                    continue
                if any(q.usage.get(fr, 0) > q.nominal.get(fr, 0) for fr in frs):
                    out += self._from(name, pre.reclaim_within_cohort)
        order = candidate_order(wl.cq)
        return sorted(out, key=order)

    def _from(self, queue: str, policy: str) -> list[WlInfo]:
        running = self.state.running.get(queue) or {}
        return [
            c
            for c in running.values()
            if c.frs & self.frs_need and satisfies_policy(self.wl, c, policy)
        ]

    # -- search ----------------------------------------------------------------

    def run(self, strategies: tuple[PreemptionStrategy, ...]) -> Chosen:
        """The victims, still removed from the state when the preemptor fits
        (the caller fills back and restores); none, state restored, if not."""
        cq = self.owner.snapshot.cluster_queues[self.wl.cq]
        candidates = self.candidates(cq)
        if not candidates:
            return []
        self.tree.add_usage(self.wl.cq, self.usage)
        try:
            fits, retry = self._first(candidates, STRATEGIES[strategies[0]])
            if not fits and len(strategies) > 1:
                fits = self._second(retry)
        finally:
            self.tree.remove_usage(self.wl.cq, self.usage)
        if not fits:
            for info, _ in self.targets:
                self.state.add(info, tas_too=self.tas)
            return []
        return self.targets

    def _take(self, info: WlInfo, reason: str) -> bool:
        """Evict ``info`` in the simulation; does the preemptor fit now?"""
        self.state.remove(info, tas_too=self.tas)
        self.targets.append((info, reason))
        self.tree.remove_usage(self.wl.cq, self.usage)
        try:
            return self.owner.fits(self.wl, self.usage, True, self.tas_fits)
        finally:
            self.tree.add_usage(self.wl.cq, self.usage)

    def _within_nominal(self) -> bool:
        node = self.tree.node(self.wl.cq)
        return all(
            node.usage.get(fr, 0) <= node.nominal.get(fr, 0) for fr in self.frs_need
        )

    def _shares(self, target: str) -> tuple[Share, Share, QuotaNode, QuotaNode]:
        mine, theirs = almost_lcas(self.tree, self.wl.cq, target)
        return self.shares.share(mine), self.shares.share(theirs), mine, theirs

    def _share_without(self, target: str, info: WlInfo, side: QuotaNode) -> Share:
        self.tree.remove_usage(target, info.usage)
        try:
            return self.shares.share(side)
        finally:
            self.tree.add_usage(target, info.usage)

    def _first(
        self,
        candidates: list[WlInfo],
        strategy: Callable[[Share, Share, Share], bool],
    ) -> tuple[bool, list[WlInfo]]:
        ordering = _Ordering(self, candidates, self.wl.cq)
        retry: list[WlInfo] = []
        within = self._within_nominal()
        for y in ordering:
            if y == self.wl.cq:
                if self._take(ordering.pop(y), "InClusterQueue"):
                    return True, []
                continue
            if within:
                if self._take(ordering.pop(y), "InCohortReclamation"):
                    return True, []
                continue
            pns, tos, mine, theirs = self._shares(y)
            if pns.infinite and not tos.infinite:
                self._refuse(mine, pns, theirs, tos, y, strict=True)
                while ordering.has(y):
                    retry.append(ordering.pop(y))
                continue
            while ordering.has(y):
                cand = ordering.pop(y)
                tns = self._share_without(y, cand, theirs)
                if strategy(pns, tos, tns):
                    if self._take(cand, "InCohortFairSharing"):
                        return True, []
                    break
                self._refuse(mine, pns, theirs, tns, y, cand=cand)
                retry.append(cand)
        return False, retry

    def _second(self, retry: list[WlInfo]) -> bool:
        """Rule S2-b over the refused candidates: one per queue at most."""
        ordering = _Ordering(self, retry, self.wl.cq)
        for y in ordering:
            pns, tos, mine, theirs = self._shares(y)
            cand = ordering.pop(y)
            if less_than_initial_share(pns, tos, tos):
                if self._take(cand, "InCohortFairSharing"):
                    return True
            else:
                self._refuse(mine, pns, theirs, tos, y, strict=True)
            ordering.drop(y)
        return False

    def _refuse(
        self,
        mine: QuotaNode,
        pns: Share,
        theirs: QuotaNode,
        other: Share,
        target: str,
        cand: WlInfo | None = None,
        strict: bool = False,
    ) -> None:
        """Record why a victim was refused: S2-a refuses a share that would
        end above the target's; S2-b one not strictly below it."""
        if len(self.blocked) >= 3:
            return
        what = (
            f"preempting {cand.key}" if cand else f"preempting in ClusterQueue {target}"
        )
        how = "not below" if strict else "above"
        why = (
            f"{what} would leave {node_name(mine)}'s share ({pns}) {how} "
            f"{node_name(theirs)}'s ({other})"
        )
        if why not in self.blocked:
            self.blocked.append(why)
