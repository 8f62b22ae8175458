"""Moving runs of a preemption walk's candidates in and out of the TAS tables.

Kueue's remove-until-fit search (:mod:`.preemption`) looks for the first
prefix of its candidate list after which the preemptor's TAS placement
fits, by bisection: every probe moves a run of consecutive candidates
(``seq[a:b]``) out of or back into the capacity tables. At 10,000 hosts a
run is a few dozen workloads, so gathering and concatenating the runs'
table rows on every probe cost more than the table update itself. Here
the whole walk's rows are concatenated once per table, and a run is a slice.

The tables see exactly the update :meth:`ClusterState.move_many` would
make for the same run (same rows, same sums), so results are unchanged.
:class:`TasMemo` keeps the walk's last TAS verdict while the moves provably
keep it.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from itertools import accumulate

import numpy as np

from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.tas.tables import Prepared
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.workload import WlInfo


class _Table:
    """The prepared usages of one capacity table, in candidate order.

    Per usage: the candidate it belongs to, and running totals of table rows
    and of saturating usages, so that a run of candidates is two bisections
    and a slice of the rows, concatenated once.
    """

    def __init__(
        self, owner: FlavorTree | None, cands: list[int], items: list[Prepared]
    ) -> None:
        self.owner = owner
        self.items = items
        self.cand = cands
        self.big = any(p.big for p in items)
        self.keys: IntArray = np.concatenate([p.keys for p in items])
        self.delta: IntArray = np.concatenate([p.delta for p in items])
        self._ends: tuple[list[int], list[int]] | None = None
        self._whole: tuple[IntArray, IntArray] | None = None

    def whole(self) -> tuple[IntArray, IntArray]:
        """The whole walk's rows summed per key: (distinct keys, summed rows).

        Moved in one plain fancy-index update instead of an unbuffered
        ``np.add.at`` (and a sort for the touched keys) every time; int64
        sums wrap alike in any order, so the table ends up the same.
        """
        if self._whole is None:
            order = np.argsort(self.keys, kind="stable")
            keys = self.keys[order]
            starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
            summed = np.add.reduceat(self.delta[order], starts, axis=0)
            self._whole = (keys[starts], summed)
        return self._whole

    def ends(self) -> tuple[list[int], list[int]]:
        """Running totals of rows and of saturating usages, made on the
        first partial run (most walks are only ever moved whole)."""
        if self._ends is None:
            self._ends = (
                [0, *accumulate(len(p.keys) for p in self.items)],
                [0, *accumulate(int(p.big) for p in self.items)],
            )
        return self._ends


class RunMoves:
    """TAS (and ``running``) moves of candidate runs ``seq[a:b]``.

    Quota is left to the caller: the walk keeps every candidate it has
    judged removed from quota while it probes TAS fits.
    """

    def __init__(self, state: ClusterState, seq: Sequence[WlInfo]) -> None:
        self.state = state
        self.seq = seq
        grouped: dict[int, tuple[FlavorTree | None, list[int], list[Prepared]]] = {}
        prepared = state.prepared_usage
        # The group of the previous usage (most walks fill one group).
        last_key = 0
        cands: list[int] = []
        items: list[Prepared] = []
        for i, info in enumerate(seq):
            for t in info.tas:
                p = t.prepared
                if p is None:
                    p = prepared(t)
                if p.keys.size:
                    key = -1 if p.owner is None else id(p.owner)
                    if key != last_key or not items:
                        group = grouped.get(key)
                        if group is None:
                            group = grouped[key] = (p.owner, [], [])
                        last_key, cands, items = key, group[1], group[2]
                    cands.append(i)
                    items.append(p)
        self._tables = [_Table(*group) for group in grouped.values()]
        self.big = any(t.big for t in self._tables)
        """Some usage saturates: the tables' sums then depend on the order."""

    def freed(self) -> list[tuple[FlavorTree | None, IntArray, IntArray]]:
        """The whole walk's rows per table: (owner, distinct keys, summed)."""
        return [(t.owner, *t.whole()) for t in self._tables]

    def move(self, a: int, b: int, sign: int) -> None:
        """Remove (-1) or add back (1) candidates ``[a, b)``."""
        running = self.state.running
        if sign > 0:
            for info in self.seq[a:b]:
                running[info.cq][info.key] = info
        else:
            for info in self.seq[a:b]:
                running[info.cq].pop(info.key, None)
        tas = self.state.tas
        whole = a == 0 and b == len(self.seq)
        for table in self._tables:
            if whole:
                keys, summed = table.whole()
                tas.move_rows(table.owner, keys, summed, sign, table.big)
                continue
            i0, i1 = bisect_left(table.cand, a), bisect_left(table.cand, b)
            if i0 == i1:
                continue
            row_end, big_end = table.ends()
            big = big_end[i1] > big_end[i0]
            if i1 - i0 == 1 and table.items[i0].unique:
                p = table.items[i0]
                tas.move_rows(table.owner, p.keys, p.delta, sign, big)
                continue
            r0, r1 = row_end[i0], row_end[i1]
            tas.move_rows(
                table.owner,
                table.keys[r0:r1],
                table.delta[r0:r1],
                sign,
                big,
                unique=False,
            )


TasCheck = Callable[[], frozenset[str] | None]
"""Places the preemptor on the current state: the leaves it would use
(last domain value), or None when it does not fit."""


class TasMemo:
    """The last TAS verdict, kept while it provably holds.

    Kueue's placement succeeds iff some domain's capacity counts cover the
    request, and counts only grow with free capacity.  So freeing capacity
    (removing a victim) keeps a fit a fit, taking capacity (adding one back)
    keeps a misfit a misfit, and taking capacity only on leaves the last
    successful placement did not use keeps that placement, hence the fit.
    Only the other moves need a new placement.
    """

    def __init__(self, check: TasCheck) -> None:
        self.check = check
        self.value: bool | None = None
        self.used: frozenset[str] = frozenset()

    def __call__(self) -> bool:
        if self.value is None:
            used = self.check()
            self.value = used is not None
            self.used = used or frozenset()
        return self.value

    def freed(self, info: WlInfo) -> None:
        if info.tas and self.value is False:
            self.value = None

    def taken(self, info: WlInfo) -> None:
        if not info.tas or self.value is not True:
            return
        for t in info.tas:
            if not self.used.isdisjoint(t.leaves()):
                self.value = None
                return
