"""Who may preempt whom under a ClusterQueue's preemption policy."""

from __future__ import annotations

from collections.abc import Iterable

from placewise.models.cluster import BorrowWithinCohort
from placewise.solver.kueue.quota import FR
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


def satisfying_policy(
    preemptor: WlInfo,
    candidates: Iterable[WlInfo],
    policy: str,
    frs_need: frozenset[FR] | None = None,
) -> list[WlInfo]:
    """The candidates that :func:`satisfies_policy` admits, in order; with
    ``frs_need``, only preemptible ones holding one of those flavor-resources.

    The same rule, one comprehension per policy (the filters fused in it): a
    preemption search at scale asks it for every running workload of every
    queue it visits.
    """
    prio, ts = preemptor.priority, preemptor.queue_ts
    if frs_need is not None:
        if policy == "LowerPriority":
            return [
                c
                for c in candidates
                if prio > c.priority
                and c.preemptible
                and not c.frs.isdisjoint(frs_need)
            ]
        if policy == "LowerOrNewerEqualPriority":
            return [
                c
                for c in candidates
                if (prio > c.priority or (prio == c.priority and ts < c.queue_ts))
                and c.preemptible
                and not c.frs.isdisjoint(frs_need)
            ]
        if policy != "Any":
            return []
        return [
            c for c in candidates if c.preemptible and not c.frs.isdisjoint(frs_need)
        ]
    if policy == "LowerPriority":
        return [c for c in candidates if prio > c.priority]
    if policy == "LowerOrNewerEqualPriority":
        return [
            c
            for c in candidates
            if prio > c.priority or (prio == c.priority and ts < c.queue_ts)
        ]
    return list(candidates) if policy == "Any" else []


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
