"""Quota with hierarchical cohorts, checked on the final state (§2.1, §9).

The solvers track quota incrementally (``available()``, usage propagation);
this module deliberately does not.  It recomputes every tree node from
scratch in the linear form of kueue-semantics §9 — ``U_cohort = Σ max(0,
U_child - localQuota(child))``, ``max(0, U_n - lq_n) ≤ (S_n - lq_n) + B_n``
where a borrowing limit is set, ``U_root ≤ S_root`` — so that the two
implementations can be held against each other by the tests.

A node that is already over quota before the plan is not the plan's fault;
it is reported only when the plan adds usage of that flavor-resource inside
the node's subtree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from placewise.models.cluster import ResourceQuota
from placewise.models.quantity import is_unlimited
from placewise.models.snapshot import Snapshot
from placewise.models.validate.context import (
    Admitted,
    Context,
    FlavorResource,
    Violation,
    qty,
)
from placewise.models.workload import PodSetAssignment, Workload

NodeId = tuple[str, str]
"""("cq" | "cohort", name): one node of a cohort tree."""
Usage = Mapping[str, Mapping[FlavorResource, int]]
"""ClusterQueue name -> flavor-resource -> units held."""


@dataclass(frozen=True, slots=True)
class Amounts:
    """One node's figures for one flavor-resource (kueue-semantics §2.1)."""

    subtree: int
    """S_n: own nominal plus what the children make visible."""
    usage: int
    """U_n: usage counted against S_n."""
    local: int
    """localQuota(n) = max(0, S_n - lendingLimit): never lent upward."""


def assignment_usage(
    psas: Iterable[PodSetAssignment],
) -> dict[FlavorResource, int]:
    """Quota held by an admission: resourceUsage keyed by assigned flavor."""
    out: dict[FlavorResource, int] = {}
    for psa in psas:
        for r, v in psa.resource_usage.items():
            flavor = psa.flavors.get(r)
            if flavor is not None and v:
                out[(flavor, r)] = out.get((flavor, r), 0) + v
    return out


def add_usage(
    acc: dict[str, dict[FlavorResource, int]],
    cq: str,
    usage: Mapping[FlavorResource, int],
) -> None:
    per = acc.setdefault(cq, {})
    for fr, v in usage.items():
        per[fr] = per.get(fr, 0) + v


def running_usage(
    workloads: Iterable[Workload],
) -> dict[str, dict[FlavorResource, int]]:
    """Per-queue usage of running workloads (inactive queues included)."""
    acc: dict[str, dict[FlavorResource, int]] = {}
    for w in workloads:
        if w.admission is not None:
            add_usage(acc, w.admission.cluster_queue, w.usage())
    return acc


class AuditQuotaTree:
    """The cohort forest of a snapshot, evaluated per flavor-resource."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.children: dict[NodeId, list[NodeId]] = {}
        self.parent: dict[NodeId, NodeId] = {}
        self.roots: list[NodeId] = []
        for name, (cohorts, queues) in sorted(snap.cohort_children.items()):
            if name in snap.cohort_in_cycle:
                continue
            node = ("cohort", name)
            self.children[node] = [("cohort", c) for c in cohorts] + [
                ("cq", q) for q in queues
            ]
            for child in self.children[node]:
                self.parent[child] = node
            if snap.cohorts[name].parent is None:
                self.roots.append(node)
        for name, cq in sorted(snap.cluster_queues.items()):
            if cq.cohort is None:
                self.roots.append(("cq", name))

    def root_of(self, node: NodeId) -> NodeId:
        while node in self.parent:
            node = self.parent[node]
        return node

    def path(self, node: NodeId) -> list[NodeId]:
        """The node and its ancestors, bottom-up."""
        out = [node]
        while out[-1] in self.parent:
            out.append(self.parent[out[-1]])
        return out

    @cached_property
    def queues_under(self) -> dict[NodeId, frozenset[str]]:
        """Every ClusterQueue in the subtree of each node."""
        out: dict[NodeId, frozenset[str]] = {}

        def visit(node: NodeId) -> frozenset[str]:
            if node[0] == "cq":
                found = frozenset({node[1]})
            else:
                found = frozenset().union(*(visit(c) for c in self.children[node]))
            out[node] = found
            return found

        for root in self.roots:
            visit(root)
        return out

    def quota(self, node: NodeId, fr: FlavorResource) -> ResourceQuota | None:
        kind, name = node
        owner = (
            self.snap.cluster_queues.get(name)
            if kind == "cq"
            else self.snap.cohorts.get(name)
        )
        return owner.quota(*fr) if owner is not None else None

    def amounts(
        self, root: NodeId, fr: FlavorResource, usage: Usage, lending: bool = True
    ) -> dict[NodeId, Amounts]:
        """S, U and localQuota of every node of the tree for one fr.

        ``lending=False`` ignores every lendingLimit, to tell whether a
        violation exists only because lending limits keep quota private.
        """
        out: dict[NodeId, Amounts] = {}

        def visit(node: NodeId) -> Amounts:
            q = self.quota(node, fr)
            subtree = q.nominal if q is not None else 0
            used = 0
            if node[0] == "cq":
                used = usage.get(node[1], {}).get(fr, 0)
            for child in self.children.get(node, []):
                a = visit(child)
                subtree += a.subtree - a.local
                used += max(0, a.usage - a.local)
            limit = q.lending_limit if q is not None and lending else None
            local = max(0, subtree - limit) if limit is not None else 0
            out[node] = Amounts(subtree, used, local)
            return out[node]

        visit(root)
        return out


@dataclass(frozen=True, slots=True)
class _Breach:
    node: NodeId
    fr: FlavorResource
    kind: str  # "borrowing-limit" | "root"
    usage: int
    bound: int


def breaches(
    tree: AuditQuotaTree,
    root: NodeId,
    fr: FlavorResource,
    usage: Usage,
    lending: bool = True,
) -> list[_Breach]:
    """Nodes of one tree where the linear form fails for ``fr``."""
    amounts = tree.amounts(root, fr, usage, lending)
    out = []
    for node, a in amounts.items():
        if node == root:
            if not is_unlimited(a.subtree) and a.usage > a.subtree:
                out.append(_Breach(node, fr, "root", a.usage, a.subtree))
            continue
        q = tree.quota(node, fr)
        if q is None or q.borrowing_limit is None:
            continue
        bound = (a.subtree - a.local) + q.borrowing_limit
        if is_unlimited(q.borrowing_limit) or is_unlimited(bound):
            continue
        if max(0, a.usage - a.local) > bound:
            out.append(_Breach(node, fr, "borrowing-limit", a.usage, bound + a.local))
    return out


def admitted_usage(adm: Admitted) -> dict[FlavorResource, int]:
    """Quota an admission takes in its queue.

    Flavor-resources the queue does not offer are left out: they are
    reported as ``eligibility.flavor-not-in-queue`` and would only repeat
    that mistake here as a quota overrun.  Any group covering the resource
    counts as offering it here; which group must serve it is eligibility's
    question (a resource two groups list, ``ClusterQueue.serving_groups``).
    """
    cq = adm.cluster_queue
    if cq is None:
        return {}
    out = {}
    for (flavor, r), v in assignment_usage(adm.entry.pod_set_assignments).items():
        if any(
            r in g.covered_resources and any(fq.name == flavor for fq in g.flavors)
            for g in cq.resource_groups
        ):
            out[(flavor, r)] = v
    return out


def final_usage(
    ctx: Context, keep_victims: bool = False
) -> dict[str, dict[FlavorResource, int]]:
    """Running minus victims plus the plan's admissions, per queue.

    ``keep_victims`` gives the peak instead: everything a queue holds at
    some point while the plan is carried out.  A replaced workload slice
    never counts: its successor's admission holds its quota; nor does a
    moved workload's old place (it is evicted before it is admitted again).
    """
    held = [
        w
        for w in ctx.snap.running
        if w.key not in ctx.replaced and w.key not in ctx.moved
    ]
    acc = running_usage(held if keep_victims else ctx.remaining)
    for adm in ctx.admitted:
        if adm.cluster_queue is not None:
            add_usage(acc, adm.cluster_queue.name, admitted_usage(adm))
    return acc


def check(ctx: Context) -> list[Violation]:
    """Each tree, each flavor-resource: what the plan pushes over quota."""
    tree = AuditQuotaTree(ctx.snap)
    after = final_usage(ctx)
    before = running_usage(ctx.snap.running)
    added: dict[str, dict[FlavorResource, list[str]]] = {}
    for adm in ctx.admitted:
        if adm.cluster_queue is None:
            continue
        per = added.setdefault(adm.cluster_queue.name, {})
        for fr in admitted_usage(adm):
            per.setdefault(fr, []).append(adm.key)
    out: list[Violation] = []
    for root in tree.roots:
        # Only what the plan adds can be its fault (see the module docstring).
        frs = {fr for cq in tree.queues_under[root] for fr in added.get(cq, {})}
        for fr in sorted(frs):
            for b in breaches(tree, root, fr, after):
                culprits = sorted(
                    key
                    for cq in tree.queues_under[b.node]
                    for key in added.get(cq, {}).get(fr, [])
                )
                # Removing usage never breaks the linear form (U is monotone),
                # so a breach the plan adds nothing to was there before it;
                # nor is one the plan leaves no worse at that node (an
                # admission inside a queue's lending-private quota).
                if culprits and _measure(tree, root, b, after) > _measure(
                    tree, root, b, before
                ):
                    out.append(_violation(tree, root, b, culprits, after))
    return out


def _measure(tree: AuditQuotaTree, root: NodeId, b: _Breach, usage: Usage) -> int:
    """What the breached inequality bounds at ``b.node`` under ``usage``."""
    a = tree.amounts(root, b.fr, usage)[b.node]
    return a.usage if b.kind == "root" else max(0, a.usage - a.local)


def _name(node: NodeId) -> str:
    return f"{'ClusterQueue' if node[0] == 'cq' else 'cohort'} {node[1]}"


def _violation(
    tree: AuditQuotaTree, root: NodeId, b: _Breach, culprits: list[str], usage: Usage
) -> Violation:
    flavor, r = b.fr
    over = qty(r, b.usage - b.bound)
    what = f"{r} in flavor {flavor}"
    if b.kind == "borrowing-limit":
        q = tree.quota(b.node, b.fr)
        assert q is not None and q.borrowing_limit is not None
        used = (
            f"usage of {what}"
            if b.node[0] == "cq"
            else (f"{what} its subtree counts against it")
        )
        return Violation(
            "quota.borrowing-limit",
            ", ".join(culprits),
            f"{_name(b.node)}: {used} would be {qty(r, b.usage)}, above "
            f"its quota plus borrowingLimit {qty(r, q.borrowing_limit)} "
            f"({qty(r, b.bound)}) by {over}",
        )
    if b.node[0] == "cq":
        return Violation(
            "quota.nominal",
            ", ".join(culprits),
            f"{_name(b.node)} (no cohort): usage of {what} would be "
            f"{qty(r, b.usage)}, above its nominalQuota {qty(r, b.bound)} by {over}",
        )
    if not any(
        x.node == root and x.kind == "root"
        for x in breaches(tree, root, b.fr, usage, lending=False)
    ):
        return Violation(
            "quota.lending-limit",
            ", ".join(culprits),
            f"{_name(root)}: usage of {what} beyond the queues' private quota "
            f"would be {qty(r, b.usage)} but lendingLimits leave only "
            f"{qty(r, b.bound)} to share, short by {over}",
        )
    return Violation(
        "quota.cohort",
        ", ".join(culprits),
        f"{_name(root)}: usage of {what} across the cohort tree would be "
        f"{qty(r, b.usage)}, above the tree's quota {qty(r, b.bound)} by {over}",
    )
