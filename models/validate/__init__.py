"""The independent plan validator: is a Plan feasible for a Snapshot?

It is written apart from the solvers on purpose — it shares only the data
model with them and checks the *final* state in the linear form of
kueue-semantics §9 instead of replaying their incremental bookkeeping — so
that the test suite can hold every solver's output against a second,
simpler implementation.  Its quota, capacity and matching arithmetic
(``quota.AuditQuotaTree`` beside ``placewise.solver.kueue.quota.QuotaTree``)
is therefore a second home on purpose, the one exception to "one home per
rule": a bug shared with the solvers would pass unseen.  It reports every
violation, not just the first,
each with a stable rule id (see the family modules for the ids).
"""

from __future__ import annotations

from collections.abc import Callable

from placewise.models.moves import MoveRules
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import (
    bookkeeping,
    capacity,
    eligibility,
    moves,
    podsets,
    preemption,
    quota,
    slices,
    topology,
)
from placewise.models.validate.context import Context, Violation

__all__ = ["RULES", "RULE_FAMILIES", "Violation", "validate"]

RULES: dict[str, str] = {
    "bookkeeping.unknown-workload": "a plan entry names a Workload not in the instance",
    "bookkeeping.not-pending": "an admitted or pending entry is not a pending workload",
    "bookkeeping.missing": "a pending workload is neither admitted nor pending",
    "bookkeeping.duplicate": "a pending workload appears more than once",
    "bookkeeping.victim-not-running": "a preemption names a non-running workload",
    "bookkeeping.victim-duplicate": "a running workload is preempted twice",
    "bookkeeping.preemptor": "a preemptor is not a pending workload",
    "bookkeeping.cluster-queue": "admitted to a queue other than its LocalQueue's",
    "bookkeeping.not-admissible": "admitted although Kueue can never admit it "
    "(inactive queue, namespace mismatch, missing queue, invalid request)",
    "bookkeeping.exclusive": "two copies of one dispatched (MultiKueue) workload "
    "admitted",
    "podsets.names": "podSetAssignments are not the spec pod sets in order",
    "podsets.count": "admitted count outside [minCount or count, count]",
    "podsets.resource-usage": "resourceUsage is not per-pod requests x count (+pods)",
    "eligibility.uncovered-resource": "a requested resource the queue does not cover",
    "eligibility.missing-flavor": "a requested resource has no flavor",
    "eligibility.flavor-not-in-queue": "a flavor the resource's group does not offer",
    "eligibility.resource-group": "two flavors within one resource group",
    "eligibility.node-labels": "nodeSelector/affinity excludes the flavor's labels",
    "eligibility.taints": "an untolerated NoSchedule/NoExecute flavor taint",
    "eligibility.tas": "TAS request and TAS flavor disagree, or several TAS flavors",
    "eligibility.topology-levels": "a requested level missing or slices not nested",
    "quota.nominal": "a standalone queue over its nominalQuota",
    "quota.borrowing-limit": "a queue or cohort over its quota plus borrowingLimit",
    "quota.cohort": "a cohort tree over its total quota",
    "quota.lending-limit": "a cohort tree over the quota its lendingLimits share",
    "topology.missing": "a pod set on a TAS flavor without topologyAssignment",
    "topology.unexpected": "a topologyAssignment without a TAS flavor",
    "topology.levels": "assignment levels are not Kueue's for the Topology",
    "topology.count": "domain counts not positive or not summing to the count",
    "topology.domain": "a domain that is not a usable leaf of the flavor",
    "topology.node-filter": "a hostname leaf the pod's taints/selector/affinity reject",
    "topology.required-level": "a required level spanned by more than one domain",
    "topology.slices": "a slice-level domain holding a partial slice",
    "capacity.node": "a node over allocatable after the plan",
    "capacity.domain": "a pooled (non-hostname) leaf over allocatable",
    "slice.not-replaced": "a scale-up slice admitted beside the running slice it "
    "replaces",
    "slice.replaces": "replaces a workload that is not the admission's running "
    "slice, or one the plan also preempts or replaces twice",
    "slice.flavor": "a scale-up slice moves a resource off its old slice's flavor",
    "slice.pods-moved": "a scale-up slice drops pods or topology domains its old "
    "slice placed",
    "preemption.policy": "the preemptor's queue policy forbids this victim",
    "preemption.protected": "a victim the caller marked not preemptible",
    "preemption.scope": "a victim outside the preemptor's cohort tree, in an "
    "inactive queue, or a preemptor that cannot be admitted",
    "preemption.not-borrowing": "a reclaimed queue (or cohort) is within its quota",
    "preemption.no-shared-resource": "victim and preemptor share no flavor-resource",
    "preemption.reason": "the reason contradicts the queues or their policy",
    "preemption.fair-sharing": "under fair sharing, a victim in another queue that "
    "neither the preemptor's nominal quota nor a configured strategy justifies",
    "preemption.unneeded": "with the victim back, its admitted preemptor still has "
    "room and quota (Kueue's fill-back would keep it)",
    "preemption.room-elsewhere": "a victim's freed room on a leaf serves a "
    "ClusterQueue that may not preempt it",
    "moves.not-running": "a move names a workload that is not running",
    "moves.duplicate": "a workload moved, or admitted again, more than once",
    "moves.preempted": "a moved workload is also preempted",
    "moves.no-admission": "a moved workload has no new admission",
    "moves.cluster-queue": "a moved workload admitted to another ClusterQueue",
    "moves.not-movable": "the move policy does not let the workload move",
    "moves.hosts": "from/to are not its hosts before and after",
    "moves.lost-work": "lostGpuHours is not its GPUs x how long it has run",
    "moves.budget": "more moves or lost GPU-hours than the budget allows",
    "moves.unneeded": "with the workload back, every admission still has room",
}
"""Every rule id the validator reports, with what it means."""

RULE_FAMILIES: tuple[tuple[str, Callable[[Context], list[Violation]]], ...] = (
    ("bookkeeping", bookkeeping.check),
    ("podsets", podsets.check),
    ("eligibility", eligibility.check),
    ("quota", quota.check),
    ("topology", topology.check),
    ("capacity", capacity.check),
    ("slice", slices.check),
    ("preemption", preemption.check),
    ("moves", moves.check),
)
"""Rule families in report order: structure first, then resources, then policy."""


def validate(
    snapshot: Snapshot, plan: Plan, rules: MoveRules | None = None
) -> list[Violation]:
    """Every way ``plan`` is infeasible for ``snapshot``; empty when feasible.
    ``rules``: the move policy the plan was made under (its budget and
    movability rules are then checked too)."""
    ctx = Context(snapshot, plan, rules)
    out: list[Violation] = []
    for _, check in RULE_FAMILIES:
        out += check(ctx)
    return out
