"""Fair-sharing preemption, judged on the plan's final state (§5.4, §5.5).

With Kueue's fair sharing on, a running workload of *another* ClusterQueue
may be evicted only in two ways: the preemptor's queue stays within its
nominal quota on what they share ("nominal first", reason
InCohortReclamation), or a configured strategy allows it (reason
InCohortFairSharing).  Kueue applies the strategies victim by victim on
intermediate states; a plan has no timeline, so the validator judges each
strategy once, on states that every order of the same evictions passes
through or ends in:

* the preemptor's side (the child of the lowest common cohort holding its
  queue) is measured with the running workloads that stay plus the
  preemptor alone — later admissions of a multi-cycle plan cannot make an
  earlier eviction illegal — and without the work its own queue could still
  evict for it (``withinClusterQueue``): Kueue applies the strategy after
  taking such victims and its fill back may return them afterwards;
* LessThanOrEqualToFinalShare: that share must not exceed the target side's
  share after the plan (all evictions done, all admissions made);
* LessThanInitialShare: it must be below the target side's share at the
  plan's peak (nothing evicted yet, everything admitted).

Shares are Kueue's dominant resource shares: per resource, what a node uses
above its quota over what its parent could lend it, in per-mille, divided by
the node's weight (a zero weight while borrowing is an infinite share).  The
arithmetic is exact and written here apart from the solvers'.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from placewise.models.cluster import ClusterQueue
from placewise.models.quantity import INT64_MAX
from placewise.models.validate.context import Context, FlavorResource
from placewise.models.validate.quota import (
    Amounts,
    AuditQuotaTree,
    NodeId,
    Usage,
    add_usage,
    admitted_usage,
    final_usage,
    running_usage,
)
from placewise.models.workload import Workload

ShareKey = tuple[int, Fraction]
"""(1 for a zero-weight borrower else 0, ratio or weighted share): compares
as Kueue's CompareDRS."""


def _label(key: ShareKey) -> str:
    if key[0]:
        return "infinite (weight 0)"
    return str(-(-key[1].numerator // key[1].denominator))


class FairShares:
    """Dominant resource shares of every node of the snapshot's trees."""

    def __init__(self, ctx: Context, tree: AuditQuotaTree) -> None:
        self.ctx, self.tree = ctx, tree
        self.frs: dict[NodeId, list[FlavorResource]] = {}
        for root in tree.roots:
            frs: set[FlavorResource] = set()
            for cq in tree.queues_under[root]:
                q = ctx.snap.cluster_queues[cq]
                frs |= {
                    (fq.name, rq.name)
                    for g in q.resource_groups
                    for fq in g.flavors
                    for rq in fq.resources
                }
            for node in self._nodes(root):
                if node[0] == "cohort":
                    co = ctx.snap.cohorts.get(node[1])
                    for g in co.resource_groups if co else ():
                        frs |= {
                            (fq.name, rq.name)
                            for fq in g.flavors
                            for rq in fq.resources
                        }
            self.frs[root] = sorted(frs)
        self._lendable: dict[NodeId, dict[str, int]] = {}
        self._memo: dict[tuple[int, NodeId], ShareKey] = {}

    def _nodes(self, root: NodeId) -> list[NodeId]:
        out, todo = [], [root]
        while todo:
            node = todo.pop()
            out.append(node)
            todo += self.tree.children.get(node, [])
        return out

    def _weight(self, node: NodeId) -> Fraction:
        owner = (
            self.ctx.snap.cluster_queues.get(node[1])
            if node[0] == "cq"
            else self.ctx.snap.cohorts.get(node[1])
        )
        return owner.fair_weight if owner is not None else Fraction(1)

    def _potential(
        self, node: NodeId, a: Mapping[NodeId, Amounts], fr: FlavorResource
    ) -> int:
        """What ``node`` could use of ``fr`` if the whole tree were idle."""
        parent = self.tree.parent.get(node)
        if parent is None:
            return a[node].subtree
        out = a[node].local + self._potential(parent, a, fr)
        q = self.tree.quota(node, fr)
        if q is not None and q.borrowing_limit is not None:
            out = min(out, a[node].subtree + q.borrowing_limit)
        return out

    def lendable(self, parent: NodeId) -> dict[str, int]:
        if parent not in self._lendable:
            root = self.tree.root_of(parent)
            out: dict[str, int] = {}
            for fr in self.frs[root]:
                a = self.tree.amounts(root, fr, {})
                out[fr[1]] = out.get(fr[1], 0) + self._potential(parent, a, fr)
            self._lendable[parent] = {r: min(v, INT64_MAX) for r, v in out.items()}
        return self._lendable[parent]

    def share(self, node: NodeId, usage: Usage) -> ShareKey:
        key = (id(usage), node)
        if key in self._memo:
            return self._memo[key]
        parent = self.tree.parent.get(node)
        value: ShareKey = (0, Fraction(0))
        if parent is not None:
            root = self.tree.root_of(node)
            above: dict[str, int] = {}
            for fr in self.frs[root]:
                a = self.tree.amounts(root, fr, usage)[node]
                if a.usage > a.subtree:
                    above[fr[1]] = above.get(fr[1], 0) + a.usage - a.subtree
            lendable = self.lendable(parent)
            ratio = max(
                (
                    Fraction(min(v, INT64_MAX) * 1000, lendable[r])
                    for r, v in above.items()
                    if lendable.get(r, 0) > 0
                ),
                default=Fraction(0),
            )
            weight = self._weight(node)
            if ratio != 0 and weight == 0:
                value = (1, ratio)
            elif ratio != 0:
                value = (0, ratio / weight)
        self._memo[key] = value
        return value


class FairRule:
    """``preemption.fair-sharing``: one verdict per cross-queue victim."""

    def __init__(self, ctx: Context, tree: AuditQuotaTree) -> None:
        self.ctx, self.tree = ctx, tree
        self.shares = FairShares(ctx, tree)
        self.final = final_usage(ctx)
        self.peak = final_usage(ctx, keep_victims=True)
        self.strategies = ctx.snap.fair_sharing.preemption_strategies
        self._own: dict[str, Usage] = {}
        self._relieved: dict[str, Usage] = {}

    def preemptor_usage(
        self, w: Workload, cq: ClusterQueue
    ) -> dict[FlavorResource, int]:
        """What the preemptor holds once admitted; for one the plan leaves
        pending (a cycle-limited run), its smallest request on the flavors
        its victims use (when none, that resource is left out: lenient)."""
        adm = self.ctx.admitted_by_key.get(w.key)
        if adm is not None:
            return admitted_usage(adm)
        used = {
            fr
            for victim, pre in self.ctx.victims.values()
            if pre.preemptor == w.key
            for fr in victim.usage()
        }
        out: dict[FlavorResource, int] = {}
        for ps in w.pod_sets:
            count = ps.min_count or ps.count
            for r, v in self.ctx.expected_usage(cq, ps, count).items():
                flavors = [
                    f.name
                    for g in cq.resource_groups
                    if r in g.covered_resources
                    for f in g.flavors
                ]
                f = next((f for f in flavors if (f, r) in used), None)
                if f is not None:
                    out[(f, r)] = out.get((f, r), 0) + v
        return out

    def _with_preemptor(
        self, w: Workload, cq: ClusterQueue, own: Mapping[FlavorResource, int]
    ) -> tuple[Usage, Usage]:
        """(running that stays + the preemptor; the same without what the
        preemptor's own queue could still evict for it).

        Kueue judges a strategy after the victims it took so far, its own
        queue's included, and its fill back may then return those: the share
        its strategy saw is no higher than the second state's."""
        if w.key not in self._own:
            usage = running_usage(self.ctx.remaining)
            add_usage(usage, cq.name, own)
            relieved = {q: dict(per) for q, per in usage.items()}
            mine = relieved.setdefault(cq.name, {})
            for r in self.ctx.remaining:
                assert r.admission is not None
                if r.admission.cluster_queue != cq.name or not _within_policy(cq, w, r):
                    continue
                held = r.usage()
                if set(held) & set(own):
                    for fr, v in held.items():
                        mine[fr] = mine.get(fr, 0) - v
            self._own[w.key] = usage
            self._relieved[w.key] = relieved
        return self._own[w.key], self._relieved[w.key]

    def check(
        self,
        victim: Workload,
        w: Workload,
        cq: ClusterQueue,
        lca_path: tuple[list[NodeId], list[NodeId]],
    ) -> str | None:
        """Why this eviction is not justified, or None when it is."""
        mine, theirs = lca_path
        own = self.preemptor_usage(w, cq)
        usage, relieved = self._with_preemptor(w, cq, own)
        shared = set(own) & set(victim.usage())
        me = ("cq", cq.name)
        root = self.tree.root_of(me)
        if shared and all(
            (a := self.tree.amounts(root, fr, usage)[me]).usage <= a.subtree
            for fr in shared
        ):
            return None  # nominal first: the preemptor's queue stays within quota
        pns = self.shares.share(mine[-1], relieved)
        tns = self.shares.share(theirs[-1], self.final)
        tos = self.shares.share(theirs[-1], self.peak)
        if "LessThanOrEqualToFinalShare" in self.strategies and pns <= tns:
            return None
        if "LessThanInitialShare" in self.strategies and pns < tos:
            return None
        return (
            f"fair sharing: ClusterQueue {cq.name} borrows once {w.key} is "
            f"admitted, and {_name(mine[-1])}'s share ({_label(pns)}) would "
            f"exceed {_name(theirs[-1])}'s after the plan ({_label(tns)}) and "
            f"not be below it before ({_label(tos)}) "
            f"(strategies {', '.join(self.strategies)})"
        )


def _within_policy(cq: ClusterQueue, w: Workload, other: Workload) -> bool:
    """May ``w`` evict ``other`` of its own queue (``withinClusterQueue``)?"""
    policy = cq.preemption.within_cluster_queue
    if other.priority < w.priority:
        return policy != "Never"
    return (
        policy == "LowerOrNewerEqualPriority"
        and other.priority == w.priority
        and w.queue_order_timestamp < other.queue_order_timestamp
    )


def _name(node: NodeId) -> str:
    return f"{'ClusterQueue' if node[0] == 'cq' else 'cohort'} {node[1]}"
