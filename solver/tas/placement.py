"""Phases 2a and 2b: choose the fitting domains, then walk down the tree.

A list of domains is a :class:`Cands` (parallel numpy arrays in list
order). Kueue's walks ("take domains in order until the remainder is
covered, the last one by best fit") become a cumulative sum plus one
vectorised best-fit search, so long lists cost no Python loop. Only the
leader steps, which touch one or two domains, run element by element.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from solver.tas.counts import Counts
from solver.tas.request import Params
from solver.tas.tree import FlavorTree, IntArray
from solver.tas.types import INT32_MAX

_MASKED = np.int64(1 << 62)


@dataclass(slots=True)
class Cands:
    """An ordered list of domains of one level with their phase-1 counters."""

    idx: IntArray
    pc: IntArray
    pcwl: IntArray
    sc: IntArray
    scwl: IntArray
    lc: IntArray

    @classmethod
    def gather(cls, counts: Counts, level: int, idx: IntArray) -> Cands:
        return cls(
            idx=idx,
            pc=counts.pc[level][idx],
            pcwl=counts.pcwl[level][idx],
            sc=counts.sc[level][idx],
            scwl=counts.scwl[level][idx],
            lc=counts.lc[level][idx],
        )

    def take(self, order: IntArray) -> Cands:
        return Cands(
            self.idx[order],
            self.pc[order],
            self.pcwl[order],
            self.sc[order],
            self.scwl[order],
            self.lc[order],
        )

    def __len__(self) -> int:
        return int(self.idx.shape[0])


@dataclass(slots=True)
class Taken:
    """Domains given pods at one level: index, worker pods, leaders."""

    idx: IntArray
    pods: IntArray
    leaders: IntArray


def sorted_domains(c: Cands, least_free: bool) -> Cands:
    """``sortedDomains``: slices (desc for BestFit), pods asc, value path."""
    return c.take(np.lexsort((c.idx, c.pc, c.sc if least_free else -c.sc)))


def sorted_with_leader(c: Cands, least_free: bool) -> Cands:
    """``sortedDomainsWithLeader``: leader capacity first, then *WithLeader keys."""
    keys = (c.idx, c.pcwl, c.scwl if least_free else -c.scwl, -c.lc)
    return c.take(np.lexsort(keys))


def best_fit(c: Cands, start: int, needed: int, leaders: int, slices: bool) -> int:
    """``findBestFitDomain*`` over ``c[start:]``: first tightest domain >= needed.

    Falls back to ``start`` when nothing fits, as Kueue keeps the list head.
    """
    if slices:
        counts = c.scwl if leaders > 0 else c.sc
    else:
        counts = c.pcwl if leaders > 0 else c.pc
    tail = counts[start:]
    ok = (tail >= needed) & (tail < INT32_MAX)
    if leaders > 0:
        ok &= c.lc[start:] >= leaders
    if not ok.any():
        return start
    return start + int(np.argmin(np.where(ok, tail, _MASKED)))


def prioritize_leader(
    c: Cands, count: int, leaders: int, slice_size: int, slices: bool
) -> Cands:
    """Move the first leader-capable domain whose leader penalty the list can
    absorb to the front, so later steps cannot strand the leader."""
    if leaders == 0 or len(c) < 2:
        return c
    if slices:
        required = count // slice_size
        available = int(c.sc.sum())
        penalty = c.sc - c.scwl
    else:
        required = count
        available = int(c.pc.sum())
        penalty = c.pc - c.pcwl
    ok = (c.lc >= leaders) & (available - penalty >= required)
    if not ok.any():
        return c
    first = int(np.argmax(ok))
    if first == 0:
        return c
    order = np.concatenate(([first], np.arange(first), np.arange(first + 1, len(c))))
    return c.take(order)


def distribute(
    c: Cands, count: int, leaders: int, slice_size: int, fit_best: bool, slices: bool
) -> Taken | None:
    """``updateCountsToMinimumGeneric``: spread ``count`` pods over ``c`` in order.

    Units are slices (``slices``) or pods. Leaders go first, each step using
    the with-leader capacity; then domains are taken whole until one covers
    the remainder, which BestFit replaces by the tightest later domain.
    Returns None where Kueue logs "code assumptions violated".
    """
    c = prioritize_leader(c, count, leaders, slice_size, slices)
    n = len(c)
    unit = slice_size if slices else 1
    remaining = count // slice_size if slices else count
    primary, with_leader = (c.sc, c.scwl) if slices else (c.pc, c.pcwl)
    idx: list[int] = []
    pods: list[int] = []
    lead: list[int] = []
    i = 0
    while leaders > 0 and i < n:
        pos = i
        if fit_best and with_leader[i] >= remaining and c.lc[i] >= leaders:
            pos = best_fit(c, i, remaining, leaders, slices)
        w, lc = int(with_leader[pos]), int(c.lc[pos])
        if w >= remaining and lc >= leaders:
            idx.append(int(c.idx[pos]))
            pods.append(remaining * unit)
            lead.append(leaders)
            return _taken(idx, pods, lead)
        w, lc = min(w, remaining), min(lc, leaders)
        idx.append(int(c.idx[pos]))
        pods.append(w * unit)
        lead.append(lc)
        leaders -= lc
        remaining -= w
        i += 1
    if leaders > 0 or i >= n:
        return None
    head = _taken(idx, pods, lead)
    # Whole domains while they do not cover the remainder, then the last one.
    cum = np.cumsum(primary[i:])
    k = int(np.searchsorted(cum, remaining, side="left"))
    if k == cum.shape[0]:
        return None
    need = remaining - (int(cum[k - 1]) if k else 0)
    last = best_fit(c, i + k, need, 0, slices) if fit_best else i + k
    whole = slice(i, i + k)
    return Taken(
        idx=np.concatenate((head.idx, c.idx[whole], [c.idx[last]])),
        pods=np.concatenate((head.pods, primary[whole] * unit, [need * unit])),
        leaders=np.concatenate((head.leaders, np.zeros(k + 1, dtype=np.int64))),
    )


def _taken(idx: list[int], pods: list[int], lead: list[int]) -> Taken:
    return Taken(
        np.asarray(idx, dtype=np.int64),
        np.asarray(pods, dtype=np.int64),
        np.asarray(lead, dtype=np.int64),
    )


FailReason = Callable[[int, int, int], str]
"""(level, fitting units, requested units) -> failure reason."""


def find_level(
    tree: FlavorTree, counts: Counts, params: Params, level: int, fail: FailReason
) -> tuple[int, Cands] | str:
    """``findLevelWithFitDomains``: the domains at (or above) ``level`` to use.

    One domain when one fits; otherwise ``preferred`` climbs a level, and at
    the top (or for unconstrained requests) domains are taken greedily.
    """
    while True:
        if tree.sizes[level] == 0:
            return f"no topology domains at level: {tree.levels[level]}"
        least_free = params.unconstrained
        c = sorted_with_leader(
            Cands.gather(counts, level, np.arange(tree.sizes[level])), least_free
        )
        leaders = params.leader_count
        slices = params.count // params.slice_size
        top = 0
        if params.best_fit and c.scwl[0] >= slices and c.lc[0] >= leaders:
            top = best_fit(c, 0, slices, leaders, slices=True)
        if least_free:
            cap = c.scwl if leaders > 0 else c.sc
            ok = (cap >= slices) & (c.lc >= leaders)
            if ok.any():
                return level, c.take(np.array([int(np.argmax(ok))]))
            if params.required:
                return fail(level, int(c.pc[-1]), slices)
        if c.scwl[top] >= slices and c.lc[top] >= leaders:
            return level, c.take(np.array([top]))
        if params.required:
            return fail(level, int(c.sc[top]), slices)
        if level > 0 and not params.unconstrained:
            level -= 1
            continue
        return _spread(c, params, level, fail)


def _spread(
    c: Cands, params: Params, level: int, fail: FailReason
) -> tuple[int, Cands] | str:
    """No single domain fits: leaders' domains first, then the rest in order."""
    slices = params.count // params.slice_size
    remaining, leaders = slices, params.leader_count
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


def _concat(a: Cands, b: Cands) -> Cands:
    return Cands(
        np.concatenate((a.idx, b.idx)),
        np.concatenate((a.pc, b.pc)),
        np.concatenate((a.pcwl, b.pcwl)),
        np.concatenate((a.sc, b.sc)),
        np.concatenate((a.scwl, b.scwl)),
        np.concatenate((a.lc, b.lc)),
    )


def children_of(tree: FlavorTree, level: int, idx: IntArray) -> IntArray:
    """Indices on ``level + 1`` of all children of ``idx``, parent by parent."""
    starts = tree.child_start[level]
    lo, hi = starts[idx], starts[idx + 1]
    if idx.shape[0] == 1:
        return np.arange(int(lo[0]), int(hi[0]), dtype=np.int64)
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
        parts: list[Taken] = []
        for d, pods, lead in zip(
            taken.idx.tolist(),
            taken.pods.tolist(),
            taken.leaders.tolist(),
            strict=True,
        ):
            if pods == 0 and lead == 0:
                continue  # would only add one empty child
            lo, hi = tree.children(level, d)
            kids = sorted_domains(
                Cands.gather(counts, level + 1, np.arange(lo, hi, dtype=np.int64)), lfc
            )
            if size > 1:  # inner layer: slice counters in the inner unit
                kids.sc = kids.pc // size
                kids.scwl = kids.pcwl // size
            part = distribute(kids, pods, lead, size, fb, slices=size > 1)
            if part is None:
                return None
            parts.append(part)
        taken = Taken(
            np.concatenate([p.idx for p in parts] or [np.zeros(0, np.int64)]),
            np.concatenate([p.pods for p in parts] or [np.zeros(0, np.int64)]),
            np.concatenate([p.leaders for p in parts] or [np.zeros(0, np.int64)]),
        )
        level += 1
    return taken
