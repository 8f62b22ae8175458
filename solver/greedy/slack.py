"""How much quota a preemptor could still give up and keep fitting.

Kueue's fill back (``preemption.go: fillBackWorkloads``) adds the chosen
victims back one by one, each time asking whether the preemptor still fits;
at 10,000 hosts a walk keeps a hundred victims or more, nearly all of which
go back, and each question walks the cohort tree per flavor-resource.

Adding ``u`` of usage to any queue lowers another queue's available
quota by at most ``u``: the add walks up from its queue, each ancestor
taking at most what its child passed on, and at every node of the
preemptor's path ``available`` is the local remainder plus what the parent
offers (capped by the borrowing limit), each part falling by at most what
that node's usage, or its parent's, rose by. Its own usage, read by the
borrowing test, rises only by usage added to its own queue. So after a
successful check, the fit holds for as long as the usage added since stays
within those margins; only then is the tree walked again.
"""

from __future__ import annotations

from collections.abc import Mapping

from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.workload import WlInfo


class QuotaSlack:
    """Lower bounds on the preemptor's margins since its last fit."""

    def __init__(
        self, quota: QuotaTree, wl: WlInfo, usage: Mapping[FR, int], borrowing: bool
    ) -> None:
        node = quota.node(wl.cq)
        self.cq = wl.cq
        self.available = {fr: quota.available(wl.cq, fr) - v for fr, v in usage.items()}
        """available - need, per flavor-resource (fits while all >= 0)."""
        self.own: dict[FR, int] = {}
        """nominal subtree - usage - need (not borrowing while all >= 0)."""
        if not borrowing:
            self.own = {
                fr: node.subtree.get(fr, 0) - node.usage.get(fr, 0) - v
                for fr, v in usage.items()
            }

    def add(self, info: WlInfo) -> bool:
        """Count ``info``'s usage as added; whether the fit is still certain."""
        # One pass per table, updating in place (the keys stay the same).
        usage = info.usage
        certain = True
        available = self.available
        for fr, left in available.items():
            u = usage.get(fr, 0)
            if u > 0:  # the tree takes no other
                left -= u
                available[fr] = left
            if left < 0:
                certain = False
        own = self.own
        if own:
            same = info.cq == self.cq
            for fr, left in own.items():
                u = usage.get(fr, 0) if same else 0
                if u > 0:
                    left -= u
                    own[fr] = left
                if left < 0:
                    certain = False
        return certain
