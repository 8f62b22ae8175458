"""Kueue's fair sharing, the rules every back-end shares (kueue-semantics §5.4,
§5.5, §7.2).

With fair sharing on, Kueue orders a cycle's heads and picks preemption
victims by *dominant resource share* (DRS): how much of its parent's lendable
capacity a ClusterQueue or cohort borrows, on its most borrowed resource,
divided by its weight.  This module holds the arithmetic (exact: the ratio is
a :class:`~fractions.Fraction` of per-mille, so no two back-ends can disagree
through rounding; Kueue's own ``weightedShare`` status is its ceiling), the
tournament that orders heads, the two preemption strategies as predicates,
and the same strategies judged on a plan's final state (what the CP-SAT
back-end must respect).  The greedy's search over victims is in
:mod:`placewise.solver.greedy.fair`; the validator has its own, separate
implementation of the final-state rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction

from placewise.models.cluster import PODS, PreemptionStrategy
from placewise.models.plan import Plan
from placewise.models.quantity import INT64_MAX
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment, Workload
from placewise.solver.kueue.preemption import satisfies_policy
from placewise.solver.kueue.quota import FR, QuotaNode, QuotaTree, cohort_id, cq_id
from placewise.solver.kueue.workload import WlInfo


@dataclass(frozen=True, slots=True)
class Share:
    """One node's dominant resource share (Kueue's ``DRS``)."""

    weight: Fraction
    ratio: Fraction
    """Unweighted: borrowed units per 1000 lendable units of the dominant
    resource; 0 when the node borrows nothing (-1 only in :data:`NEGATIVE`)."""
    resource: str = ""
    borrowed: frozenset[FR] = frozenset()
    """Flavor-resources on which the node uses more than its quota."""

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    @property
    def infinite(self) -> bool:
        """A zero weight while borrowing: an infinite share (Kueue's
        ``zeroWeightBorrows``), after every finite one."""
        return self.weight == 0 and self.ratio != 0

    @property
    def weighted(self) -> Fraction:
        """ratio / weight; meaningless when :attr:`infinite`."""
        if self.ratio == 0 or self.weight == 0:
            return Fraction(0)
        return self.ratio / self.weight

    def rounded(self) -> int:
        """Kueue's ``status.fairSharing.weightedShare``."""
        return INT64_MAX if self.infinite else math.ceil(self.weighted)

    def borrowing_on(self, frs: Iterable[FR]) -> bool:
        return any(fr in self.borrowed for fr in frs)

    def __str__(self) -> str:
        return "infinite (weight 0)" if self.infinite else str(self.rounded())


NEGATIVE = Share(weight=Fraction(1), ratio=Fraction(-1))
"""Below every real share: the starting point of a maximum search."""


def _sign(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def compare(a: Share, b: Share) -> int:
    """Kueue's ``CompareDRS``: -1, 0, 1; zero-weight borrowers sort after all
    others and among themselves by unweighted ratio."""
    if a.infinite and b.infinite:
        return _sign(a.ratio, b.ratio)
    if a.infinite:
        return 1
    if b.infinite:
        return -1
    return _sign(a.weighted, b.weighted)


def weights(snapshot: Snapshot) -> dict[str, Fraction]:
    """Fair-sharing weight of every quota-tree node, by node id."""
    out = {cohort_id(n): c.fair_weight for n, c in snapshot.cohorts.items()}
    out.update({cq_id(n): q.fair_weight for n, q in snapshot.cluster_queues.items()})
    return out


class Shares:
    """Shares of a :class:`QuotaTree`'s nodes at its current usage.

    Lendable capacity depends on quota alone, so it is computed once per
    parent node; usage is read live, so the tree may be mutated between
    calls (the greedy's what-if removals rely on that).
    """

    def __init__(self, tree: QuotaTree, node_weights: Mapping[str, Fraction]) -> None:
        self.tree = tree
        self.weights = node_weights
        self._lendable: dict[str, dict[str, int]] = {}

    @classmethod
    def of(cls, snapshot: Snapshot, tree: QuotaTree) -> Shares:
        return cls(tree, weights(snapshot))

    def lendable(self, node: QuotaNode) -> dict[str, int]:
        """Per resource, what ``node`` could hand its children if the whole
        tree were idle, summed over every flavor of the tree."""
        got = self._lendable.get(node.id)
        if got is None:
            root = node
            while root.parent is not None:
                root = root.parent
            got = {}
            for fr in root.subtree:
                got[fr[1]] = got.get(fr[1], 0) + self.tree.node_potential(node, fr)
            got = {r: min(v, INT64_MAX) for r, v in got.items()}
            self._lendable[node.id] = got
        return got

    def share(self, node: QuotaNode, extra: Mapping[FR, int] | None = None) -> Share:
        """The node's share, with ``extra`` usage added to the node itself."""
        weight = self.weights.get(node.id, Fraction(1))
        if node.parent is None:
            return Share(weight, Fraction(0))
        per_resource: dict[str, int] = {}
        borrowed: list[FR] = []
        for fr, quota in node.subtree.items():
            amount = node.usage.get(fr, 0) - quota
            if extra:
                amount += extra.get(fr, 0)
            if amount > 0:
                per_resource[fr[1]] = per_resource.get(fr[1], 0) + amount
                borrowed.append(fr)
        if not borrowed:
            return Share(weight, Fraction(0))
        lendable = self.lendable(node.parent)
        ratio, dominant = Fraction(0), ""
        for r, amount in per_resource.items():
            lr = lendable.get(r, 0)
            if lr > 0:
                x = Fraction(min(amount, INT64_MAX) * 1000, lr)
                if x > ratio or (x == ratio and r < dominant):
                    ratio, dominant = x, r
        return Share(weight, ratio, dominant, frozenset(borrowed))

    def of_cq(self, cq: str) -> Share:
        return self.share(self.tree.node(cq))


def node_name(node: QuotaNode) -> str:
    """``ClusterQueue x`` or ``cohort x``, for messages."""
    kind, _, name = node.id.partition(":")
    return f"{'ClusterQueue' if kind == 'cq' else 'cohort'} {name}"


# -- ordering of a cycle's heads (fair_sharing_iterator.go) ---------------------


@dataclass(frozen=True, slots=True)
class Contender:
    """A ClusterQueue's head in the tournament, with what it would take."""

    cq: str
    usage: Mapping[FR, int]
    priority: int
    timestamp: float


def subtree_queues(node: QuotaNode) -> Iterator[QuotaNode]:
    for child in node.children:
        if child.id.startswith("cq:"):
            yield child
        else:
            yield from subtree_queues(child)


def _children(node: QuotaNode) -> tuple[list[QuotaNode], list[QuotaNode]]:
    """(child cohorts, child queues), each by name: Kueue leaves the order
    open; names make ties deterministic."""
    kids = sorted(node.children, key=lambda c: c.id)
    return (
        [c for c in kids if c.id.startswith("co:")],
        [c for c in kids if c.id.startswith("cq:")],
    )


def tournament(
    shares: Shares, root: QuotaNode, contenders: Mapping[str, Contender]
) -> Contender | None:
    """The head Kueue considers next in the tree under ``root``.

    Every head's share is taken as if it were admitted (its usage added to
    its queue), at its queue and at every cohort on the way up; each cohort
    then picks among its children's nominees: not borrowing (on what the head
    requests) first, then the lower share, higher priority, earlier time.
    A full tie keeps the first child (cohorts before queues, by name).
    """
    tree = shares.tree
    at: dict[tuple[str, str], Share] = {}
    for node in subtree_queues(root):
        c = contenders.get(node.id[3:])
        if c is None:
            continue
        tree.add_usage(c.cq, c.usage)
        try:
            share = shares.share(node)
            parent = node.parent
            while parent is not None:
                at[(parent.id, c.cq)] = share
                share = shares.share(parent)
                parent = parent.parent
        finally:
            tree.remove_usage(c.cq, c.usage)

    def less(a: Contender, b: Contender, parent: str) -> bool:
        sa, sb = at[(parent, a.cq)], at[(parent, b.cq)]
        ba = sa.borrowing_on(fr for fr, v in a.usage.items() if v > 0)
        bb = sb.borrowing_on(fr for fr, v in b.usage.items() if v > 0)
        if ba != bb:
            return not ba
        c = compare(sa, sb)
        if c != 0:
            return c < 0
        if a.priority != b.priority:
            return a.priority > b.priority
        return a.timestamp < b.timestamp

    def run(cohort: QuotaNode) -> Contender | None:
        cohorts, queues = _children(cohort)
        nominees = [w for child in cohorts if (w := run(child)) is not None]
        nominees += [c for q in queues if (c := contenders.get(q.id[3:])) is not None]
        if not nominees:
            return None
        best = nominees[0]
        for current in nominees[1:]:
            if less(current, best, cohort.id):
                best = current
        return best

    return run(root)


# -- preemption strategies (fairsharing/strategy.go) ---------------------------

Strategy = Callable[[Share, Share, Share], bool]
"""(preemptor's new share, target's old share, target's new share) -> allowed."""


def less_than_or_equal_to_final_share(pns: Share, tos: Share, tns: Share) -> bool:
    """Rule S2-a: the preemptor side, with the incoming workload, ends no
    higher than the target side without its victim."""
    return compare(pns, tns) <= 0


def less_than_initial_share(pns: Share, tos: Share, tns: Share) -> bool:
    """Rule S2-b: the preemptor side, with the incoming workload, stays below
    where the target side started."""
    return compare(pns, tos) < 0


STRATEGIES: dict[PreemptionStrategy, Strategy] = {
    "LessThanOrEqualToFinalShare": less_than_or_equal_to_final_share,
    "LessThanInitialShare": less_than_initial_share,
}


def path_to_root(node: QuotaNode) -> list[QuotaNode]:
    out = [node]
    while out[-1].parent is not None:
        parent = out[-1].parent
        assert parent is not None
        out.append(parent)
    return out


def almost_lcas(
    tree: QuotaTree, preemptor: str, target: str
) -> tuple[QuotaNode, QuotaNode]:
    """The two children of the lowest common cohort of two queues of one
    tree, on the preemptor's and on the target's side: whose shares the
    strategies compare."""
    mine = path_to_root(tree.node(preemptor))
    theirs = path_to_root(tree.node(target))
    ids = {n.id for n in mine}
    for i, node in enumerate(theirs[1:], 1):
        if node.id in ids:
            j = next(k for k, n in enumerate(mine) if n.id == node.id)
            return mine[j - 1], theirs[i - 1]
    raise ValueError(f"ClusterQueues {preemptor} and {target} share no cohort")


# -- a plan's final state (what the optimizer must respect) ----------------------


def _admission_usage(psas: Iterable[PodSetAssignment]) -> dict[FR, int]:
    out: dict[FR, int] = {}
    for psa in psas:
        for r, v in psa.resource_usage.items():
            f = psa.flavors.get(r)
            if f is not None and v:
                out[(f, r)] = out.get((f, r), 0) + v
    return out


def _pending_usage(
    snapshot: Snapshot, w: Workload, cq: str, victim_frs: set[FR]
) -> dict[FR, int]:
    """A preemptor the plan leaves pending: its smallest request, on the
    flavors its victims use (a resource on none of them is left out)."""
    queue = snapshot.cluster_queues[cq]
    out: dict[FR, int] = {}
    for ps in w.pod_sets:
        count = ps.min_count or ps.count
        requests = {r: v * count for r, v in ps.requests.items() if v > 0}
        if queue.group_of(PODS) is not None and count > 0:
            requests[PODS] = count
        serving = queue.serving_groups(requests)
        for r, v in requests.items():
            group = serving.get(r)
            if group is None:
                continue
            for fq in queue.resource_groups[group].flavors:
                if (fq.name, r) in victim_frs:
                    out[(fq.name, r)] = out.get((fq.name, r), 0) + v
                    break
    return out


def _own_relief(
    snapshot: Snapshot,
    w: Workload,
    cq: str,
    own: Mapping[FR, int],
    victims: Mapping[str, object],
) -> dict[FR, int]:
    """Usage of the work that stays in the preemptor's queue and that it
    could still evict (``withinClusterQueue``, sharing a flavor-resource):
    Kueue applies a strategy after taking such victims, and its fill back
    may return them afterwards."""
    policy = snapshot.cluster_queues[cq].preemption.within_cluster_queue
    me = WlInfo(obj=w, cq=cq)
    out: dict[FR, int] = {}
    for r in snapshot.running:
        assert r.admission is not None
        if r.admission.cluster_queue != cq or r.key in victims:
            continue
        held = r.usage()
        if set(held) & set(own) and satisfies_policy(me, WlInfo(obj=r, cq=cq), policy):
            for fr, amount in held.items():
                out[fr] = out.get(fr, 0) + amount
    return out


def final_state_violations(snapshot: Snapshot, plan: Plan) -> list[str]:
    """Evictions from another queue that Kueue's fair sharing would not allow
    in the plan's final state; empty when fair sharing is off.

    The preemptor's side is measured with the running workloads that stay
    plus the preemptor alone, less what its own queue could still evict for
    it (Kueue's fill back may return victims taken before the strategy
    passed); LessThanOrEqualToFinalShare compares it with
    the target side after the plan, LessThanInitialShare with the target
    side at the plan's peak (nothing evicted, everything admitted).  A
    preemptor within its nominal quota on what it shares with the victim
    needs no strategy (Kueue's "nominal first").  The validator states the
    same rule in its own code (``preemption.fair-sharing``).
    """
    fair = snapshot.fair_sharing
    if not fair.enable or not plan.preemptions:
        return []
    running = {w.key: w for w in snapshot.running}
    victims = {p.workload: p for p in plan.preemptions if p.workload in running}
    admitted = {a.workload: a for a in plan.admissions}
    base, final, peak = (QuotaTree(snapshot) for _ in range(3))
    for key in victims:
        v = running[key]
        assert v.admission is not None
        base.remove_usage(v.admission.cluster_queue, v.usage())
        final.remove_usage(v.admission.cluster_queue, v.usage())
    for a in plan.admissions:
        final.add_usage(a.cluster_queue, _admission_usage(a.pod_set_assignments))
        peak.add_usage(a.cluster_queue, _admission_usage(a.pod_set_assignments))
    node_weights = weights(snapshot)
    on = {
        name: Shares(t, node_weights)
        for name, t in (("b", base), ("f", final), ("p", peak))
    }
    out: list[str] = []
    for key, pre in sorted(victims.items()):
        v = running[key]
        assert v.admission is not None
        target = v.admission.cluster_queue
        adm = admitted.get(pre.preemptor)
        w = snapshot.workloads.get(pre.preemptor)
        cq = adm.cluster_queue if adm else snapshot.cluster_queue_of(w) if w else None
        if w is None or cq is None or cq == target or cq not in snapshot.cluster_queues:
            continue
        if pre.reason == "InCohortReclaimWhileBorrowing":
            out.append(f"{key}: InCohortReclaimWhileBorrowing under fair sharing")
            continue
        if base.root(cq) is not base.root(target):
            continue  # another tree: not a fair-sharing question
        frs = {
            fr
            for other, p in victims.items()
            if p.preemptor == pre.preemptor
            for fr in running[other].usage()
        }
        own = (
            _admission_usage(adm.pod_set_assignments)
            if adm
            else _pending_usage(snapshot, w, cq, frs)
        )
        tnode = peak.node(target)
        if not any(tnode.usage.get(fr, 0) > tnode.nominal.get(fr, 0) for fr in own):
            out.append(f"{key}: ClusterQueue {target} does not borrow")
            continue
        shared = set(own) & set(v.usage())
        relief = _own_relief(snapshot, w, cq, own, victims)
        base.add_usage(cq, own)
        try:
            me = base.node(cq)
            if shared and all(
                me.usage.get(fr, 0) <= me.nominal.get(fr, 0) for fr in shared
            ):
                continue
            mine, theirs = almost_lcas(base, cq, target)
            base.remove_usage(cq, relief)
            pns = on["b"].share(mine)
            base.add_usage(cq, relief)
        finally:
            base.remove_usage(cq, own)
        tns = on["f"].share(final.nodes[theirs.id])
        tos = on["p"].share(peak.nodes[theirs.id])
        strategies = fair.preemption_strategies
        if not (
            ("LessThanOrEqualToFinalShare" in strategies and compare(pns, tns) <= 0)
            or ("LessThanInitialShare" in strategies and compare(pns, tos) < 0)
        ):
            out.append(
                f"{key}: {node_name(mine)}'s share {pns} exceeds "
                f"{node_name(theirs)}'s {tns} after the plan ({tos} before)"
            )
    return out


def competing_queues(snapshot: Snapshot) -> list[str]:
    """ClusterQueues in a cohort with pending work: the ones fair sharing
    arbitrates between (and whose shares the bench reports)."""
    return sorted(
        {
            cq
            for w in snapshot.pending
            if (cq := snapshot.cluster_queue_of(w)) is not None
            and snapshot.cluster_queues[cq].cohort is not None
        }
    )


def shares_after(snapshot: Snapshot, plan: Plan) -> dict[str, Share]:
    """The competing queues' shares once ``plan`` is carried out."""
    tree = QuotaTree(snapshot)
    running = {w.key: w for w in snapshot.running}
    for key in {p.workload for p in plan.preemptions if p.workload in running}:
        w = running[key]
        assert w.admission is not None
        tree.remove_usage(w.admission.cluster_queue, w.usage())
    for a in plan.admissions:
        tree.add_usage(a.cluster_queue, _admission_usage(a.pod_set_assignments))
    shares = Shares.of(snapshot, tree)
    return {cq: shares.of_cq(cq) for cq in competing_queues(snapshot)}


def largest_weighted_share(snapshot: Snapshot, plan: Plan) -> Fraction:
    """The measure the optimizer keeps no worse than Kueue's: the largest
    weighted share among competing queues with a non-zero weight."""
    return max(
        (s.weighted for s in shares_after(snapshot, plan).values() if s.weight != 0),
        default=Fraction(0),
    )
