"""Kueue's fill back (``preemption.go: fillBackWorkloads``) and the moves of
a preemption search's targets, the half of :class:`~.preemption.Preemptor`
that puts victims back while the preemptor still fits.

Split from :mod:`.preemption` (the candidate walk) to keep both readable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from placewise.solver.greedy.runs import TasMemo
from placewise.solver.greedy.slack import QuotaSlack
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.workload import WlInfo


@dataclass(frozen=True, slots=True)
class Target:
    info: WlInfo
    reason: str


class FillBack:
    """Fill back and target moves of :class:`~.preemption.Preemptor`."""

    state: ClusterState
    quota: QuotaTree
    _tas: bool
    """Whether moves touch the TAS tables (a quota-only simulation skips them)."""

    def _remove(self, info: WlInfo, memo: TasMemo | None) -> None:
        # Without a TAS check only quota matters: skip the capacity tables.
        self.state.remove(info, tas_too=self._tas)
        if memo is not None:
            memo.freed(info)

    def _remove_all(self, infos: list[WlInfo], memo: TasMemo | None) -> None:
        """:meth:`_remove` of each, with TAS in one table update."""
        if not self._tas:
            for info in infos:
                self._remove(info, memo)
            return
        self.state.move_many(infos, -1)
        if memo is not None:
            for info in infos:
                memo.freed(info)

    def _add(self, info: WlInfo, memo: TasMemo | None) -> None:
        self.state.add(info, tas_too=self._tas)
        if memo is not None:
            memo.taken(info)

    def fits(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        borrowing: bool,
        tas_fits: Callable[[], bool] | None,
    ) -> bool:
        for fr, v in usage.items():
            if not borrowing and self.quota.borrowing_with(wl.cq, fr, v):
                return False
            if v > self.quota.available(wl.cq, fr):
                return False
        return tas_fits is None or tas_fits()

    def _fill_back(
        self,
        wl: WlInfo,
        usage: Mapping[FR, int],
        borrowing: bool,
        tas_fits: Callable[[], bool] | None,
        targets: list[Target],
    ) -> list[Target]:
        """Add back all but the last target while the preemptor still fits.

        With a :class:`TasMemo`, a target's TAS rows go back into the tables
        only when a placement is needed (or at the end): most verdicts come
        from the memo, and the tables any placement reads are the same.
        """
        memo = tas_fits if isinstance(tas_fits, TasMemo) else None
        pending: list[WlInfo] = []
        """Back in quota, their TAS rows not yet in the tables."""
        owed: list[WlInfo] = []
        """Back in ``running`` while the margins promise the fit: their quota
        is added (summed per queue, the same tree) before the tree is read."""
        slack: QuotaSlack | None = None
        """Margins since the last quota fit (:mod:`.slack`)."""
        running = self.state.running
        i = len(targets) - 2
        while i >= 0:
            info = targets[i].info
            # Quota first: when it alone refuses (the common case), the TAS
            # tables are never touched, instead of moved in and out again.
            if slack is not None and slack.add(info):
                running[info.cq][info.key] = info
                owed.append(info)
            else:
                self._repay(owed)
                self.state.add(info, tas_too=False)
                if not self.fits(wl, usage, borrowing, None):
                    self.state.remove(info, tas_too=False)
                    slack = None
                    i -= 1
                    continue
                slack = QuotaSlack(self.quota, wl, usage, borrowing)
            if memo is None:
                if self._tas and info.tas:
                    self.state.tas.apply(self.state.prepared(info), 1)
                fits = tas_fits is None or tas_fits()
            else:
                if info.tas:
                    pending.append(info)
                memo.taken(info)
                if memo.value is None:
                    self._flush(pending)
                fits = memo()
            if fits:
                targets[i] = targets[-1]
                targets.pop()
            elif pending and pending[-1] is info:
                pending.pop()  # its rows never reached the tables
                self._take_back(info, owed, False)
                if memo is not None:
                    memo.freed(info)
            else:
                self._take_back(info, owed, self._tas)
                if memo is not None:
                    memo.freed(info)
            i -= 1
        self._repay(owed)
        self._flush(pending)
        return targets

    def _repay(self, owed: list[WlInfo]) -> None:
        """Add the owed quota of :meth:`_fill_back` to the tree (one change
        per queue: the same tree as the adds one by one)."""
        if owed:
            self.state.quota_move(owed, 1)
            owed.clear()

    def _take_back(self, info: WlInfo, owed: list[WlInfo], tas_too: bool) -> None:
        """:meth:`ClusterState.remove` of a target just put back, whose
        quota may still be owed (the last one owed, if so)."""
        if not owed or owed[-1] is not info:
            self.state.remove(info, tas_too=tas_too)
            return
        owed.pop()
        self.state.running[info.cq].pop(info.key, None)
        if tas_too and info.tas:
            self.state.tas.apply(self.state.prepared(info), -1)

    def _flush(self, pending: list[WlInfo]) -> None:
        """Put the pending targets' TAS rows into the tables: in one update
        unless a large delta makes the order of saturation matter."""
        if not pending:
            return
        rows = [p for info in pending for p in self.state.prepared(info)]
        if any(p.big for p in rows):
            for info in pending:
                self.state.tas.apply(self.state.prepared(info), 1)
        else:
            self.state.tas.apply(rows, 1)
        pending.clear()
