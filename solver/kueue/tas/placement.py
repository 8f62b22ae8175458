"""Phases 2a and 2b: choose the fitting domains, then walk down the tree.

Level choice needs one domain out of possibly thousands, so it finds the
head of Kueue's sort order without sorting; only a multi-domain spread
sorts, and only the domains that can contribute.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placewise.solver.kueue.tas.counts import Counts
from placewise.solver.kueue.tas.distribute import (
    Cands,
    Taken,
    best_fit,
    distribute,
    prioritize_leader,
    sorted_domains,
    sorted_with_leader,
)
from placewise.solver.kueue.tas.request import Params
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.tas.types import INT32_MAX

FailReason = Callable[[int, int, int], str]
"""(level, fitting units, requested units) -> failure reason."""


Keys = list[tuple[IntArray, bool]]
"""Sort keys, primary first, each with "descending"; the index breaks ties."""


def lex_first(sel: IntArray | None, keys: Keys, last: bool = False) -> int:
    """Index of the first (or last) domain of ``sel`` in the order of ``keys``.

    Equivalent to sorting and taking one end, in O(n) per key instead of a
    full sort: level choice needs one domain, not the order of thousands.
    """
    for values, desc in keys:
        if sel is None:
            pick = values.max() if desc != last else values.min()
            sel = np.flatnonzero(values == pick)
        else:
            if sel.shape[0] == 1:
                break
            v = values[sel]
            sel = sel[v == (v.max() if desc != last else v.min())]
    assert sel is not None
    return int(sel[-1] if last else sel[0])


def find_level(
    tree: FlavorTree, counts: Counts, params: Params, level: int, fail: FailReason
) -> tuple[int, Cands] | str:
    """``findLevelWithFitDomains``: the domains at (or above) ``level`` to use.

    One domain when one fits; otherwise ``preferred`` climbs a level, and at
    the top (or for unconstrained requests) domains are taken greedily.
    Positions in ``sortedDomainsWithLeader`` order are found without sorting.
    """
    least_free = params.unconstrained
    leaders = params.leader_count
    slices = params.count // params.slice_size
    while True:
        if tree.sizes[level] == 0:
            return f"no topology domains at level: {tree.levels[level]}"
        lc, sc, scwl = counts.lc[level], counts.sc[level], counts.scwl[level]
        if leaders == 0 and not least_free and sc is scwl is counts.pcwl[level]:
            tight = _tightest(sc, slices)
            if tight is not None:
                return level, Cands.gather(counts, level, np.array([tight]))
        keys: Keys = [(scwl, not least_free), (counts.pcwl[level], False)]
        if leaders > 0:
            # Without a leader every leader count is 0: that key (and the
            # leader condition) would only cost two passes over the level.
            keys.insert(0, (lc, True))
        top = lex_first(None, keys)
        if params.best_fit and scwl[top] >= slices and lc[top] >= leaders:
            cnt = scwl if leaders > 0 else sc
            ok = (cnt >= slices) & (cnt < INT32_MAX)
            if leaders > 0:
                ok &= lc >= leaders
            if ok.any():
                tightest = cnt[ok].min()
                top = lex_first(np.flatnonzero(ok & (cnt == tightest)), keys)
        if least_free:
            cap = scwl if leaders > 0 else sc
            ok = cap >= slices
            if leaders > 0:
                ok &= lc >= leaders
            if ok.any():
                first = lex_first(np.flatnonzero(ok), keys)
                return level, Cands.gather(counts, level, np.array([first]))
            if params.required:
                return fail(
                    level, int(counts.pc[level][lex_first(None, keys, True)]), slices
                )
        if scwl[top] >= slices and lc[top] >= leaders:
            return level, Cands.gather(counts, level, np.array([top]))
        if params.required:
            return fail(level, int(sc[top]), slices)
        if level > 0 and not params.unconstrained:
            level -= 1
            continue
        return _spread(counts, level, params, fail)


def _tightest(cnt: IntArray, slices: int) -> int | None:
    """BestFit's domain when every counter of the level is ``cnt`` and no
    leader is placed (the general walk below, in a few passes): the first
    of the tightest domains that fit, the first of the largest if none
    fits below the int32 ceiling; None when no domain fits."""
    if int(cnt.max()) < slices:
        return None
    ok = (cnt >= slices) & (cnt < INT32_MAX)
    pick = int(np.where(ok, cnt, INT32_MAX).argmin())
    return pick if ok[pick] else int(cnt.argmax())


def _spread(
    counts: Counts, level: int, params: Params, fail: FailReason
) -> tuple[int, Cands] | str:
    """No single domain fits: leaders' domains first, then the rest in order.

    Domains without slice capacity or leader room change nothing in a
    spread, so they are left out before sorting.
    """
    slices = params.count // params.slice_size
    remaining, leaders = slices, params.leader_count
    sc, lc = counts.sc[level], counts.lc[level]
    if leaders == 0:
        total = int(sc.sum())
        if total < slices:  # the walk would take everything and fall short
            return fail(level, total, slices)
        if params.unconstrained:
            return level, _least_free_prefix(counts, level, slices)
    useful = np.flatnonzero((sc > 0) | (lc > 0))
    c = sorted_with_leader(Cands.gather(counts, level, useful), params.unconstrained)
    c = prioritize_leader(c, params.count, leaders, params.slice_size, True)
    chosen: list[int] = []
    i = 0
    while leaders > 0 and i < len(c) and c.lc[i] > 0:
        pos = i
        if params.best_fit and c.scwl[i] >= remaining:
            pos = best_fit(c, i, remaining, leaders, slices=True)
        chosen.append(pos)
        leaders -= int(c.lc[pos])
        remaining -= int(c.scwl[pos])
        i += 1
    if leaders > 0:
        return fail(level, params.leader_count - leaders, slices)
    head = c.take(np.asarray(chosen, dtype=np.int64))
    rest = sorted_domains(c.take(np.arange(i, len(c))), params.unconstrained)
    if remaining > 0:
        cum = np.cumsum(rest.sc)
        k = int(np.searchsorted(cum, remaining, side="left"))
        if k == cum.shape[0]:
            got = int(cum[-1]) if k else 0
            return fail(level, slices - (remaining - got), slices)
        need = remaining - (int(cum[k - 1]) if k else 0)
        last = best_fit(rest, k, need, 0, slices=True) if params.best_fit else k
        picked = np.concatenate((np.arange(k), [last])).astype(np.int64)
        head = _concat(head, rest.take(picked))
    return level, head


def _least_free_prefix(counts: Counts, level: int, slices: int) -> Cands:
    """The LeastFreeCapacity walk's result without sorting every domain.

    The walk takes domains by ascending slice capacity (then pods, then
    value path) until ``slices`` are covered: all domains below some
    capacity ``t`` and the first few at ``t``. Only those are sorted.
    """
    sc, pc = counts.sc[level], counts.pc[level]
    useful = np.flatnonzero(sc > 0)
    vals = sc[useful]
    ascending = np.sort(vals)
    t = int(ascending[int(np.searchsorted(np.cumsum(ascending), slices))])
    below = useful[vals < t]
    at_t = useful[vals == t]
    wanted = -(-(slices - int(sc[below].sum())) // t)
    if wanted < at_t.shape[0]:
        key = pc[at_t] * np.int64(sc.shape[0]) + at_t
        at_t = at_t[np.argpartition(key, wanted - 1)[:wanted]]
    chosen = Cands.gather(counts, level, np.concatenate((below, at_t)))
    return sorted_domains(chosen, True)


def _concat(a: Cands, b: Cands) -> Cands:
    return Cands(
        np.concatenate((a.idx, b.idx)),
        np.concatenate((a.pc, b.pc)),
        np.concatenate((a.pcwl, b.pcwl)),
        np.concatenate((a.sc, b.sc)),
        np.concatenate((a.scwl, b.scwl)),
        np.concatenate((a.lc, b.lc)),
    )


def children_of(tree: FlavorTree, level: int, idx: list[int]) -> IntArray:
    """Indices on ``level + 1`` of all children of ``idx``, parent by parent."""
    starts = tree.child_start[level]
    if len(idx) == 1:
        return np.arange(int(starts[idx[0]]), int(starts[idx[0] + 1]), dtype=np.int64)
    parents = np.asarray(idx, dtype=np.int64)
    lo, hi = starts[parents], starts[parents + 1]
    sizes = hi - lo
    offsets = np.repeat(lo - np.cumsum(sizes) + sizes, sizes)
    return offsets + np.arange(int(sizes.sum()), dtype=np.int64)


def descend(
    tree: FlavorTree, counts: Counts, params: Params, level: int, fit: Cands
) -> Taken | None:
    """Phase 2b: from the fit level down to the leaves.

    Above the slice level the children of all chosen domains are pooled and
    the whole count is spread again (parents' shares are not kept); from the
    slice level down each domain spreads exactly its own pods over its
    children, in inner-slice units where an inner layer applies.
    """
    lfc, fb = params.unconstrained, params.best_fit
    count, leaders, ss = params.count, params.leader_count, params.slice_size
    taken = distribute(fit, count, leaders, ss, fb, slices=True)
    if taken is None:
        return None
    last = tree.depth - 1
    while level < min(last, params.slice_level):
        pooled = Cands.gather(counts, level + 1, children_of(tree, level, taken.idx))
        taken = distribute(sorted_domains(pooled, lfc), count, leaders, ss, fb, True)
        if taken is None:
            return None
        level += 1
    while level < last:
        size = params.inner_sizes.get(level + 1, 1)
        merged = Taken([], [], [])
        for d, pods, lead in zip(taken.idx, taken.pods, taken.leaders, strict=True):
            if pods == 0 and lead == 0:
                continue  # would only add one empty child
            lo, hi = tree.children(level, d)
            kids = Cands.gather(counts, level + 1, np.arange(lo, hi, dtype=np.int64))
            kids = sorted_domains(kids, lfc)
            if size > 1:  # inner layer: slice counters in the inner unit
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
