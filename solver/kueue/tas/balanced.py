"""Kueue's TASBalancedPlacement (alpha gate, off by default).

For a ``preferred`` request (not required, not unconstrained), Kueue first
tries to spread the slices *evenly* over the fewest domains one level above
the slice level, instead of packing them BestFit (``tas_balanced_placement.go``):

1. Candidate groups: the requested level's domains under each domain one
   level up (all top-level domains when the requested level is the top).
2. Per group, a greedy walk over the domains the slices go to (the
   requested level's children when it is above the slice level) gives the
   number of domains used, and the balance threshold: the slices per domain
   (``slices // used``), capped by the last used domain's capacity.
3. Domains below the threshold are pruned (children first, then the
   group's domain, counts recomputed); the group still has to fit. The
   highest threshold wins, then the fewest requested-level domains, then
   the first group in value order.
4. Above the slice level the requested-level domains are chosen by a
   dynamic programme (fewest domains, then least spare pods; ties by
   capacity, then entropy of the children's pods, then value order), and
   the slices go one level down.
5. The same programme picks the slice-level domains; each gets the
   threshold, and the remainder tops up domains in Kueue's leader order.
6. Each chosen domain's pods are then distributed down its own subtree.

Any failure falls back to the ordinary BestFit path, as Kueue does.

A leader (a pod-set group's one-pod pod set) goes first: leader-capable
domains are taken first in every walk, the threshold may be lowered once so
that the leader's domain keeps room, and domains below the threshold with
the leader lose only their leader capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from placewise.solver.kueue.tas.counts import Counts
from placewise.solver.kueue.tas.distribute import Cands, Taken, distribute
from placewise.solver.kueue.tas.request import Params
from placewise.solver.kueue.tas.tree import FlavorTree


@dataclass(slots=True)
class _State:
    """Counters of the domains one candidate group touches (a clone in Kueue),
    keyed by (level, domain)."""

    pc: dict[tuple[int, int], int] = field(default_factory=dict)
    pcwl: dict[tuple[int, int], int] = field(default_factory=dict)
    sc: dict[tuple[int, int], int] = field(default_factory=dict)
    scwl: dict[tuple[int, int], int] = field(default_factory=dict)
    lc: dict[tuple[int, int], int] = field(default_factory=dict)

    def clear(self, key: tuple[int, int], leader_only: bool = False) -> None:
        self.pcwl[key] = self.scwl[key] = self.lc[key] = 0
        if not leader_only:
            self.pc[key] = self.sc[key] = 0

    def cands(self, level: int, doms: list[int]) -> Cands:
        def arr(t: dict[tuple[int, int], int]) -> np.ndarray:
            return np.asarray([t[level, d] for d in doms], dtype=np.int64)

        return Cands(
            np.asarray(doms, dtype=np.int64),
            arr(self.pc),
            arr(self.pcwl),
            arr(self.sc),
            arr(self.scwl),
            arr(self.lc),
        )


def _kids(tree: FlavorTree, level: int, d: int) -> range:
    if level >= tree.depth - 1:
        return range(0)
    lo, hi = tree.children(level, d)
    return range(lo, hi)


def _with_leader_order(st: _State, level: int, doms: list[int]) -> list[int]:
    """``sortedDomainsWithLeader`` (BestFit)."""
    return sorted(
        doms,
        key=lambda d: (
            -st.lc[level, d],
            -st.scwl[level, d],
            st.pcwl[level, d],
            d,
        ),
    )


def _greedy(
    st: _State, level: int, doms: list[int], slices: int, leaders: int
) -> tuple[bool, int, int | None, int | None]:
    """``evaluateGreedyAssignment``: fits, domains used, the last domain used
    for a leader and the last one used without."""
    used, remaining = 0, slices
    last_lead: int | None = None
    last: int | None = None
    rest = doms
    if leaders > 0:
        order = _with_leader_order(st, level, doms)
        i = 0
        while leaders > 0 and i < len(order) and st.lc[level, order[i]] > 0:
            d = order[i]
            used += 1
            last_lead = d
            leaders -= st.lc[level, d]
            remaining -= st.scwl[level, d]
            i += 1
        rest = order[i:]
        if leaders > 0:
            return False, 0, None, None
    for d in sorted(rest, key=lambda d: (-st.sc[level, d], st.pc[level, d], d)):
        if remaining <= 0 or st.sc[level, d] <= 0:
            break
        used += 1
        last = d
        remaining -= st.sc[level, d]
    if remaining > 0:
        return False, 0, None, None
    return True, used, last_lead, last


def _entropy(st: _State, level: int, d: int, tree: FlavorTree) -> float:
    pods = [st.pc[level + 1, c] for c in _kids(tree, level, d)]
    total = sum(pods)
    if total == 0:
        return 0.0
    return sum(-(p / total) * math.log2(p / total) for p in pods if p > 0)


def _optimal_set(
    tree: FlavorTree,
    st: _State,
    level: int,
    doms: list[int],
    params: Params,
    by_entropy: bool,
) -> list[int] | None:
    """``selectOptimalDomainSetToFit``: among sets of the greedy's size that
    host the leaders, the one leaving the fewest spare pods (first found)."""
    slices, leaders = params.count // params.slice_size, params.leader_count
    fits, n, _, _ = _greedy(st, level, doms, slices, leaders)
    if not fits:
        return None
    if by_entropy:
        ent = {d: _entropy(st, level, d, tree) for d in doms}
        ordered = sorted(
            doms,
            key=lambda d: (-st.lc[level, d], -st.scwl[level, d], -ent[d], d),
        )
    else:
        ordered = sorted(doms)
    # table[i][leaders left][pods left] = the first set of i domains found.
    table: list[dict[int, dict[int, list[int]]]] = [{} for _ in range(n + 1)]
    table[0][leaders] = {slices * params.slice_size: []}
    for d in ordered:
        key = (level, d)
        for i in range(n, 0, -1):
            prev = table[i - 1]
            for lead in sorted(prev):
                for pods in sorted(prev[lead]):
                    if lead <= 0 and pods <= 0:
                        continue
                    chosen = [*prev[lead][pods], d]
                    if lead > 0 and st.lc[key] > 0:
                        after = table[i].setdefault(lead - st.lc[key], {})
                        after.setdefault(pods - st.pcwl[key], chosen)
                    if st.sc[key] > 0:
                        after = table[i].setdefault(lead, {})
                        after.setdefault(pods - st.pc[key], chosen)
    done = table[n].get(0, {})
    left = [k for k in done if k <= 0]
    return done[max(left)] if left else None


def _prune_node(st: _State, key: tuple[int, int], threshold: int, lead: bool) -> None:
    if st.sc[key] < threshold:
        st.clear(key)
    elif lead and st.lc[key] > 0 and st.scwl[key] < threshold:
        # Still usable for workers, not as the leader's host.
        st.clear(key, leader_only=True)


def _prune(
    tree: FlavorTree,
    st: _State,
    level: int,
    doms: list[int],
    threshold: int,
    params: Params,
) -> None:
    """``pruneDomainsBelowThreshold``: children under the threshold lose all
    capacity (or only the leader's), parents are recounted as
    ``fillInCountsHelper`` does, then parents are pruned the same way."""
    lead = params.leader_count > 0
    ss = params.slice_size
    for d in doms:
        kids = [(level + 1, c) for c in _kids(tree, level, d)]
        for k in kids:
            _prune_node(st, k, threshold, lead)
        key = (level, d)
        if kids:
            pods = sum(st.pc[k] for k in kids)
            slices = sum(st.sc[k] for k in kids)
            hosts = [k for k in kids if not lead or st.lc[k] > 0]
            if hosts:
                pcwl = pods - min(st.pc[k] - st.pcwl[k] for k in hosts)
                scwl = slices - min(st.sc[k] - st.scwl[k] for k in hosts)
            else:
                pcwl = scwl = 0
            st.pc[key], st.pcwl[key] = pods, pcwl
            st.lc[key] = max(st.lc[k] for k in kids)
            if level == params.slice_level:
                st.sc[key], st.scwl[key] = pods // ss, pcwl // ss
            else:
                st.sc[key], st.scwl[key] = slices, scwl
        _prune_node(st, key, threshold, lead)


def _load(counts: Counts, tree: FlavorTree, level: int, doms: list[int]) -> _State:
    st = _State()
    for d in doms:
        for lvl, dom in [(level, d), *((level + 1, c) for c in _kids(tree, level, d))]:
            key = (lvl, dom)
            st.pc[key] = int(counts.pc[lvl][dom])
            st.pcwl[key] = int(counts.pcwl[lvl][dom])
            st.sc[key] = int(counts.sc[lvl][dom])
            st.scwl[key] = int(counts.scwl[lvl][dom])
            st.lc[key] = int(counts.lc[lvl][dom])
    return st


def _group_threshold(
    tree: FlavorTree,
    counts: Counts,
    params: Params,
    group: list[int],
    best: int,
) -> tuple[int, int, _State] | None:
    """One candidate group: (threshold, requested-level domains, pruned
    state), or None when it cannot beat ``best`` or does not fit."""
    req, leaders = params.requested_level, params.leader_count
    slices = params.count // params.slice_size
    st = _load(counts, tree, req, group)
    if req < params.slice_level:
        lower_level = req + 1
        lower = [c for d in group for c in _kids(tree, req, d)]
    else:
        lower_level, lower = req, group
    fits, used, last_lead, last = _greedy(st, lower_level, lower, slices, leaders)
    if not fits:
        return None
    threshold = slices // used
    if last_lead is not None:
        threshold = min(threshold, st.scwl[lower_level, last_lead])
    if last is not None:
        threshold = min(threshold, st.sc[lower_level, last])
    reserved = threshold
    if leaders > 0 and last is not None:
        reserved = min(threshold, st.scwl[lower_level, last])
    if threshold < best:
        return None
    _prune(tree, st, req, group, threshold, params)
    fits, used_req, _, _ = _greedy(st, req, group, slices, leaders)
    if not fits and reserved < threshold:
        # Retry with a lower threshold that keeps room for the leader.
        if reserved <= 0 or reserved < best:
            return None
        threshold = reserved
        st = _load(counts, tree, req, group)
        _prune(tree, st, req, group, threshold, params)
        fits, used_req, _, _ = _greedy(st, req, group, slices, leaders)
    if not fits:
        return None
    return threshold, used_req, st


def balanced_placement(
    tree: FlavorTree, counts: Counts, params: Params
) -> Taken | None:
    """The leaves' pods under balanced placement, or None for the BestFit path."""
    if params.required or params.unconstrained:
        return None
    req, sl, ss = params.requested_level, params.slice_level, params.slice_size
    slices, leaders = params.count // ss, params.leader_count
    if req == 0:
        groups = [list(range(tree.sizes[0]))]
    else:
        groups = [list(_kids(tree, req - 1, p)) for p in range(tree.sizes[req - 1])]

    best_threshold, best_used = 0, 0
    best: tuple[_State, list[int]] | None = None
    for group in groups:
        found = _group_threshold(tree, counts, params, group, best_threshold)
        if found is None:
            continue
        threshold, used_req, st = found
        if threshold > best_threshold or used_req < best_used:
            best_threshold, best_used, best = threshold, used_req, (st, group)
    if best is None or best_threshold <= 0:
        return None
    st, fit = best

    level = req
    if req < sl:
        chosen = _optimal_set(tree, st, req, fit, params, by_entropy=True)
        if chosen is None:
            return None
        fit = [c for d in chosen for c in _kids(tree, req, d)]
        level = req + 1
    picked = _optimal_set(tree, st, level, fit, params, by_entropy=False)
    if picked is None or slices < len(picked) * best_threshold:
        return None
    picked = _with_leader_order(st, level, picked)
    extra = slices - len(picked) * best_threshold
    for d in picked:
        key = (level, d)
        if leaders > 0:
            more = min(st.scwl[key] - best_threshold, extra)
            st.lc[key] = 1
            leaders -= 1
        elif extra > 0:
            more = min(st.sc[key] - best_threshold, extra)
            st.lc[key] = 0
        else:
            more = 0
            st.lc[key] = 0
        st.sc[key] = st.scwl[key] = best_threshold + more
        st.pc[key] = st.sc[key] * ss
        st.pcwl[key] = st.pc[key] - st.lc[key]
        extra -= more
    if extra > 0 or leaders > 0:
        return None
    taken = distribute(
        st.cands(level, picked),
        params.count,
        params.leader_count,
        ss,
        params.best_fit,
        slices=True,
    )
    if taken is None:
        return None
    return _descend_each(tree, counts, params, level, taken)


def _descend_each(
    tree: FlavorTree, counts: Counts, params: Params, level: int, taken: Taken
) -> Taken | None:
    """Phase 2b from the balanced level: every domain spreads its own pods
    over its children (in slices above the slice level, inner-slice units or
    pods below it)."""
    fb = params.best_fit
    while level < tree.depth - 1:
        if level < params.slice_level:
            size = params.slice_size
        else:
            size = params.inner_sizes.get(level + 1, 1)
        merged = Taken([], [], [])
        for d, pods, lead in zip(taken.idx, taken.pods, taken.leaders, strict=True):
            if pods == 0 and lead == 0:
                continue
            lo, hi = tree.children(level, d)
            kids = Cands.gather(counts, level + 1, np.arange(lo, hi, dtype=np.int64))
            kids = kids.take(np.lexsort((kids.idx, kids.pc, -kids.sc)))
            if size > 1:  # Kueue recounts slices in this level's unit
                kids.sc = kids.pc // size
                kids.scwl = kids.pcwl // size
            part = distribute(kids, pods, lead, size, fb, slices=size > 1)
            if part is None:
                return None
            merged.idx += part.idx
            merged.pods += part.pods
            merged.leaders += part.leaders
        taken = merged
        level += 1
    return taken
