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

Not modelled: pod-set groups with a leader (Kueue reserves leader capacity
during the threshold search); those keep the BestFit path.
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
    """Counters of the domains one candidate group touches (a clone in Kueue)."""

    pc: dict[tuple[int, int], int] = field(default_factory=dict)
    sc: dict[tuple[int, int], int] = field(default_factory=dict)


def _kids(tree: FlavorTree, level: int, d: int) -> range:
    if level >= tree.depth - 1:
        return range(0)
    lo, hi = tree.children(level, d)
    return range(lo, hi)


def _greedy(
    st: _State, level: int, doms: list[int], slices: int
) -> tuple[bool, int, int]:
    """``evaluateGreedyAssignment`` without a leader: fits, domains used,
    the last used domain's slices."""
    order = sorted(doms, key=lambda d: (-st.sc[level, d], st.pc[level, d], d))
    used, last, remaining = 0, 0, slices
    for d in order:
        if remaining <= 0 or st.sc[level, d] <= 0:
            break
        used += 1
        last = st.sc[level, d]
        remaining -= last
    return remaining <= 0, used, last


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
    slices: int,
    slice_size: int,
    by_entropy: bool,
) -> list[int] | None:
    """``selectOptimalDomainSetToFit`` without a leader: among sets of the
    greedy's size, the one leaving the fewest spare pods (first found)."""
    fits, n, _ = _greedy(st, level, doms, slices)
    if not fits:
        return None
    if by_entropy:
        ent = {d: _entropy(st, level, d, tree) for d in doms}
        ordered = sorted(doms, key=lambda d: (-st.sc[level, d], -ent[d], d))
    else:
        ordered = sorted(doms)
    table: list[dict[int, list[int]]] = [{} for _ in range(n + 1)]
    table[0][slices * slice_size] = []
    for d in ordered:
        if st.sc[level, d] <= 0:
            continue
        pods = st.pc[level, d]
        for i in range(n, 0, -1):
            for before in sorted(table[i - 1]):
                if before <= 0:
                    continue
                after = before - pods
                if after not in table[i]:
                    table[i][after] = [*table[i - 1][before], d]
    done = [k for k in table[n] if k <= 0]
    return table[n][max(done)] if done else None


def _prune(
    tree: FlavorTree,
    st: _State,
    level: int,
    doms: list[int],
    threshold: int,
    params: Params,
) -> None:
    """``pruneDomainsBelowThreshold``: children under the threshold lose all
    capacity, parents are recounted, then parents under it are cleared."""
    for d in doms:
        kids = _kids(tree, level, d)
        for c in kids:
            if st.sc[level + 1, c] < threshold:
                st.pc[level + 1, c] = st.sc[level + 1, c] = 0
        if kids:
            pods = sum(st.pc[level + 1, c] for c in kids)
            st.pc[level, d] = pods
            if level == params.slice_level:
                st.sc[level, d] = pods // params.slice_size
            elif level < params.slice_level:
                st.sc[level, d] = sum(st.sc[level + 1, c] for c in kids)
            else:
                st.sc[level, d] = 0
        if st.sc[level, d] < threshold:
            st.pc[level, d] = st.sc[level, d] = 0


def _load(counts: Counts, tree: FlavorTree, level: int, doms: list[int]) -> _State:
    st = _State()
    for d in doms:
        st.pc[level, d] = int(counts.pc[level][d])
        st.sc[level, d] = int(counts.sc[level][d])
        for c in _kids(tree, level, d):
            st.pc[level + 1, c] = int(counts.pc[level + 1][c])
            st.sc[level + 1, c] = int(counts.sc[level + 1][c])
    return st


def balanced_placement(
    tree: FlavorTree, counts: Counts, params: Params
) -> Taken | None:
    """The leaves' pods under balanced placement, or None for the BestFit path."""
    if params.required or params.unconstrained or params.leader_count > 0:
        return None
    req, sl, ss = params.requested_level, params.slice_level, params.slice_size
    slices = params.count // ss
    if req == 0:
        groups = [list(range(tree.sizes[0]))]
    else:
        groups = [list(_kids(tree, req - 1, p)) for p in range(tree.sizes[req - 1])]

    best_threshold, best_used = 0, 0
    best: tuple[_State, list[int]] | None = None
    for group in groups:
        st = _load(counts, tree, req, group)
        if req < sl:
            lower_level = req + 1
            lower = [c for d in group for c in _kids(tree, req, d)]
        else:
            lower_level, lower = req, group
        fits, used, last = _greedy(st, lower_level, lower, slices)
        if not fits:
            continue
        threshold = min(slices // used, last)
        if threshold < best_threshold:
            continue
        _prune(tree, st, req, group, threshold, params)
        fits, used_req, _ = _greedy(st, req, group, slices)
        if not fits:
            continue
        if threshold > best_threshold or used_req < best_used:
            best_threshold, best_used, best = threshold, used_req, (st, group)
    if best is None or best_threshold <= 0:
        return None
    st, fit = best

    level = req
    if req < sl:
        chosen = _optimal_set(tree, st, req, fit, slices, ss, by_entropy=True)
        if chosen is None:
            return None
        fit = [c for d in chosen for c in _kids(tree, req, d)]
        level = req + 1
    picked = _optimal_set(tree, st, level, fit, slices, ss, by_entropy=False)
    if picked is None or slices < len(picked) * best_threshold:
        return None
    # sortedDomainsWithLeader without a leader: slices desc, pods asc, values.
    picked.sort(key=lambda d: (-st.sc[level, d], st.pc[level, d], d))
    extra = slices - len(picked) * best_threshold
    taken = Taken([], [], [])
    for d in picked:
        more = min(st.sc[level, d] - best_threshold, extra) if extra > 0 else 0
        extra -= more
        taken.idx.append(d)
        taken.pods.append((best_threshold + more) * ss)
        taken.leaders.append(0)
    if extra > 0:
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
        for d, pods in zip(taken.idx, taken.pods, strict=True):
            if pods == 0:
                continue
            lo, hi = tree.children(level, d)
            kids = Cands.gather(counts, level + 1, np.arange(lo, hi, dtype=np.int64))
            kids = kids.take(np.lexsort((kids.idx, kids.pc, -kids.sc)))
            if size > 1:  # Kueue recounts slices in this level's unit
                kids.sc = kids.pc // size
                kids.scwl = kids.pcwl // size
            part = distribute(kids, pods, 0, size, fb, slices=size > 1)
            if part is None:
                return None
            merged.idx += part.idx
            merged.pods += part.pods
            merged.leaders += part.leaders
        taken = merged
        level += 1
    return taken
