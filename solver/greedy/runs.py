"""Moving runs of a preemption walk's candidates in and out of the TAS tables.

Kueue's remove-until-fit search (:mod:`.preemption`) looks for the first
prefix of its candidate list after which the preemptor's TAS placement
fits, by bisection: every probe moves a run of consecutive candidates
(``seq[a:b]``) out of or back into the capacity tables. At 10,000 hosts a
run is a few dozen workloads, so gathering and concatenating the runs'
table rows on every probe cost more than the table update itself. Here
each candidate's rows are appended once, per table, and a run is a slice.

The tables see exactly the update :meth:`ClusterState.move_many` would
make for the same run (same rows, same sums), so results are unchanged.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import numpy as np

from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.tas.state import Prepared
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.workload import WlInfo


class _Table:
    """The prepared usages of one capacity table, in candidate order.

    Per usage: the candidate it belongs to, and running totals of table rows
    and of saturating usages, so that a run of candidates is two bisections.
    """

    def __init__(self, owner: FlavorTree | None) -> None:
        self.owner = owner
        self.items: list[Prepared] = []
        self.cand: list[int] = []
        self.row_end: list[int] = [0]
        self.big_end: list[int] = [0]
        self._keys = np.zeros(0, dtype=np.int64)
        self._delta: IntArray | None = None
        self._built = 0
        """Usages concatenated into ``_keys``/``_delta`` so far."""

    def add(self, cand: int, p: Prepared) -> None:
        self.items.append(p)
        self.cand.append(cand)
        self.row_end.append(self.row_end[-1] + len(p.keys))
        self.big_end.append(self.big_end[-1] + p.big)

    def rows(self, upto: int) -> tuple[IntArray, IntArray]:
        """Keys and deltas of the first ``upto`` usages, concatenated."""
        if self._built < upto:
            # Everything indexed so far: the walk only grows, so this
            # happens about once per extension of the walk.
            fresh = self.items[self._built :]
            self._keys = np.concatenate([self._keys, *(p.keys for p in fresh)])
            deltas = [p.delta for p in fresh]
            if self._delta is not None:
                deltas.insert(0, self._delta)
            self._delta = np.concatenate(deltas)
            self._built = len(self.items)
        assert self._delta is not None
        return self._keys, self._delta


class RunMoves:
    """TAS (and ``running``) moves of candidate runs ``seq[a:b]``.

    Quota is left to the caller: the walk keeps every candidate it has
    judged removed from quota while it probes TAS fits.
    """

    def __init__(self, state: ClusterState, seq: Sequence[WlInfo]) -> None:
        self.state = state
        self.seq = seq
        """The walk's candidates (indexed lazily, as far as moves reach)."""
        self._indexed = 0
        self._tables: dict[int, _Table] = {}

    def _index(self, upto: int) -> None:
        """Index the candidates before ``upto`` (only what a move needs)."""
        for i in range(self._indexed, upto):
            for p in self.state.prepared(self.seq[i]):
                if len(p.keys):
                    key = -1 if p.owner is None else id(p.owner)
                    table = self._tables.get(key)
                    if table is None:
                        table = self._tables[key] = _Table(p.owner)
                    table.add(i, p)
        self._indexed = max(self._indexed, upto)

    def move(self, a: int, b: int, sign: int) -> None:
        """Remove (-1) or add back (1) candidates ``[a, b)``."""
        self._index(b)
        running = self.state.running
        if sign > 0:
            for info in self.seq[a:b]:
                running[info.cq][info.key] = info
        else:
            for info in self.seq[a:b]:
                running[info.cq].pop(info.key, None)
        tas = self.state.tas
        for table in self._tables.values():
            i0, i1 = bisect_left(table.cand, a), bisect_left(table.cand, b)
            if i0 == i1:
                continue
            big = table.big_end[i1] > table.big_end[i0]
            if i1 - i0 == 1 and table.items[i0].unique:
                p = table.items[i0]
                tas.move_rows(table.owner, p.keys, p.delta, sign, big)
                continue
            keys, delta = table.rows(i1)
            r0, r1 = table.row_end[i0], table.row_end[i1]
            tas.move_rows(
                table.owner, keys[r0:r1], delta[r0:r1], sign, big, unique=False
            )
