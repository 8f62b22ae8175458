"""Who may preempt whom under a ClusterQueue's preemption policy."""

from __future__ import annotations

from placewise.models.cluster import BorrowWithinCohort
from placewise.solver.kueue.workload import WlInfo


def satisfies_policy(preemptor: WlInfo, candidate: WlInfo, policy: str) -> bool:
    """kueue-semantics §5.1 (``SatisfiesPreemptionPolicy``): Never, LowerPriority,
    LowerOrNewerEqualPriority or Any, applied to one candidate."""
    lower = preemptor.priority > candidate.priority
    if policy == "LowerPriority":
        return lower
    if policy == "LowerOrNewerEqualPriority":
        return lower or (
            preemptor.priority == candidate.priority
            and preemptor.queue_ts < candidate.queue_ts
        )
    return policy == "Any"


def may_reclaim_while_borrowing(
    bwc: BorrowWithinCohort, preemptor_priority: int, victim_priority: int
) -> bool:
    """borrowWithinCohort: a preemptor that borrows may still evict another
    queue's workload when the policy is LowerPriority, the victim's priority
    is below its own and not above ``maxPriorityThreshold`` (§5.1)."""
    threshold = bwc.max_priority_threshold
    return (
        bwc.policy == "LowerPriority"
        and victim_priority < preemptor_priority
        and (threshold is None or victim_priority <= threshold)
    )
