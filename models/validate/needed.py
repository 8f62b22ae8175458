"""Victims must be needed, and their room must serve who may take it.

Kueue picks victims by removing candidates until the preemptor fits and then
filling back every one it can do without (kueue-semantics §5.2), so each
victim it evicts is one its preemptor cannot fit beside.  A plan is a final
state, not a cycle, so this module checks the two consequences on it, with
its own arithmetic like the rest of the validator:

``preemption.unneeded``
    Put the victim back (everything else as the plan has it): its credited
    preemptor, where the plan admits it, must then lack room on a leaf it
    shares with the victim or quota on its own cohort path, or have to
    borrow where it did not (Kueue evicts in the queue to avoid borrowing,
    which narrows whom a preemptor may reclaim from).  Otherwise the
    eviction bought that preemptor nothing.  A preemptor the plan leaves
    pending (Kueue evicts in one cycle and admits in a later one) has no
    placement yet to judge, so only the next rule applies to it.

``preemption.room-elsewhere``
    The capacity an eviction frees on the victim's leaves may serve its own
    ClusterQueue, its preemptor's, or a queue Kueue's cohort rules would let
    preempt it directly (reclaim, fair sharing: some admission of that queue
    in the plan may evict it) — never anyone else (formats.md): with the
    victim put back and those entitled queues' admissions taken out, the
    leaf must hold everything left.  This is the live soak's
    failure: a victim evicted within its queue "for" a job that went to a
    free host, while the same plan put another queue's gang on its node.

Freed *quota* that a needed victim leaves beyond its preemptor's demand may
be borrowed by any queue, as Kueue lets it be in its next cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from placewise.models.cluster import ClusterQueue
from placewise.models.plan import PlanPreemption
from placewise.models.validate.capacity import (
    LeafKey,
    admitted_leaves,
    leaf_base,
    running_leaves,
)
from placewise.models.validate.context import Admitted, Context, Violation, qty
from placewise.models.validate.quota import (
    AuditQuotaTree,
    add_usage,
    admitted_usage,
    breaches,
    final_usage,
)
from placewise.models.workload import Workload

Usage = dict[str, int]
MayPreempt = Callable[[Workload, Admitted, ClusterQueue], bool]
"""Whether an admitted workload's queue could evict a victim directly; the
preemption family answers it with its own policy checks."""


def check(ctx: Context, may_preempt: MayPreempt) -> list[Violation]:
    """Both rules for every victim (``may_preempt`` is the policy family's
    answer to "could this admission's queue evict that victim itself")."""
    if not ctx.victims:
        return []
    return Needed(ctx, may_preempt).all()


class Needed:
    def __init__(self, ctx: Context, may_preempt: MayPreempt) -> None:
        self.ctx = ctx
        self.may_preempt = may_preempt
        self.tree = AuditQuotaTree(ctx.snap)
        self.final = final_usage(ctx)
        self.placed = admitted_leaves(ctx)
        self.load: dict[LeafKey, Usage] = {}
        """Everything on a leaf after the plan: bound pods, running TAS
        workloads that stay, the plan's own pods."""
        self.cap: dict[LeafKey, Usage] = {}
        self.on_leaf: dict[LeafKey, list[str]] = {}
        self.by_queue: dict[str, list[Admitted]] = {}
        """ClusterQueue -> its admissions in the plan."""
        for adm in ctx.admitted:
            if adm.cluster_queue is not None:
                self.by_queue.setdefault(adm.cluster_queue.name, []).append(adm)
        self.queue_may: dict[tuple[str, str], bool] = {}
        """(victim, ClusterQueue) -> some admission of it may evict the victim."""
        for w in ctx.remaining:
            for key, use in running_leaves(ctx, w).items():
                _add(self._slot(key), use)
        for key_w, leaves in self.placed.items():
            for key, use in leaves.items():
                _add(self._slot(key), use)
                self.on_leaf.setdefault(key, []).append(key_w)

    def _slot(self, key: LeafKey) -> Usage:
        if key not in self.load:
            alloc, pods = leaf_base(self.ctx, key)
            self.cap[key] = alloc
            self.load[key] = dict(pods)
        return self.load[key]

    def all(self) -> list[Violation]:
        out: list[Violation] = []
        for victim, pre in self.ctx.victims.values():
            out += self.one(victim, pre)
        return out

    def one(self, victim: Workload, pre: PlanPreemption) -> list[Violation]:
        """Both rules for ``victim`` credited as ``pre`` says: nothing else
        of the plan is read per victim, so the settling pass asks again
        under other credits without building this again."""
        if victim.admission is None:
            return []
        freed = running_leaves(self.ctx, victim)
        for key in freed:
            self._slot(key)
        adm = self.ctx.admitted_by_key.get(pre.preemptor)
        return self._unneeded(adm, victim, freed) + self._elsewhere(victim, pre, freed)

    # -- preemption.unneeded ---------------------------------------------------

    def _unneeded(
        self, adm: Admitted | None, victim: Workload, freed: Mapping[LeafKey, Usage]
    ) -> list[Violation]:
        if adm is None or adm.cluster_queue is None:
            return []
        if self._short_of_room(adm, freed) or self._short_of_quota(victim, adm):
            return []
        return [
            Violation(
                "preemption.unneeded",
                victim.key,
                f"evicted for {adm.key}, which the plan places where it fits with "
                f"{victim.key} still running: no leaf they share would be over "
                "allocatable, no quota on its cohort path would be exceeded and its "
                "queue would not start borrowing, so Kueue's fill-back would keep "
                "the victim",
            )
        ]

    def _short_of_room(self, adm: Admitted, freed: Mapping[LeafKey, Usage]) -> bool:
        mine = self.placed.get(adm.key, {})
        for key, back in freed.items():
            if key not in mine:
                continue
            load, cap = self.load[key], self.cap[key]
            for r, v in back.items():
                uses = v > 0 and mine[key].get(r, 0) > 0
                if uses and load.get(r, 0) + v > cap.get(r, 0):
                    return True
        return False

    def _short_of_quota(self, victim: Workload, adm: Admitted) -> bool:
        assert victim.admission is not None
        if adm.cluster_queue is None:
            return False
        shared = set(admitted_usage(adm)) & set(victim.usage())
        if not shared:
            return False
        restored: dict[str, dict[tuple[str, str], int]] = {
            cq: dict(per) for cq, per in self.final.items()
        }
        add_usage(restored, victim.admission.cluster_queue, victim.usage())
        own = ("cq", adm.cluster_queue.name)
        path = set(self.tree.path(own))
        root = self.tree.root_of(own)
        for fr in sorted(shared):
            before = {
                (b.node, b.kind): b.usage
                for b in breaches(self.tree, root, fr, self.final)
            }
            for b in breaches(self.tree, root, fr, restored):
                if b.node in path and b.usage > before.get((b.node, b.kind), -1):
                    return True
            # Kueue also evicts within the queue so that the preemptor fits
            # without borrowing (borrowing narrows whom it may reclaim from).
            now = self.tree.amounts(root, fr, self.final)[own]
            back = self.tree.amounts(root, fr, restored)[own]
            if back.usage > back.subtree and now.usage <= now.subtree:
                return True
        return False

    # -- preemption.room-elsewhere ---------------------------------------------

    def _elsewhere(
        self, victim: Workload, pre: PlanPreemption, freed: Mapping[LeafKey, Usage]
    ) -> list[Violation]:
        assert victim.admission is not None
        entitled = {victim.admission.cluster_queue}
        credited = self.ctx.admitted_by_key.get(pre.preemptor)
        if credited is not None and credited.cluster_queue is not None:
            entitled.add(credited.cluster_queue.name)
        out: list[Violation] = []
        for key, back in sorted(freed.items()):
            here = self.on_leaf.get(key, [])
            foreign = [k for k in here if not self._entitled(victim, k, entitled)]
            if not foreign:
                continue
            left = dict(self.load[key])
            for k in self.on_leaf[key]:
                if k not in foreign:
                    _add(left, self.placed[k][key], sign=-1)
            for r, v in sorted(back.items()):
                total = left.get(r, 0) + v
                cap = self.cap[key].get(r, 0)
                if v > 0 and total > cap:
                    out.append(
                        Violation(
                            "preemption.room-elsewhere",
                            victim.key,
                            f"evicted for {pre.preemptor} ({pre.reason}), but its "
                            f"room on {_where(key)} serves "
                            f"{', '.join(sorted(foreign))} of a ClusterQueue that "
                            "may not preempt it: with the "
                            f"victim back and only those admissions there, {r} would "
                            f"be {qty(r, total)} of {qty(r, cap)}",
                        )
                    )
                    break
        return out

    def _entitled(self, victim: Workload, key: str, entitled: set[str]) -> bool:
        """Whether ``key``'s queue may have the victim's room: its own, its
        preemptor's, or a queue that could evict it directly — any admission
        of that queue in the plan that its cohort policy lets preempt the
        victim (formats.md: "any queue whose cohort policy could evict it
        directly"), not only ``key`` itself: once one of them could have made
        the room, the queue may fill it with any of its workloads."""
        cq = self.ctx.admitted_by_key[key].cluster_queue
        if cq is None or cq.name in entitled:
            return True
        memo = (victim.key, cq.name)
        if memo not in self.queue_may:
            self.queue_may[memo] = any(
                self.may_preempt(victim, adm, cq) for adm in self.by_queue[cq.name]
            )
        return self.queue_may[memo]


def _add(acc: Usage, use: Mapping[str, int], sign: int = 1) -> None:
    for r, v in use.items():
        acc[r] = acc.get(r, 0) + sign * v


def _where(key: LeafKey) -> str:
    if key[0] == "node":
        return f"node {key[1]}"
    return f"domain {'/'.join(key[2:])} of flavor {key[1]}"
