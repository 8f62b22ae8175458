"""Every victim needed, its room serving who may take it: Kueue's fill-back on a plan.

Kueue removes preemption candidates until the preemptor fits, then fills
back every one it can do without; the room it frees goes to that preemptor.
A joint solve decides victims and admissions at once and credits each victim
to *some* admitted workload its policy allows, so it can evict a victim that
no admitted workload needs, or let another queue's gang take the room an
in-queue eviction freed (the live soak's flip-flops).  This pass holds every
solver's plan to the two validator rules ``preemption.unneeded`` and
``preemption.room-elsewhere``, in the order that costs least:

1. **Fill back**: a victim whose return breaks nothing keeps running (more
   GPUs run; no tier can lose).
2. **Credit** it to an admitted workload that does need it (the plan is
   unchanged, only who is named).
3. **Withdraw** the admissions of queues that took room they may not take,
   then fill the victim back where it fits; failing that, fill it back and
   withdraw whatever its return crowds out.  Such a workload waits for the
   next solve, which sees the cluster as it then is.
4. **No orphans**: a withdrawn admission may have been a preemptor itself;
   its victims would be evicted for a workload this plan no longer admits —
   work thrown away for nothing, and a plan the optimizer's model cannot
   express (its warm start then went cold).  Each comes back where that
   breaks nothing, else is credited to an admission that needs it.

The validator is the oracle: the pass changes the plan one victim at a time
and keeps a change only when it leaves that victim's violations resolved and
adds none.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator

from placewise.models.cluster import HOSTNAME_LABEL
from placewise.models.plan import Plan, PlanPending, PlanPreemption, PreemptionReason
from placewise.models.snapshot import Snapshot
from placewise.models.validate import Violation, preemption, validate
from placewise.models.validate.context import Context
from placewise.models.workload import PodSetAssignment, Workload

log = logging.getLogger("placewise")

RULES = frozenset({"preemption.unneeded", "preemption.room-elsewhere"})
WITHDRAWN = (
    "waits: the room it was planned on was freed by an eviction for another "
    "ClusterQueue's workload"
)
MAKE_ROOM_ROUNDS = 8
"""Rounds of withdrawing what a returned victim crowds out (each round takes
every admission the validator names)."""
RECREDIT_TRIES = 8
"""Admissions tried as the victim's preemptor before withdrawing any."""


def settle_preemptions(snapshot: Snapshot, plan: Plan) -> Plan:
    """``plan`` with every victim needed by its credited preemptor."""
    if not plan.preemptions:
        return plan
    found = validate(snapshot, plan)
    flagged = _victims(found)
    if not flagged:
        return plan
    baseline = _others(found)
    running = {w.key: w for w in snapshot.running}
    admitted = {a.workload for a in plan.admissions}
    settled: set[str] = set()
    # Highest priority first: the victims whose eviction costs most come back
    # first.  Settling one may leave another unneeded (a withdrawn admission
    # frees room its preemptor then fits in): each victim flagged on the way
    # is settled too, once.
    while left := _victims(found) - settled:
        key = min(left, key=lambda k: (-running[k].priority, k))
        plan, found = _settle_one(snapshot, plan, key, running, baseline)
        baseline = _others(found)
        settled.add(key)
    plan, found = _orphans(snapshot, plan, found, admitted, running)
    left = _victims(found)
    if left:  # never expected: say so rather than hide it
        log.warning("preemptions still unneeded after settling: %s", sorted(left))
    return plan


def _settle_one(
    snapshot: Snapshot,
    plan: Plan,
    key: str,
    running: dict[str, Workload],
    baseline: set[str],
) -> tuple[Plan, list[Violation]]:
    current = next((p for p in plan.preemptions if p.workload == key), None)
    if current is None:
        return plan, validate(snapshot, plan)
    victim = running[key]
    restored = _without_victim(plan, key)
    found = validate(snapshot, restored)
    if key not in _victims(found) and _others(found) <= baseline:
        return restored, found
    recredited = _recredited(snapshot, plan, current, victim)
    if recredited is not None:
        return recredited, validate(snapshot, recredited)
    for candidate in _withdrawals(plan, current, victim):
        found = validate(snapshot, candidate)
        if key not in _victims(found) and _others(found) <= baseline:
            return candidate, found
    return _make_room(snapshot, restored, baseline)


def _orphans(
    snapshot: Snapshot,
    plan: Plan,
    found: list[Violation],
    admitted: set[str],
    running: dict[str, Workload],
) -> tuple[Plan, list[Violation]]:
    """``plan`` with no victim credited to a preemptor that settling
    withdrew (one ``admitted`` before it): each back where its return adds
    no violation, else credited to another admission that needs it, else
    left (and logged).  Preemptors the input plan did not admit are left
    alone: Kueue may evict for a workload it admits in a later cycle."""
    now = {a.workload for a in plan.admissions}
    orphans = [p for p in plan.preemptions if p.preemptor in admitted - now]
    orphans.sort(key=lambda p: (-running[p.workload].priority, p.workload))
    for pre in orphans:
        restored = _without_victim(plan, pre.workload)
        got = validate(snapshot, restored)
        if _others(got) <= _others(found) and _victims(got) <= _victims(found):
            plan, found = restored, got
            continue
        recredited = _recredited(snapshot, plan, pre, running[pre.workload])
        if recredited is not None:
            plan, found = recredited, validate(snapshot, recredited)
        else:
            log.warning(
                "%s stays evicted for %s, which the settled plan does not admit",
                pre.workload,
                pre.preemptor,
            )
    return plan, found


def _make_room(
    snapshot: Snapshot, plan: Plan, baseline: set[str]
) -> tuple[Plan, list[Violation]]:
    """The victim back, and every admission its return crowds out (named by
    the capacity and quota rules) withdrawn; a victim whose policy its
    preemptor's new usage breaks (it would now borrow) is put back too.
    Each round only withdraws admissions or puts victims back, so it ends —
    at worst where nothing the plan added is left to conflict."""
    for _ in range(MAKE_ROOM_ROUNDS):
        found = validate(snapshot, plan)
        admitted = {a.workload for a in plan.admissions}
        evicted = {p.workload for p in plan.preemptions}
        new = [v for v in found if str(v) not in baseline and v.rule not in RULES]
        crowded = {
            k
            for v in new
            if v.rule.startswith(("capacity.", "quota."))
            for k in v.workload.split(", ")
            if k in admitted
        }
        back = {
            v.workload
            for v in new
            if v.rule.startswith("preemption.") and v.workload in evicted
        }
        if not crowded and not back:
            return plan, found
        plan = _withdraw(plan, sorted(crowded))
        for key in sorted(back):
            plan = _without_victim(plan, key)
    return plan, validate(snapshot, plan)


def _recredited(
    snapshot: Snapshot, plan: Plan, pre: PlanPreemption, victim: Workload
) -> Plan | None:
    """The first of :func:`_recredits` under which the preemption rules
    accept the victim, or None.  Who is named changes nothing but those
    rules, so only they are checked."""
    credits: preemption.Credits | None = None
    for candidate in _recredits(snapshot, plan, pre, victim):
        if credits is None:
            credits = preemption.Credits(Context(snapshot, plan))
        credit = next(p for p in candidate.preemptions if p.workload == victim.key)
        if not credits.check(victim, credit):
            return candidate
    return None


def _recredits(
    snapshot: Snapshot, plan: Plan, pre: PlanPreemption, victim: Workload
) -> Iterator[Plan]:
    """The plan with the victim credited to another admission that may need
    it: one on its hosts, else one of its queue (quota), nearest first."""
    assert victim.admission is not None
    vcq = victim.admission.cluster_queue
    hosts = _domains(victim.admission.pod_set_assignments)
    moved = _moved(plan)
    near = [
        a
        for a in plan.admissions
        if a.workload != pre.preemptor
        and a.workload not in moved
        and (_domains(a.pod_set_assignments) & hosts or a.cluster_queue == vcq)
    ]
    near.sort(key=lambda a: (not _domains(a.pod_set_assignments) & hosts, a.workload))
    fair = snapshot.fair_sharing.enable
    for adm in near[:RECREDIT_TRIES]:
        if adm.cluster_queue == vcq:
            reasons: tuple[PreemptionReason, ...] = ("InClusterQueue",)
        elif fair:
            reasons = ("InCohortFairSharing", "InCohortReclamation")
        else:
            reasons = ("InCohortReclamation", "InCohortReclaimWhileBorrowing")
        for reason in reasons:
            yield _recredit(plan, pre, adm.workload, reason)


def _withdrawals(plan: Plan, pre: PlanPreemption, victim: Workload) -> Iterator[Plan]:
    """The plan without the other queues' admissions on the victim's hosts
    (its preemptor's aside), with the victim back if it then fits, else still
    evicted."""
    assert victim.admission is not None
    vcq = victim.admission.cluster_queue
    hosts = _domains(victim.admission.pod_set_assignments)
    moved = _moved(plan)
    foreign = [
        a.workload
        for a in plan.admissions
        if a.workload != pre.preemptor
        and a.workload not in moved
        and a.cluster_queue != vcq
        and _domains(a.pod_set_assignments) & hosts
    ]
    if foreign:
        yield _without_victim(_withdraw(plan, foreign), pre.workload)
        yield _withdraw(plan, foreign)


def _without_victim(plan: Plan, key: str) -> Plan:
    return plan.model_copy(
        update={"preemptions": tuple(p for p in plan.preemptions if p.workload != key)}
    )


def _recredit(
    plan: Plan, pre: PlanPreemption, to: str, reason: PreemptionReason
) -> Plan:
    new = pre.model_copy(update={"preemptor": to, "reason": reason})
    return plan.model_copy(
        update={
            "preemptions": tuple(
                new if p.workload == pre.workload else p for p in plan.preemptions
            )
        }
    )


def _moved(plan: Plan) -> set[str]:
    """Running workloads the plan moves: their re-admission is no pending
    workload's to withdraw, nor a preemptor to credit (moves are left alone)."""
    return {m.workload for m in plan.moves}


def _withdraw(plan: Plan, keys: list[str]) -> Plan:
    gone = set(keys) - _moved(plan)
    return plan.model_copy(
        update={
            "admissions": tuple(a for a in plan.admissions if a.workload not in gone),
            "pending": (
                *plan.pending,
                *(
                    PlanPending(
                        workload=a.workload, reason=WITHDRAWN, cluster=a.cluster
                    )
                    for a in plan.admissions
                    if a.workload in gone
                ),
            ),
        }
    )


def _victims(found: list[Violation]) -> set[str]:
    return {v.workload for v in found if v.rule in RULES}


def _others(found: list[Violation]) -> set[str]:
    return {str(v) for v in found if v.rule not in RULES}


def _domains(psas: Iterable[PodSetAssignment]) -> set[tuple[str, ...]]:
    """The topology domains (usually hosts) an admission's pods are on."""
    out: set[tuple[str, ...]] = set()
    for psa in psas:
        ta = psa.topology_assignment
        if ta is None:
            continue
        hostname = bool(ta.levels) and ta.levels[-1] == HOSTNAME_LABEL
        out.update(d.values[-1:] if hostname else d.values for d in ta.domains)
    return out
