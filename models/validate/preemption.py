"""Preemption policy (kueue-semantics §5.1, §5.3).

A plan may evict a running workload only where the preemptor's
ClusterQueue policy allows it: ``withinClusterQueue`` inside its own queue,
``reclaimWithinCohort`` for a queue of the same cohort tree that is
borrowing, and — when the preemptor itself ends up borrowing —
``borrowWithinCohort``; with Kueue's fair sharing on, the shares instead
(:mod:`placewise.models.validate.fairshare`).  Which victims Kueue's
heuristic would pick is not checked here; any set the policy permits is
feasible.
"""

from __future__ import annotations

from placewise.models.cluster import ClusterQueue
from placewise.models.plan import PlanPreemption
from placewise.models.validate import needed
from placewise.models.validate.context import (
    Admitted,
    Context,
    FlavorResource,
    Violation,
)
from placewise.models.validate.fairshare import FairRule
from placewise.models.validate.quota import (
    Amounts,
    AuditQuotaTree,
    NodeId,
    add_usage,
    admitted_usage,
    assignment_usage,
    final_usage,
    running_usage,
)
from placewise.models.workload import Workload


def check(ctx: Context) -> list[Violation]:
    """Each eviction against the preemptor's queue policy."""
    if not ctx.victims:
        return []
    checker = _Checker(ctx)
    out: list[Violation] = []
    for victim, pre in ctx.victims.values():
        out += checker.one(victim, pre)
    return out + needed.check(ctx, checker.may_preempt)


class Credits:
    """One plan's preemption rules for a single victim, asked under other
    credits (preemptor, reason).  Naming another preemptor changes nothing
    else the rules read (the admissions, the victims and so every usage
    stay), so the settling pass builds this once per plan instead of
    checking the whole plan per candidate credit (at 10,000 hosts those
    whole checks were most of a settle's time)."""

    def __init__(self, ctx: Context) -> None:
        self.checker = _Checker(ctx)
        self.needed = needed.Needed(ctx, self.checker.may_preempt)

    def check(self, victim: Workload, pre: PlanPreemption) -> list[Violation]:
        """What :func:`check` reports about ``victim`` were it credited as
        ``pre`` says."""
        return self.checker.one(victim, pre) + self.needed.one(victim, pre)


class _Checker:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.tree = AuditQuotaTree(ctx.snap)
        # A multi-cycle plan may first admit into a queue, making it borrow,
        # and then reclaim from it: "borrowing" is judged on the peak usage
        # (running plus admissions), which is the initial state for a plan
        # that admits nothing there.
        self.peak = final_usage(ctx, keep_victims=True)
        self.final = final_usage(ctx)
        self.pending = {w.key: w for w in ctx.snap.pending}
        self.fair = FairRule(ctx, self.tree) if ctx.snap.fair_sharing.enable else None
        self._memo: dict[tuple[NodeId, FlavorResource, bool], dict[NodeId, Amounts]]
        self._memo = {}
        self._remaining: dict[str, dict[FlavorResource, int]] | None = None
        # Asked once per (victim, admission of another queue) pair by the
        # room-elsewhere rule: at 10,000 hosts 5,500 times on one plan, each
        # summing every running workload afresh took 55 s of a validation.
        self._borrows: dict[tuple[str, str, tuple[NodeId, ...]], bool] = {}
        self._may: dict[tuple[str, str, int, frozenset[object]], bool] = {}

    def _amounts(
        self, root: NodeId, fr: FlavorResource, final: bool
    ) -> dict[NodeId, Amounts]:
        key = (root, fr, final)
        if key not in self._memo:
            usage = self.final if final else self.peak
            self._memo[key] = self.tree.amounts(root, fr, usage)
        return self._memo[key]

    def one(self, victim: Workload, pre: PlanPreemption) -> list[Violation]:
        if not victim.preemptible:
            return [
                self._v(
                    "preemption.protected",
                    victim,
                    f"is marked not preemptible, yet evicted for {pre.preemptor}",
                )
            ]
        snap = self.ctx.snap
        w = self.pending.get(pre.preemptor)
        if w is None:
            return []  # reported as bookkeeping.preemptor
        adm = self.ctx.admitted_by_key.get(w.key)
        cq_name = adm.entry.cluster_queue if adm else snap.cluster_queue_of(w)
        cq = snap.cluster_queues.get(cq_name or "")
        blocked = snap.blocked_reason(w)
        if cq is None or blocked is not None:
            why = blocked or f"ClusterQueue {cq_name} doesn't exist"
            return [
                self._v(
                    "preemption.scope",
                    victim,
                    f"preemptor {w.key} cannot be admitted: {why}",
                )
            ]
        assert victim.admission is not None
        vcq = victim.admission.cluster_queue
        same = vcq == cq.name
        out = self._reason(victim, pre, cq, vcq)
        frs = self._frs(w, cq)
        if not set(victim.usage()) & frs:
            out.append(
                self._v(
                    "preemption.no-shared-resource",
                    victim,
                    f"shares no flavor-resource with preemptor {w.key} "
                    f"(victim uses {_frs_text(set(victim.usage()))}; preemptor "
                    f"{'uses' if adm else 'could use'} {_frs_text(frs)})",
                )
            )
        if same:
            return out + self._within(victim, w, cq)
        return out + self._cohort(victim, w, cq, frs, adm is not None)

    def may_preempt(self, victim: Workload, adm: Admitted, cq: ClusterQueue) -> bool:
        """Could ``adm``'s queue evict ``victim`` itself under its cohort
        policy (or fair sharing)?  Asked for queues other than the victim's."""
        if not victim.preemptible:
            return False
        use = assignment_usage(adm.entry.pod_set_assignments)
        frs = set(use)
        if not set(victim.usage()) & frs:
            return False
        if self.fair is not None:
            return not self._cohort(victim, adm.workload, cq, frs, True)
        # Without fair sharing the answer reads the admission only through
        # its priority and usage, and a queue's admissions share a few
        # shapes: the room-elsewhere rule asks for each in turn.
        key = (victim.key, cq.name, adm.workload.priority, frozenset(use.items()))
        got = self._may.get(key)
        if got is None:
            got = self._may[key] = not self._cohort(victim, adm.workload, cq, frs, True)
        return got

    def _v(self, rule: str, victim: Workload, message: str) -> Violation:
        return Violation(rule, victim.key, message)

    def _reason(
        self, victim: Workload, pre: PlanPreemption, cq: ClusterQueue, vcq: str
    ) -> list[Violation]:
        same = vcq == cq.name
        if same != (pre.reason == "InClusterQueue"):
            where = (
                f"the preemptor's own ClusterQueue {vcq}, which calls for "
                "InClusterQueue"
                if same
                else f"ClusterQueue {vcq}, not the preemptor's {cq.name}"
            )
            return [
                self._v(
                    "preemption.reason",
                    victim,
                    f"reason {pre.reason} but the victim is in {where}",
                )
            ]
        if pre.reason == "InCohortFairSharing" and self.fair is None:
            return [
                self._v(
                    "preemption.reason",
                    victim,
                    "reason InCohortFairSharing but the instance does not enable "
                    "Kueue's fair sharing",
                )
            ]
        if pre.reason == "InCohortReclaimWhileBorrowing" and self.fair is not None:
            return [
                self._v(
                    "preemption.reason",
                    victim,
                    "reason InCohortReclaimWhileBorrowing but fair sharing is on: "
                    "Kueue then reclaims by share (InCohortFairSharing) or within "
                    "nominal quota (InCohortReclamation), never by borrowWithinCohort",
                )
            ]
        policy = cq.preemption.borrow_within_cohort.policy
        if pre.reason == "InCohortReclaimWhileBorrowing" and policy == "Never":
            return [
                self._v(
                    "preemption.reason",
                    victim,
                    f"reason InCohortReclaimWhileBorrowing but ClusterQueue {cq.name} "
                    "has borrowWithinCohort policy Never",
                )
            ]
        return []

    def _frs(self, w: Workload, cq: ClusterQueue) -> set[FlavorResource]:
        """Flavor-resources the preemptor holds, or could hold if pending."""
        adm = self.ctx.admitted_by_key.get(w.key)
        if adm is not None:
            return set(assignment_usage(adm.entry.pod_set_assignments))
        out: set[FlavorResource] = set()
        for ps in w.pod_sets:
            for r in self.ctx.needed_resources(cq, ps, ps.count):
                group = cq.group_of(r)
                if group is not None:
                    out.update((fq.name, r) for fq in cq.resource_groups[group].flavors)
        return out

    def _within(
        self, victim: Workload, w: Workload, cq: ClusterQueue
    ) -> list[Violation]:
        policy = cq.preemption.within_cluster_queue
        pv, pw = victim.priority, w.priority
        if policy == "LowerPriority" and pv < pw:
            return []
        newer = w.queue_order_timestamp < victim.queue_order_timestamp
        if policy == "LowerOrNewerEqualPriority" and (pv < pw or (pv == pw and newer)):
            return []
        return [
            self._v(
                "preemption.policy",
                victim,
                f"ClusterQueue {cq.name} has withinClusterQueue {policy}, which does "
                f"not let {w.key} (priority {pw}) preempt it (priority {pv}"
                f"{', not newer' if policy == 'LowerOrNewerEqualPriority' else ''})",
            )
        ]

    def _cohort(
        self,
        victim: Workload,
        w: Workload,
        cq: ClusterQueue,
        frs: set[FlavorResource],
        admitted: bool,
    ) -> list[Violation]:
        assert victim.admission is not None
        vcq = victim.admission.cluster_queue
        mine, theirs = self.tree.path(("cq", cq.name)), self.tree.path(("cq", vcq))
        if mine[-1] != theirs[-1] or len(mine) == 1:
            return [
                self._v(
                    "preemption.scope",
                    victim,
                    f"in ClusterQueue {vcq}, outside the cohort tree of the "
                    f"preemptor's ClusterQueue {cq.name}",
                )
            ]
        if not self.ctx.snap.is_active(vcq):
            return [
                self._v(
                    "preemption.scope",
                    victim,
                    f"in inactive ClusterQueue {vcq}, whose workloads are never "
                    "preemption candidates",
                )
            ]
        out = []
        pv, pw = victim.priority, w.priority
        policy = cq.preemption.reclaim_within_cohort
        if policy == "Never" or (policy == "LowerPriority" and pv >= pw):
            out.append(
                self._v(
                    "preemption.policy",
                    victim,
                    f"ClusterQueue {cq.name} has reclaimWithinCohort {policy}, which "
                    f"does not let {w.key} (priority {pw}) preempt it in ClusterQueue "
                    f"{vcq} (priority {pv})",
                )
            )
        lca = next(n for n in mine if n in theirs)
        below = theirs[: theirs.index(lca)]
        # Fair sharing takes from any borrowing queue of the tree; the
        # classical walk also needs every cohort in between to borrow.
        lenders = [
            n
            for n in (below[:1] if self.fair is not None else below)
            if not self._borrowing(n, frs)
        ]
        if lenders:
            out.append(
                self._v(
                    "preemption.not-borrowing",
                    victim,
                    f"{_name(lenders[0])} is within its quota on the flavor-resources "
                    f"{w.key} needs, so its workloads cannot be reclaimed",
                )
            )
        if self.fair is not None:
            why = self.fair.check(victim, w, cq, (mine[: mine.index(lca)], below))
            if why is not None:
                out.append(self._v("preemption.fair-sharing", victim, why))
        elif admitted and self._borrows_at_end(cq, w, mine[1 : mine.index(lca)]):
            out += self._borrow_policy(victim, w, cq)
        return out

    def _borrowing(self, node: NodeId, frs: set[FlavorResource]) -> bool:
        """Above its quota (U > S) on some fr, at the plan's peak usage."""
        root = self.tree.root_of(node)
        for fr in frs:
            a = self._amounts(root, fr, False)[node]
            if a.usage > a.subtree:
                return True
        return False

    def _borrows_at_end(
        self, cq: ClusterQueue, w: Workload, between: list[NodeId]
    ) -> bool:
        """The preemptor borrows once admitted, without a lower subtree that
        holds it (a "hierarchical advantage" ignores borrowWithinCohort).

        Judged with the running workloads that stay plus the preemptor alone:
        a plan is a final state without a timeline, and later admissions into
        the same queue (a later Kueue cycle) must not turn a reclaim that was
        legal when it happened into a violation.
        """
        key = (cq.name, w.key, tuple(between))
        got = self._borrows.get(key)
        if got is None:
            got = self._borrows[key] = self._borrows_now(cq, w, between)
        return got

    def _borrows_now(
        self, cq: ClusterQueue, w: Workload, between: list[NodeId]
    ) -> bool:
        adm = self.ctx.admitted_by_key[w.key]
        frs = set(assignment_usage(adm.entry.pod_set_assignments))
        root = self.tree.root_of(("cq", cq.name))
        if self._remaining is None:
            self._remaining = running_usage(self.ctx.remaining)
        usage = {q: dict(per) for q, per in self._remaining.items()}
        add_usage(usage, cq.name, admitted_usage(adm))
        table = {fr: self.tree.amounts(root, fr, usage) for fr in frs}
        own = ("cq", cq.name)
        if all(t[own].usage <= t[own].subtree for t in table.values()):
            return False
        return not any(
            all(t[b].usage <= t[b].subtree for t in table.values()) for b in between
        )

    def _borrow_policy(
        self, victim: Workload, w: Workload, cq: ClusterQueue
    ) -> list[Violation]:
        bwc = cq.preemption.borrow_within_cohort
        pv, pw = victim.priority, w.priority
        threshold = bwc.max_priority_threshold
        if (
            bwc.policy == "LowerPriority"
            and pv < pw
            and (threshold is None or pv <= threshold)
        ):
            return []
        if bwc.policy == "Never":
            why = "borrowWithinCohort is Never"
        elif pv >= pw:
            why = f"its priority {pv} is not below the preemptor's {pw}"
        else:
            why = f"its priority {pv} is above maxPriorityThreshold {threshold}"
        return [
            self._v(
                "preemption.policy",
                victim,
                f"preemptor {w.key} borrows in ClusterQueue {cq.name} after the "
                f"plan, so only borrowWithinCohort may reclaim, and {why}",
            )
        ]


def _name(node: NodeId) -> str:
    return f"{'ClusterQueue' if node[0] == 'cq' else 'cohort'} {node[1]}"


def _frs_text(frs: set[FlavorResource]) -> str:
    if not frs:
        return "nothing"
    return ", ".join(f"{r} in {f}" for f, r in sorted(frs))
