"""Who may evict whom, aggregated by preemptor class.

The validator's rule is per pair: a victim needs an admitted preemptor its
queue's policy allows, sharing a flavor-resource the plan takes, and for a
reclaim from another queue that queue (and every cohort up to the common
ancestor) must borrow on it; when borrowWithinCohort does not allow the
pair, the preemptor must end within its nominal quota.  Everything in that
rule except the priority relation depends only on the two queues and the
flavor-resources, so pending workloads are grouped into **preemptor
classes** (queue, priority, candidate flavor-resources) and a victim is
linked to the classes it may be evicted by — 1,720 victims x 2,000 pending
workloads is 578k pairs at 10,000 hosts, but a few thousand class links.
Only LowerOrNewerEqualPriority between equal priorities depends on queue
times; there a class is cut to the members queued before the victim.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from placewise.solver.kueue.preemption import (
    may_reclaim_while_borrowing,
    satisfies_policy,
)
from placewise.solver.kueue.quota import FR, QuotaNode
from placewise.solver.kueue.workload import WlInfo
from placewise.solver.problem.data import ModelData, WorkloadData, candidate_frs


class Pair(NamedTuple):
    """Some pending workloads of one class that may evict a running one."""

    members: tuple[int, ...]
    """Workload indices, in Kueue's queue order."""
    frs: frozenset[FR]
    """Shared flavor-resources on which the victim's queue (and every
    cohort up to the common ancestor) already borrows."""
    need_nominal: bool
    """borrowWithinCohort does not allow it: the preemptor must end within
    its nominal quota."""
    dynamic: frozenset[FR] = frozenset()
    """Shared flavor-resources on which only the victim's queue is not yet
    borrowing: valid if the plan's admissions into that queue make it
    borrow (the validator judges borrowing at the plan's peak usage)."""


def _borrowing(node: QuotaNode, fr: FR) -> bool:
    return node.usage.get(fr, 0) > node.subtree.get(fr, 0)


def _path(node: QuotaNode) -> list[QuotaNode]:
    out = [node]
    while out[-1].parent is not None:
        out.append(out[-1].parent)
    return out


def add_pairs(data: ModelData) -> None:
    """Fill ``data.pairs``: victim -> the classes (or class prefixes) that may
    evict it, with the flavor-resources and conditions of each link."""
    tree, snap = data.tree, data.snapshot
    frs_of = [frozenset(candidate_frs(data, wd)) for wd in data.workloads]
    admits_into = _could_start_borrowing(data, frs_of)
    classes: dict[tuple[str, int, frozenset[FR]], list[WorkloadData]] = defaultdict(
        list
    )
    for wd in data.workloads:
        classes[(wd.cq.name, wd.info.priority, frs_of[wd.idx])].append(wd)
    for members in classes.values():
        members.sort(key=lambda wd: (wd.info.queue_ts, wd.info.uid, wd.key))
    times = {
        key: [wd.info.queue_ts for wd in members] for key, members in classes.items()
    }
    all_frs = frozenset().union(*frs_of) if frs_of else frozenset()
    by_priority: dict[tuple[object, ...], tuple[int, ...]] = {}
    """Allowed members per (class, victim priority, policy) when queue times
    play no part (every policy but LowerOrNewerEqualPriority at equal
    priority): one policy check per class and priority, not per victim."""
    reach_cache: dict[tuple[str, str], tuple[frozenset[FR], frozenset[FR]] | None] = {}

    def reach(vcq: str, wcq: str) -> tuple[frozenset[FR], frozenset[FR]] | None:
        """For a victim's queue and another queue of its tree: the frs on
        which every node from the victim's queue up to (excluding) the common
        ancestor borrows already, and those on which only the victim's queue
        does not yet but the plan's admissions could make it; None outside
        one tree."""
        key = (vcq, wcq)
        if key not in reach_cache:
            mine, theirs = _path(tree.node(wcq)), _path(tree.node(vcq))
            lca = next((n for n in theirs if n in mine), None)
            if lca is None or len(theirs) == 1:
                reach_cache[key] = None
            else:
                nodes = theirs[: theirs.index(lca)]
                static = frozenset(
                    fr for fr in all_frs if all(_borrowing(n, fr) for n in nodes)
                )
                dynamic = frozenset(
                    fr
                    for fr in all_frs - static
                    if all(_borrowing(n, fr) for n in nodes[1:])
                    and (vcq, fr) in admits_into
                )
                reach_cache[key] = (static, dynamic)
        return reach_cache[key]

    for v in data.victims:
        vcq = v.info.cq
        if not snap.is_active(vcq):
            continue
        for key, members in classes.items():
            wcq, priority, cand = key
            frs = cand & v.info.frs
            if not frs:
                continue
            cq = members[0].cq
            same = vcq == wcq
            borrowing = None if same else reach(vcq, wcq)
            if not same and borrowing is None:
                continue
            policy = (
                cq.preemption.within_cluster_queue
                if same
                else cq.preemption.reclaim_within_cohort
            )
            memo = (key, v.info.priority, policy)
            if memo in by_priority:
                allowed = by_priority[memo]
            else:
                allowed = _allowed(members, times[key], v.info, policy)
                if not _time_dependent(members, v.info, policy):
                    by_priority[memo] = allowed
            if not allowed:
                continue
            if same:
                data.pairs.setdefault(v.idx, []).append(Pair(allowed, frs, False))
                continue
            if snap.fair_sharing.enable:
                # Fair sharing replaces the classical reclaim rules with
                # strategies judged on the final shares; the model offers no
                # cross-queue eviction then (never an unfair one).
                continue
            assert borrowing is not None
            ok, dyn = frs & borrowing[0], frs & borrowing[1]
            if not ok and not dyn:
                continue
            borrow_ok = may_reclaim_while_borrowing(
                cq.preemption.borrow_within_cohort, priority, v.info.priority
            )
            data.pairs.setdefault(v.idx, []).append(
                Pair(allowed, ok, not borrow_ok, dyn)
            )


def _allowed(
    members: list[WorkloadData], times: list[datetime], victim: WlInfo, policy: str
) -> tuple[int, ...]:
    """The class members the policy lets evict ``victim``: all or none, except
    LowerOrNewerEqualPriority at equal priority (members queued earlier)."""
    first = members[0].info
    if satisfies_policy(first, victim, policy) and satisfies_policy(
        members[-1].info, victim, policy
    ):
        return tuple(wd.idx for wd in members)
    if policy == "LowerOrNewerEqualPriority" and first.priority == victim.priority:
        cut = bisect.bisect_left(times, victim.queue_ts)
        return tuple(wd.idx for wd in members[:cut])
    return ()


def _time_dependent(members: list[WorkloadData], victim: WlInfo, policy: str) -> bool:
    return (
        policy == "LowerOrNewerEqualPriority"
        and members[0].info.priority == victim.priority
    )


def _could_start_borrowing(
    data: ModelData, frs_of: list[frozenset[FR]]
) -> set[tuple[str, FR]]:
    """(queue, fr) where the plan's admissions could make a queue that does
    not borrow yet borrow: running usage plus everything its free workloads
    could add exceeds nominal."""
    potential: dict[tuple[str, FR], int] = defaultdict(int)
    for wd in data.workloads:
        for fr in frs_of[wd.idx]:
            potential[(wd.cq.name, fr)] += sum(
                data.pod_sets[p].requests.get(fr[1], 0) * data.pod_sets[p].count
                for p in wd.pod_sets
            )
    return {
        (cq, fr)
        for (cq, fr), most in potential.items()
        if data.base_usage.get(cq, {}).get(fr, 0) + most
        > data.tree.node(cq).nominal.get(fr, 0)
    }
