"""Kueue's walk over an ordered domain list (``updateCountsToMinimumGeneric``).

A list of domains is a :class:`Cands` (parallel numpy arrays in list
order). Short lists, the usual case in a descent, are walked in plain
Python, where a handful of list operations beat numpy's per-call cost;
long ones become a cumulative sum plus one vectorised best-fit search.
Both paths implement the same rules and are tested against each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placewise.solver.kueue.tas.counts import Counts
from placewise.solver.kueue.tas.tree import IntArray
from placewise.solver.kueue.tas.types import INT32_MAX

SMALL = 48
"""Lists up to this length take the pure-Python path."""

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

    idx: list[int]
    pods: list[int]
    leaders: list[int]


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
    if len(c) <= SMALL:
        return _distribute_small(c, count, leaders, slice_size, fit_best, slices)
    c = prioritize_leader(c, count, leaders, slice_size, slices)
    n = len(c)
    unit = slice_size if slices else 1
    remaining = count // slice_size if slices else count
    primary, with_leader = (c.sc, c.scwl) if slices else (c.pc, c.pcwl)
    out = Taken([], [], [])
    i = 0
    while leaders > 0 and i < n:
        pos = i
        if fit_best and with_leader[i] >= remaining and c.lc[i] >= leaders:
            pos = best_fit(c, i, remaining, leaders, slices)
        w, lc = int(with_leader[pos]), int(c.lc[pos])
        out.idx.append(int(c.idx[pos]))
        if w >= remaining and lc >= leaders:
            out.pods.append(remaining * unit)
            out.leaders.append(leaders)
            return out
        w, lc = min(w, remaining), min(lc, leaders)
        out.pods.append(w * unit)
        out.leaders.append(lc)
        leaders -= lc
        remaining -= w
        i += 1
    if leaders > 0:
        return None
    # Whole domains while they do not cover the remainder, then the last one.
    cum = np.cumsum(primary[i:])
    k = int(np.searchsorted(cum, remaining, side="left"))
    if k == cum.shape[0]:
        return None
    need = remaining - (int(cum[k - 1]) if k else 0)
    last = best_fit(c, i + k, need, 0, slices) if fit_best else i + k
    out.idx += [*c.idx[i : i + k].tolist(), int(c.idx[last])]
    out.pods += [*(primary[i : i + k] * unit).tolist(), need * unit]
    out.leaders += [0] * (k + 1)
    return out


def _distribute_small(
    c: Cands, count: int, leaders: int, slice_size: int, fit_best: bool, slices: bool
) -> Taken | None:
    """The same walk as :func:`distribute`, element by element."""
    idx, lc = c.idx.tolist(), c.lc.tolist()
    if slices:
        prim, wl = c.sc.tolist(), c.scwl.tolist()
    else:
        prim, wl = c.pc.tolist(), c.pcwl.tolist()
    n = len(idx)
    if leaders and n >= 2:
        # prioritizeLeaderDomain on the unit being distributed.
        required = count // slice_size if slices else count
        available = sum(prim)
        for j in range(n):
            if lc[j] >= leaders and available - (prim[j] - wl[j]) >= required:
                if j:
                    order = [j, *range(j), *range(j + 1, n)]
                    idx = [idx[o] for o in order]
                    lc = [lc[o] for o in order]
                    prim = [prim[o] for o in order]
                    wl = [wl[o] for o in order]
                break

    def tightest(start: int, needed: int, lead: int) -> int:
        counts = wl if lead > 0 else prim
        best, best_count = start, INT32_MAX
        for j in range(start, n):
            if lc[j] >= lead and needed <= counts[j] < best_count:
                best, best_count = j, counts[j]
        return best

    unit = slice_size if slices else 1
    remaining = count // slice_size if slices else count
    out = Taken([], [], [])
    i = 0
    while leaders > 0 and i < n:
        pos = i
        if fit_best and wl[i] >= remaining and lc[i] >= leaders:
            pos = tightest(i, remaining, leaders)
        w, ld = wl[pos], lc[pos]
        out.idx.append(idx[pos])
        if w >= remaining and ld >= leaders:
            out.pods.append(remaining * unit)
            out.leaders.append(leaders)
            return out
        w, ld = min(w, remaining), min(ld, leaders)
        out.pods.append(w * unit)
        out.leaders.append(ld)
        leaders -= ld
        remaining -= w
        i += 1
    if leaders > 0:
        return None
    for j in range(i, n):
        if prim[j] >= remaining:
            pos = tightest(j, remaining, 0) if fit_best else j
            out.idx.append(idx[pos])
            out.pods.append(remaining * unit)
            out.leaders.append(0)
            return out
        out.idx.append(idx[j])
        out.pods.append(prim[j] * unit)
        out.leaders.append(0)
        remaining -= prim[j]
    return None
