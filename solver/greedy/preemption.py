"""Kueue's classical preemption: candidates, ordering, remove-until-fit
(fill back in :mod:`.fillback`).

Follows ``preemption.go: classicalPreemptions`` and ``classical/*.go``
(kueue-semantics §5.1-5.3).  The search is order-sensitive by design; the
result is minimal only with respect to Kueue's heuristic, which is exactly
what a "what would Kueue do" dry run must reproduce.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from enum import Enum

from placewise.models.cluster import ClusterQueue
from placewise.solver.greedy.fair import FairSearch
from placewise.solver.greedy.fillback import FillBack
from placewise.solver.greedy.fillback import Target as Target
from placewise.solver.greedy.runs import RunMoves, TasCheck, TasMemo
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.fairsharing import Shares
from placewise.solver.kueue.preemption import (
    may_reclaim_while_borrowing,
    satisfying_policy,
)
from placewise.solver.kueue.quota import FR, QuotaNode, cq_id
from placewise.solver.kueue.tas.memo import Groups, requests_key
from placewise.solver.kueue.workload import WlInfo

"""A missing QuotaReserved time sorts as "now", i.e. the most recent."""


class Variant(Enum):
    WITHIN_CQ = 1
    HIERARCHICAL_RECLAIM = 2
    RECLAIM_WITHOUT_BORROWING = 3
    RECLAIM_WHILE_BORROWING = 4

    @property
    def reason(self) -> str:
        """The Preempted condition reason Kueue writes for this variant."""
        if self is Variant.WITHIN_CQ:
            return "InClusterQueue"
        if self is Variant.RECLAIM_WHILE_BORROWING:
            return "InCohortReclaimWhileBorrowing"
        return "InCohortReclamation"


@dataclass(slots=True)
class _Candidate:
    info: WlInfo
    lca: QuotaNode | None
    variant: Variant


def _victim_order(c: _Candidate) -> tuple[int, float, str]:
    return c.info.victim_order


def borrow_forbidden(cq: ClusterQueue) -> bool:
    return cq.preemption.borrow_within_cohort.policy == "Never"


class _Walk:
    """Kueue's candidate walk, taken lazily: the valid candidates in order
    (up to the quota fit first, then, if TAS needs more, to the end)."""

    def __init__(
        self,
        owner: Preemptor,
        wl: WlInfo,
        borrowing: bool,
        frs_need: frozenset[FR],
        candidates: list[_Candidate],
    ) -> None:
        self.owner, self.wl, self.borrowing = owner, wl, borrowing
        self.frs_need, self.candidates = frs_need, candidates
        self.items: list[_Candidate] = []
        self.pos = 0

    def finish(self, removed: list[WlInfo]) -> None:
        """Walk to the end: every remaining valid candidate.

        Validity is judged with every earlier item removed from quota: the
        caller keeps the walk's items removed while it probes TAS, and new
        ones are removed here (and listed in ``removed``) — except those of
        the preemptor's own queue. Those are valid anyway, and no other
        candidate's validity reads what they free: it reads the
        candidate's queue and cohorts below the cohort it was collected
        at, which is already an ancestor of the preemptor's queue.
        """
        quota = self.owner.state.quota
        own = self.wl.cq
        while self.pos < len(self.candidates):
            cand = self.candidates[self.pos]
            self.pos += 1
            if cand.info.cq == own:
                self.items.append(cand)
            elif self.owner._valid(self.wl, cand, self.borrowing, self.frs_need):
                quota.remove_usage(cand.info.cq, cand.info.usage)
                removed.append(cand.info)
                self.items.append(cand)


class Preemptor(FillBack):
    """Target search against the live :class:`ClusterState` (restored after)."""

    def __init__(self, state: ClusterState) -> None:
        self._tas = True
        self.state = state
        self.quota = state.quota
        self.snapshot = state.snapshot
        self.fair = state.snapshot.fair_sharing
        self.shares = Shares.of(state.snapshot, state.quota)
        self.blocked: list[str] = []
        """Why the last fair-sharing search refused victims (pending reasons)."""
        self._memo: dict[Hashable, tuple[tuple[Target, ...], tuple[str, ...]]] = {}
        self._memo_version = -1
        """Answers given at state version ``_memo_version`` (see get_targets)."""
        self._requests: Mapping[str, Groups] | None = None
        """What the current search's TAS check places (see _first_tas_fit)."""

    def get_targets(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        frs_need: frozenset[FR],
        tas_fits: TasCheck | None = None,
        tas_requests: Mapping[str, Groups] | None = None,
    ) -> list[Target]:
        """Kueue's targets for ``wl`` on the current state, which is left as
        found. ``tas_requests``: what ``tas_fits`` places (without them a
        TAS search is neither remembered nor bounded).

        The answer is a function of the state and the question, and the
        cycle asks the same question again on an unchanged state (a head
        whose topology fits nowhere is assigned again when processed): so
        it is remembered while the state's version holds.
        """
        state = self.state
        memo_key: Hashable | None = None
        if tas_fits is None or tas_requests is not None:
            tas_key = None if tas_requests is None else requests_key(tas_requests)
            memo_key = (wl.cq, wl.key, tuple(usage.items()), frs_need, tas_key)
            if self._memo_version != state.version:
                self._memo.clear()
                self._memo_version = state.version
            hit = self._memo.get(memo_key)
            if hit is not None:
                self.blocked = list(hit[1])
                return list(hit[0])
        version = state.version
        self._requests = tas_requests
        try:
            targets = self._search(wl, usage, frs_need, tas_fits)
        finally:
            state.version = version  # every search leaves the state as found
            self._requests = None
        if memo_key is not None:
            self._memo[memo_key] = (tuple(targets), tuple(self.blocked))
        return targets

    def _search(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        frs_need: frozenset[FR],
        tas_fits: TasCheck | None,
    ) -> list[Target]:
        if self.fair.enable:
            return self._fair(wl, usage, frs_need, tas_fits)
        cq = self.snapshot.cluster_queues[wl.cq]
        same = self._same_queue(wl, cq, frs_need)
        hierarchy, priority = self._cohort_candidates(wl, cq, usage, frs_need)
        # Kueue's candidate order (``candidate_order``): within one list
        # every candidate's queue is, or none is, the preemptor's, and the
        # evicted ones are taken out first below in list order; so sorting
        # each list by the rest of the key gives the same walk.
        lists = [sorted(lst, key=_victim_order) for lst in (hierarchy, priority, same)]
        candidates = [c for lst in lists for c in lst if c.info.evicted] + [
            c for lst in lists for c in lst if not c.info.evicted
        ]
        forbidden = borrow_forbidden(cq)
        if (not hierarchy and not priority) or (
            forbidden and not self._under_nominal(wl.cq, frs_need)
        ):
            attempts = [True]
        elif forbidden and not hierarchy:
            attempts = [False, True]
        else:
            attempts = [True, False]
        memo = TasMemo(tas_fits) if tas_fits is not None else None
        for borrowing in attempts:
            walk, first = self._quota_pass(
                wl, usage, borrowing, frs_need, candidates, keep=memo is not None
            )
            if first is None:
                continue
            seq = walk.items
            # Quota-only simulations (the oracle) skip the TAS capacity tables.
            self._tas = memo is not None
            try:
                if memo is None:
                    end: int | None = first
                    assert end is not None
                    self._remove_all([c.info for c in seq[: end + 1]], memo)
                else:
                    # Leaves the prefix removed (what _remove_all would do).
                    end = self._first_tas_fit(walk, first, memo)
                    if end is None:
                        continue
                targets = [Target(c.info, c.variant.reason) for c in seq[: end + 1]]
                targets = self._fill_back(wl, usage, borrowing, memo, targets)
                for t in targets:
                    self._add(t.info, memo)
                return targets
            finally:
                self._tas = True
        return []

    def _fair(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        frs_need: frozenset[FR],
        tas_fits: TasCheck | None,
    ) -> list[Target]:
        """Fair-sharing search (:mod:`.fair`), then Kueue's fill back."""
        check: Callable[[], bool] | None = None
        if tas_fits is not None:
            found = tas_fits

            def check() -> bool:
                return found() is not None

        search = FairSearch(self, wl, usage, frs_need, check)
        chosen = search.run(self.fair.preemption_strategies)
        self.blocked = search.blocked
        if not chosen:
            return []
        self._tas = check is not None
        try:
            targets = [Target(info, reason) for info, reason in chosen]
            targets = self._fill_back(wl, usage, True, check, targets)
            for t in targets:
                self._add(t.info, None)
        finally:
            self._tas = True
        return targets

    def _quota_pass(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        borrowing: bool,
        frs_need: frozenset[FR],
        candidates: list[_Candidate],
        keep: bool = False,
    ) -> tuple[_Walk, int | None]:
        """Kueue's walk with quota only, up to the first prefix after which
        quota fits: the valid candidates so far (validity depends on quota
        alone) and that prefix.

        Both quota fit and TAS fit only grow as victims are removed, so the
        first prefix where both hold — Kueue's answer — is the first TAS fit
        at or after this quota fit; the TAS part is then searched in
        O(log n) placements instead of one per candidate. ``keep``: when
        quota fits, the walk stays removed from quota for that search
        (:meth:`_first_tas_fit` puts it back).
        """
        walk = _Walk(self, wl, borrowing, frs_need, candidates)
        first: int | None = None
        seq = walk.items
        try:
            while walk.pos < len(candidates):
                cand = candidates[walk.pos]
                walk.pos += 1
                if not self._valid(wl, cand, borrowing, frs_need):
                    continue
                self.quota.remove_usage(cand.info.cq, cand.info.usage)
                seq.append(cand)
                if self.fits(wl, usage, borrowing, None):
                    first = len(seq) - 1
                    break
        finally:
            if first is None or not keep:
                self.state.quota_move([c.info for c in seq], 1)
        return walk, first

    def _first_tas_fit(self, walk: _Walk, first: int, memo: TasMemo) -> int | None:
        """Smallest i >= first whose prefix walk[:i+1] removed lets TAS fit,
        by bisection between ``first`` and the whole walk (TAS fit only
        grows as victims are removed), None if even the whole walk fails.

        Quota: every walked candidate stays removed until the end (what
        :meth:`_Walk.finish` judges validity against; the TAS check reads no
        quota). TAS: only the probed prefix is removed, moved run by run.
        With no fit both end where they started; with a fit at i, the
        prefix walk[:i+1] is left removed from both, as
        :meth:`_remove_all` would leave it (see :meth:`_keep_prefix`),
        instead of being put back and taken out again.
        """
        seq = walk.items
        removed_quota = [c.info for c in seq]  # left removed by the quota pass
        walk.finish(removed_quota)
        infos = [c.info for c in seq]
        moves = RunMoves(self.state, infos)
        removed = 0
        end: int | None = None

        def fits_with(i: int) -> bool:
            nonlocal removed
            if removed < i + 1:
                moves.move(removed, i + 1, -1)
                for info in infos[removed : i + 1]:
                    memo.freed(info)
            elif removed > i + 1:
                moves.move(i + 1, removed, 1)
                for info in infos[i + 1 : removed]:
                    memo.taken(info)
            removed = i + 1
            return memo()

        try:
            # The whole walk first: most searches at scale end there (no
            # prefix lets the preemptor's topology fit: 85 % on scale-10000),
            # after one placement instead of a gallop to the end; or before
            # any, when even the leaf counts with the walk gone fall short.
            lo, hi = first, len(seq) - 1
            requests = self._requests
            if requests and self.state.tas.could_fit(requests, moves.freed()) is False:
                return None
            if not fits_with(hi):
                return None
            while lo < hi:
                mid = (lo + hi) // 2
                if fits_with(mid):
                    hi = mid
                else:
                    lo = mid + 1
            end = hi
            return hi
        finally:
            if end is not None and not moves.big:
                self._keep_prefix(moves, removed, end + 1, removed_quota, memo)
            else:
                if removed:
                    moves.move(0, removed, 1)
                    memo.value = None
                self.state.quota_move(removed_quota, 1)
                if end is not None:
                    self._remove_all(infos[: end + 1], memo)

    def _keep_prefix(
        self,
        moves: RunMoves,
        removed: int,
        keep: int,
        removed_quota: list[WlInfo],
        memo: TasMemo,
    ) -> None:
        """From the bisection's last probe (``removed`` candidates out of
        the tables, ``removed_quota`` out of quota) to the first ``keep``
        out of both, as putting everything back and :meth:`_remove_all`
        of the prefix would leave them: quota usage is a function of the
        workloads counted (the propagation is exact in any order), and
        without saturating deltas (``moves.big``) the tables are exact
        int64 sums; ``running`` re-inserts the same keys in the same order
        (those of ``[keep, removed)``, in walk order).
        """
        infos = moves.seq
        if removed > keep:
            moves.move(keep, removed, 1)
        elif removed < keep:
            moves.move(removed, keep, -1)
        out = {id(info) for info in removed_quota}
        prefix = infos[:keep]
        inside = {id(info) for info in prefix}
        back = [info for info in removed_quota if id(info) not in inside]
        take = [info for info in prefix if id(info) not in out]
        self.state.quota_move(back, 1)
        self.state.quota_move(take, -1)
        memo.value = None

    # -- candidate collection ---------------------------------------------

    def _from_queue(
        self,
        wl: WlInfo,
        cq: ClusterQueue,
        queue: str,
        lca: QuotaNode | None,
        frs_need: frozenset[FR],
        advantage: bool,
    ) -> list[_Candidate]:
        """The queue's workloads the preemptor may evict, each with its
        variant: sharing a needed flavor-resource, allowed by the queue's
        policy.  What does not depend on the candidate is decided once: this
        loop runs over every running workload in every search of a large run."""
        running = self.state.running.get(queue)
        if not running:
            return []
        same = queue == wl.cq
        pre = cq.preemption
        policy = pre.within_cluster_queue if same else pre.reclaim_within_cohort
        if same:
            fixed: Variant | None = Variant.WITHIN_CQ
        elif advantage:
            fixed = Variant.HIERARCHICAL_RECLAIM
        elif borrow_forbidden(cq):
            fixed = Variant.RECLAIM_WITHOUT_BORROWING
        else:
            fixed = None
        pool = satisfying_policy(wl, running.values(), policy, frs_need)
        if fixed is not None:
            return [_Candidate(info, lca, fixed) for info in pool]
        out = []
        for info in pool:
            variant = (
                Variant.RECLAIM_WHILE_BORROWING
                if may_reclaim_while_borrowing(
                    pre.borrow_within_cohort, wl.priority, info.priority
                )
                else Variant.RECLAIM_WITHOUT_BORROWING
            )
            out.append(_Candidate(info, lca, variant))
        return out

    def _same_queue(
        self, wl: WlInfo, cq: ClusterQueue, frs_need: frozenset[FR]
    ) -> list[_Candidate]:
        if cq.preemption.within_cluster_queue == "Never":
            return []
        return self._from_queue(wl, cq, wl.cq, None, frs_need, False)

    def _fits_in(
        self, node: QuotaNode, requests: Mapping[FR, int]
    ) -> tuple[bool, dict[FR, int]]:
        """Kueue's QuantitiesFitInQuota: fits here, and what is left for above."""
        fits = True
        remaining = {}
        for fr, v in requests.items():
            if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + v:
                fits = False
            remaining[fr] = max(0, v - node.local_available(fr))
        return fits, remaining

    def _cohort_candidates(
        self,
        wl: WlInfo,
        cq: ClusterQueue,
        usage: Mapping[FR, int],
        frs_need: frozenset[FR],
    ) -> tuple[list[_Candidate], list[_Candidate]]:
        hierarchy: list[_Candidate] = []
        priority: list[_Candidate] = []
        node = self.quota.node(wl.cq)
        if node.parent is None or cq.preemption.reclaim_within_cohort == "Never":
            return hierarchy, priority
        advantage, remaining = self._fits_in(node, usage)
        previous: QuotaNode | None = None
        current: QuotaNode | None = node.parent
        while current is not None:
            target = hierarchy if advantage else priority
            self._collect(
                wl, cq, current, current, previous, advantage, frs_need, target
            )
            fits, remaining = self._fits_in(current, remaining)
            advantage = advantage or fits
            previous = current
            current = current.parent
        return hierarchy, priority

    def _collect(
        self,
        wl: WlInfo,
        cq: ClusterQueue,
        cohort: QuotaNode,
        root: QuotaNode,
        skip: QuotaNode | None,
        advantage: bool,
        frs_need: frozenset[FR],
        out: list[_Candidate],
    ) -> None:
        children = sorted(cohort.children, key=lambda c: c.id)
        for child in children:
            if not child.id.startswith("co:") or child is skip:
                continue
            if self.quota.within_nominal(child, frs_need):
                continue
            self._collect(wl, cq, child, root, skip, advantage, frs_need, out)
        for child in children:
            if not child.id.startswith("cq:") or child.id == cq_id(wl.cq):
                continue
            name = child.id[3:]
            if not self.snapshot.is_active(name):
                continue  # inactive queues are absent from Kueue's snapshot
            if not self.quota.within_nominal(child, frs_need):
                out.extend(self._from_queue(wl, cq, name, root, frs_need, advantage))

    # -- search --------------------------------------------------------------

    def _under_nominal(self, cq: str, frs_need: frozenset[FR]) -> bool:
        node = self.quota.node(cq)
        return all(node.nominal.get(fr, 0) > node.usage.get(fr, 0) for fr in frs_need)

    def _valid(
        self, wl: WlInfo, cand: _Candidate, borrowing: bool, frs_need: frozenset[FR]
    ) -> bool:
        if cand.info.cq == wl.cq:
            return True
        if borrowing and cand.variant is Variant.RECLAIM_WITHOUT_BORROWING:
            return False
        node: QuotaNode | None = self.quota.node(cand.info.cq)
        if node is not None and self.quota.within_nominal(node, frs_need):
            return False
        node = node.parent if node is not None else None
        while node is not None and node is not cand.lca:
            if self.quota.within_nominal(node, frs_need):
                return False
            node = node.parent
        return True
