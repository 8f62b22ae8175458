"""Bookkeeping: every name in the plan refers to the right kind of workload.

These checks come first because the other rule families trust the indexed
views of :class:`~placewise.models.validate.context.Context`; anything dropped from
those views is reported here, once.
"""

from __future__ import annotations

from collections import Counter

from placewise.models.validate.context import Context, Violation


def check(ctx: Context) -> list[Violation]:
    """Pending workloads exactly once; preemptions name running workloads."""
    out: list[Violation] = []
    out += _entries(ctx)
    out += _preemptions(ctx)
    out += _queues(ctx)
    out += _exclusive(ctx)
    return out


def _describe(ctx: Context, key: str) -> str:
    """Why a workload of the instance is not pending, in user terms."""
    w = ctx.snap.workloads[key]
    if w.finished:
        return "it is finished"
    if not w.active:
        return "it is deactivated (spec.active: false)"
    if w.is_running:
        assert w.admission is not None
        return f"it is already running in ClusterQueue {w.admission.cluster_queue}"
    return "it is not pending"


def _entries(ctx: Context) -> list[Violation]:
    out: list[Violation] = []
    pending = {w.key for w in ctx.snap.pending}
    names = [("admissions", a.workload) for a in ctx.plan.admissions] + [
        ("pending", p.workload) for p in ctx.plan.pending
    ]
    for section, key in names:
        if section == "admissions" and key in ctx.moved:
            continue  # a move's re-admission: the moves rules own it
        if key not in ctx.snap.workloads:
            out.append(
                Violation(
                    "bookkeeping.unknown-workload",
                    key,
                    f"listed in {section} but no such Workload is in the instance",
                )
            )
        elif key not in pending:
            out.append(
                Violation(
                    "bookkeeping.not-pending",
                    key,
                    f"listed in {section} but {_describe(ctx, key)}",
                )
            )
    admitted = Counter(a.workload for a in ctx.plan.admissions)
    listed = Counter(p.workload for p in ctx.plan.pending)
    for key in sorted(pending):
        total = admitted[key] + listed[key]
        if total == 0:
            out.append(
                Violation(
                    "bookkeeping.missing",
                    key,
                    "pending workload appears neither in admissions nor in pending",
                )
            )
        elif total > 1:
            out.append(
                Violation(
                    "bookkeeping.duplicate",
                    key,
                    f"must appear exactly once but is in admissions {admitted[key]} "
                    f"time(s) and in pending {listed[key]} time(s)",
                )
            )
    return out


def _preemptions(ctx: Context) -> list[Violation]:
    out: list[Violation] = []
    running = {w.key for w in ctx.snap.running}
    pending = {w.key for w in ctx.snap.pending}
    seen: set[str] = set()
    for pre in ctx.plan.preemptions:
        key = pre.workload
        if key not in ctx.snap.workloads:
            out.append(
                Violation(
                    "bookkeeping.unknown-workload",
                    key,
                    "preempted but no such Workload is in the instance",
                )
            )
        elif key not in running:
            out.append(
                Violation(
                    "bookkeeping.victim-not-running",
                    key,
                    f"preempted but only running workloads can be preempted and "
                    f"{_describe(ctx, key)}",
                )
            )
        elif key in seen:
            out.append(
                Violation(
                    "bookkeeping.victim-duplicate",
                    key,
                    "preempted more than once",
                )
            )
        seen.add(key)
        if pre.preemptor not in pending:
            why = (
                "no such Workload is in the instance"
                if pre.preemptor not in ctx.snap.workloads
                else _describe(ctx, pre.preemptor)
            )
            out.append(
                Violation(
                    "bookkeeping.preemptor",
                    key,
                    f"preemptor {pre.preemptor} must be a pending workload but {why}",
                )
            )
    return out


def _queues(ctx: Context) -> list[Violation]:
    """Admissions go to the workload's own, active, namespace-matching queue."""
    out: list[Violation] = []
    for adm in ctx.admitted:
        w = adm.workload
        if w.key in ctx.moved:
            continue  # stays in its ClusterQueue: a moves rule
        reason = ctx.snap.blocked_reason(w)
        if reason is not None:
            out.append(
                Violation(
                    "bookkeeping.not-admissible",
                    w.key,
                    f"cannot be admitted: {reason}",
                )
            )
            continue
        own = ctx.snap.cluster_queue_of(w)
        if adm.entry.cluster_queue != own:
            out.append(
                Violation(
                    "bookkeeping.cluster-queue",
                    w.key,
                    f"admitted to ClusterQueue {adm.entry.cluster_queue} but its "
                    f"LocalQueue {w.namespace}/{w.queue_name} points to {own}",
                )
            )
    return out


def _exclusive(ctx: Context) -> list[Violation]:
    """At most one copy of a MultiKueue manager Workload is admitted: the
    manager keeps one worker's admission and withdraws every other copy."""
    groups: dict[str, list[str]] = {}
    for adm in ctx.admitted:
        group = adm.workload.exclusive
        if group is not None:
            groups.setdefault(group, []).append(adm.key)
    return [
        Violation(
            "bookkeeping.exclusive",
            keys[1],
            f"copies of {group} admitted {len(keys)} times ({', '.join(keys)}); "
            "a dispatched workload runs in at most one cluster",
        )
        for group, keys in sorted(groups.items())
        if len(keys) > 1
    ]
