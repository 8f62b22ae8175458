"""Kueue's scheduling cycle (kueue-semantics §3), run until quiescence.

Algorithm overview (``scheduler.go: schedule``), per cycle:
  1. heads: pop one workload from every active ClusterQueue;
  2. nominate: flavor assignment (+ partial admission, + preemption
     targets) of every head against the same state;
  3. order: not borrowing first, then borrowing level, priority, time;
  4. process in that order against the mutating state (fit re-check,
     overlapping victims, reservations), admitting or issuing preemptions;
  5. requeue the rest; at the end of the cycle evictions complete, which
     notifies the victims' cohort trees so parked workloads are retried.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment
from placewise.solver.greedy.collector import collector_paused
from placewise.solver.greedy.flavors import Assignment
from placewise.solver.greedy.modes import Mode
from placewise.solver.greedy.nomination import Nomination
from placewise.solver.greedy.preemption import Preemptor, Target
from placewise.solver.greedy.queues import PendingQueue, Requeue
from placewise.solver.greedy.reserve import Hold, find_hold
from placewise.solver.greedy.slices import (
    old_slice,
    unsupported,
)
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.afs import AfsLedger, applies
from placewise.solver.kueue.fairsharing import Contender, tournament
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.workload import TasUsage, WlInfo, admission_frs
from placewise.solver.policy import Policy
from placewise.solver.reservation import Reservation

log = logging.getLogger("placewise.greedy")


class Status(Enum):
    NOMINATED = "nominated"
    SKIPPED = "skipped"
    ASSUMED = "assumed"
    PREEMPTING = "preempting"
    FAILED = "failed"


@dataclass(slots=True, eq=False)
class Entry:
    info: WlInfo
    assignment: Assignment
    targets: list[Target]
    status: Status = Status.NOMINATED
    requeue: Requeue = Requeue.NO_FIT
    message: str = ""
    refused: list[str] = field(default_factory=list)
    """Why fair sharing refused the victims it considered, if it did."""
    old: WlInfo | None = None
    """The running slice this elastic slice replaces (:mod:`.slices`)."""


@dataclass(slots=True)
class Outcome:
    """What the run decided, by workload key."""

    admitted: dict[str, tuple[str, tuple[PodSetAssignment, ...]]] = field(
        default_factory=dict
    )
    preempted: dict[str, tuple[str, str]] = field(default_factory=dict)
    """victim -> (preemptor, reason)."""
    reasons: dict[str, str] = field(default_factory=dict)
    cycles: int = 0
    replaced: dict[str, str] = field(default_factory=dict)
    """admitted elastic slice -> the running slice it replaced."""
    reservation: Reservation | None = None
    """The room the run held for a starving workload (:mod:`.reserve`)."""
    took_back: int | None = None
    """The first cycle that preempted a workload this run had admitted."""


_STARTED = (Status.ASSUMED, Status.PREEMPTING)


def _classical_key(e: Entry) -> tuple[object, ...]:
    """Kueue's classical entry order (§3.3), queue and UID making it total."""
    return (
        e.assignment.borrowing,
        -e.info.priority,
        e.info.queue_ts.timestamp(),
        e.info.cq,
        e.info.uid,
    )


Signature = tuple[
    frozenset[str],
    frozenset[str],
    frozenset[tuple[str, frozenset[str], frozenset[str], str | None]],
]
"""The state the next cycles are a function of (see ``_signature``)."""


class GreedyScheduler(Nomination):
    def __init__(
        self, snapshot: Snapshot, hold_room: bool = True, policy: Policy | None = None
    ) -> None:
        self.snapshot = snapshot
        self.policy = policy
        """Its ``starvation_minutes`` reserves room (:mod:`.reserve`); None
        replays Kueue, which reserves nothing."""
        self.reserved: Hold | None = None
        self.hold_room = hold_room
        """Hold the room of completed evictions for their preemptors (see
        :meth:`_take_hold`); False replays Kueue's own cycles, which may hand
        it to another queue."""
        self.state = ClusterState(snapshot)
        self.preemptor = Preemptor(self.state)
        self.fair = snapshot.fair_sharing.enable
        self.queues: dict[str, PendingQueue] = {}
        self.outcome = Outcome()
        self._temp: list[tuple[str, dict[FR, int], list[TasUsage]]] = []
        self._refused: list[str] = []
        self._fresh: list[WlInfo] = []
        """Admitted this cycle: their usage counts at once, but as in Kueue's
        snapshot they become preemption candidates only next cycle."""
        self._holding: dict[str, tuple[str, Assignment]] = {}
        """Preemptors of this cycle and the placement their victims free."""
        self._holds: dict[str, tuple[str, Assignment]] = {}
        """Room of completed evictions, held (in the state) for their
        preemptors: the next cycles may not hand it to anyone else."""
        ledger = AfsLedger.of(snapshot)
        for name, cq in sorted(snapshot.cluster_queues.items()):
            if snapshot.is_active(name):
                usage_based = ledger is not None and applies(cq)
                self.queues[name] = PendingQueue(cq, ledger if usage_based else None)
        for w in snapshot.pending:
            cq_name = snapshot.cluster_queue_of(w)
            reason = snapshot.blocked_reason(w) or unsupported(snapshot, w)
            if cq_name in self.queues and (
                reason is None or reason.startswith(("namespace", "pod set"))
            ):
                self.queues[cq_name].push(WlInfo(obj=w, cq=cq_name))
            else:
                self.outcome.reasons[w.key] = reason or "not queued"

    # -- run -------------------------------------------------------------------

    @collector_paused
    def run(self, max_cycles: int | None = None) -> Outcome:
        limit = max_cycles if max_cycles is not None else 1_000_000
        seen: dict[int, list[Signature]] = {}
        if self.policy is not None:
            self.reserved = find_hold(self, self.policy)
            if self.reserved is not None:
                self.outcome.reservation = self.reserved.reservation()
        while self.outcome.cycles < limit:
            self.outcome.cycles += 1
            if not self.cycle():
                break
            sig = self._signature()
            earlier = seen.setdefault(hash(sig), [])
            if sig in earlier:
                self._flapping()
                break
            earlier.append(sig)
        self._explain_unattempted()
        if self.reserved is not None:
            self.reserved.release(self)
            self.reserved.explain(self.outcome.reasons)
        return self.outcome

    def _signature(self) -> Signature:
        """Everything the next cycles depend on: who was admitted or evicted in
        this run, and every queue's content (the cluster state follows)."""
        # Per queue: its active keys (those also parked count as parked, as
        # they did when every key was one tuple), parked keys, and the sticky
        # key if queued; key sets hash their cached strings only.
        queues = frozenset(
            (
                name,
                frozenset(q.active.keys() - q.parked.keys()),
                frozenset(q.parked),
                q.sticky if q.sticky in q.active or q.sticky in q.parked else None,
            )
            for name, q in self.queues.items()
            if q.active or q.parked
        )
        return (
            frozenset(self.outcome.admitted),
            frozenset(self.outcome.preempted),
            queues,
        )

    def _flapping(self) -> None:
        """Kueue would repeat the same cycles forever (an admission that a
        preemption in the next cycle takes back, e.g. by fair sharing): the
        run stops where it stands, and says so."""
        log.warning(
            "greedy: cycle %d repeats an earlier state (admissions and "
            "preemptions alternate, as Kueue's would); stopping there",
            self.outcome.cycles,
        )
        for key in self.outcome.preempted.values():
            self.outcome.reasons[key[0]] = (
                self.outcome.reasons.get(key[0], "pending")
                + " (Kueue's cycles would repeat from here: what it admits is "
                "preempted again in a later cycle)"
            )

    def cycle(self) -> bool:
        """One scheduling cycle; False when nothing changed (quiescence)."""
        heads = [(q, h) for q in self.queues.values() if (h := q.pop()) is not None]
        if not heads:
            return False
        entries: list[Entry] = []
        progress = False
        for queue, info in heads:
            blocked = self.snapshot.blocked_reason(info.obj)
            if blocked is not None:
                self.outcome.reasons[info.key] = blocked
                reason = (
                    Requeue.NAMESPACE_MISMATCH
                    if blocked.startswith("namespace")
                    else Requeue.NO_FIT
                )
                progress |= queue.requeue(info, reason)
                continue
            self._refused = []
            held = self._holds.get(info.key)
            targets: list[Target] = []
            if held is not None:
                assignment = held[1]
                assignment.forced = Mode.FIT
            else:
                if self.reserved is not None:
                    self.reserved.show_to(self, info)
                assignment, targets = self.get_assignments(info)
            old = old_slice(self.snapshot, self.state, info)
            entries.append(
                Entry(info, assignment, targets, refused=self._refused, old=old)
            )
        entries.sort(key=_classical_key)
        preempted: dict[str, WlInfo] = {}
        ordered = self._fair_order(entries) if self.fair else iter(entries)
        for e in ordered:
            hold = self.reserved
            if hold is not None:
                hold.show_to(self, e.info)
            progress |= self.process(e, preempted)
            if hold is not None and e.info.key == hold.key and e.status in _STARTED:
                hold.release(self)  # it runs (or its victims free its room)
                self.reserved = None
        for e in entries:
            if e.status not in (Status.ASSUMED,):
                self.outcome.reasons[e.info.key] = e.message or "pending"
                queue = self.queues[e.info.cq]
                parked = queue.requeue(e.info, e.requeue)
                progress |= parked
                if parked and e.requeue in (Requeue.NO_FIT, Requeue.NO_CANDIDATES):
                    for twin in queue.park_equivalent(e.info):
                        self.outcome.reasons[twin.key] = (
                            f"{e.message} (same shape as {e.info.key})"
                        )
        self._end_cycle(preempted)
        return progress

    def _end_cycle(self, victims: dict[str, WlInfo]) -> None:
        """Drop snapshot-only usage; evictions complete; notify their trees."""
        for cq, usage, tas in reversed(self._temp):
            self.state.remove_usage(cq, usage, tas)
        self._temp.clear()
        for info in self._fresh:
            self.state.add(info)
        self._fresh.clear()
        roots = set()
        for info in victims.values():
            self.state.remove(info)
        for key, (cq, asg) in self._holding.items():
            self.state.add_usage(cq, asg.quota_usage(), asg.tas_usage)
            self._holds[key] = (cq, asg)
        self._holding.clear()
        for info in victims.values():
            roots.add(self.state.quota.root(info.cq).id)
            if info.key in self.outcome.admitted:
                # Admitted earlier in this run, evicted now: Kueue requeues
                # it (keeping its creation time); for the plan it is pending.
                if self.outcome.took_back is None:
                    self.outcome.took_back = self.outcome.cycles
                del self.outcome.admitted[info.key]
                by = self.outcome.preempted.pop(info.key, None)
                old = self.outcome.replaced.pop(info.key, None)
                if old is not None and by is not None:
                    # The slice it replaced is finished: for the plan, that
                    # running slice is what the eviction takes.
                    self.outcome.preempted[old] = by
                self.queues[info.cq].push(WlInfo(obj=info.obj, cq=info.cq))
        for name, queue in self.queues.items():
            if self.state.quota.root(name).id in roots:
                queue.retry_parked()

    def _fair_order(self, entries: list[Entry]) -> Iterator[Entry]:
        """Kueue's fair-sharing iterator (§7.2): the next entry is the winner
        of its cohort tree's tournament, with shares recomputed after every
        processed entry (the caller processes each before the next pop).

        Kueue leaves the order between trees open; placewise takes the tree
        of the first remaining entry in the classical order.
        """
        remaining = {e.info.cq: e for e in entries}
        quota = self.state.quota
        while remaining:
            first = min(remaining.values(), key=_classical_key)
            pick = first
            if quota.node(first.info.cq).parent is not None:
                root = quota.root(first.info.cq)
                contenders = {
                    cq: Contender(
                        cq,
                        self._net(e),
                        e.info.priority,
                        e.info.queue_ts.timestamp(),
                    )
                    for cq, e in remaining.items()
                    if quota.root(cq) is root
                }
                won = tournament(self.preemptor.shares, root, contenders)
                if won is not None:
                    pick = remaining[won.cq]
            del remaining[pick.info.cq]
            yield pick

    # -- processing ----------------------------------------------------------------

    def _fits(self, e: Entry, preempted: dict[str, WlInfo]) -> tuple[bool, bool]:
        """(quota fits, TAS fits) with earlier victims and own targets removed."""
        victims = {**preempted, **{t.info.key: t.info for t in e.targets}}
        if e.old is not None:
            victims[e.old.key] = e.old
        undo = self.state.simulate_removal(victims.values())
        try:
            quota = self.state.quota
            for fr, v in e.assignment.quota_usage().items():
                if quota.available(e.info.cq, fr) < v:
                    return False, True
            for t in e.assignment.tas_usage:
                if not self.state.tas.fits(t.flavor, t.assignment, t.per_pod):
                    return True, False
            return True, True
        finally:
            undo()

    def process(self, e: Entry, preempted: dict[str, WlInfo]) -> bool:
        if self._take_hold(e, preempted):
            return True
        if e.old is not None and e.old.key in preempted:
            # Kueue's old slice is the entry's first target: taken already.
            e.status, e.requeue = Status.SKIPPED, Requeue.FAILED_AFTER_NOMINATION
            e.message = (
                "Workload has overlapping preemption targets with another workload"
            )
            return False
        quota_ok, tas_ok = self._fits(e, preempted)
        overlap = any(t.info.key in preempted for t in e.targets)
        if overlap or (quota_ok and not tas_ok):
            pinned = {
                ps.name: {r: p.flavor for r, p in ps.flavors.items()}
                for ps in e.assignment.pod_sets
            }
            undo = self.state.simulate_removal(preempted.values()) if overlap else None
            e.assignment, e.targets = self.get_assignments(e.info, pinned)
            if undo is not None:
                undo()
                if e.assignment.mode() is Mode.FIT:
                    e.assignment.forced = Mode.DEFERRED_FIT
            quota_ok, tas_ok = self._fits(e, preempted)
        mode = e.assignment.mode()
        cq = self.snapshot.cluster_queues[e.info.cq]
        if mode is Mode.NO_FIT:
            e.message = e.assignment.message() or "no flavor fits"
            return False
        if mode is Mode.PREEMPT and not e.targets:
            e.requeue = Requeue.NO_CANDIDATES
            e.message = (e.assignment.message() or "waiting for quota") + (
                "; fair sharing allows no victims: " + "; ".join(e.refused)
                if e.refused
                else "; no preemption candidates"
            )
            if cq.preemption.reclaim_within_cohort != "Any":
                self._reserve(e)
            return False
        if mode is Mode.DEFERRED_FIT:
            e.requeue = Requeue.PENDING_PREEMPTION
            e.message = (
                "overlapping preemption targets with another workload; "
                "fits after those preemptions complete"
            )
            self._temp_usage(e.info.cq, self._net(e), e.assignment.tas_usage)
            return False
        if any(t.info.key in preempted for t in e.targets):
            e.status, e.requeue = Status.SKIPPED, Requeue.FAILED_AFTER_NOMINATION
            e.message = (
                "Workload has overlapping preemption targets with another workload"
            )
            return False
        if not (quota_ok and tas_ok):
            e.status, e.requeue = Status.SKIPPED, Requeue.FAILED_AFTER_NOMINATION
            e.message = "Workload no longer fits after processing another workload"
            return False
        for t in e.targets:
            preempted[t.info.key] = t.info
        if mode is Mode.PREEMPT:
            self._temp_usage(e.info.cq, self._net(e), e.assignment.tas_usage)
            e.status, e.requeue = Status.PREEMPTING, Requeue.PENDING_PREEMPTION
            names = ", ".join(sorted(t.info.key for t in e.targets))
            e.message = f"waiting for the preemption of {names}"
            for t in e.targets:
                self.outcome.preempted[t.info.key] = (e.info.key, t.reason)
            if self.hold_room:
                self._holding[e.info.key] = (e.info.cq, e.assignment)
            return True
        self._admit(e)
        return True

    def _take_hold(self, e: Entry, preempted: dict[str, WlInfo]) -> bool:
        """A preemptor whose victims are gone takes the room they freed.

        Kueue itself would let any head of the next cycle take that room, so
        its preemptor may land elsewhere while another queue's workload
        takes the victim's node; a plan must not (formats.md: every
        preemption is needed by its preemptor, and its room serves no queue
        that could not preempt the victim).  So the room stays held until the
        preemptor is admitted there; if it no longer fits (quota moved
        meanwhile), it is assigned afresh like any head.
        """
        hold = self._holds.pop(e.info.key, None)
        if hold is None:
            return False
        cq, asg = hold
        self.state.remove_usage(cq, asg.quota_usage(), asg.tas_usage)
        if self._fits(e, preempted) == (True, True):
            self._admit(e)
            return True
        asg.forced = None
        e.assignment, e.targets = self.get_assignments(e.info)
        return False

    def _net(self, e: Entry) -> dict[FR, int]:
        """What the entry adds to its queue's usage: for an elastic slice only
        the growth over the slice it replaces (Kueue's ``Assignment.Usage``)."""
        usage = e.assignment.quota_usage()
        if e.old is None:
            return usage
        grown = {fr: v - e.old.usage.get(fr, 0) for fr, v in usage.items()}
        return {fr: v for fr, v in grown.items() if v > 0}

    def _temp_usage(self, cq: str, usage: dict[FR, int], tas: list[TasUsage]) -> None:
        self.state.add_usage(cq, usage, tas)
        self._temp.append((cq, usage, list(tas)))

    def _reserve(self, e: Entry) -> None:
        """§3.5: a preempting entry without candidates holds capacity this cycle."""
        quota = self.state.quota
        node = quota.node(e.info.cq)
        reserve = {}
        for fr, u in self._net(e).items():
            nominal, used = node.nominal.get(fr, 0), node.usage.get(fr, 0)
            if e.assignment.borrowing > 0:
                limit = node.borrowing_limit.get(fr)
                reserve[fr] = u if limit is None else min(u, nominal + limit - used)
            else:
                reserve[fr] = max(0, min(u, nominal - used))
        reserve = {fr: v for fr, v in reserve.items() if v > 0}
        self._temp_usage(e.info.cq, reserve, e.assignment.tas_usage)

    def _admit(self, e: Entry) -> None:
        e.status = Status.ASSUMED
        if e.old is not None:
            # Finished, not evicted: the new slice's usage takes its place.
            self.state.remove(e.old)
            self.outcome.replaced[e.info.key] = e.old.key
        psas = tuple(
            PodSetAssignment(
                name=d.name,
                flavors={r: p.flavor for r, p in sorted(d.flavors.items())},
                resource_usage={r: d.requests.get(r, 0) for r in sorted(d.flavors)},
                count=d.count,
                topology_assignment=d.topology,
            )
            for d in e.assignment.pod_sets
        )
        info = WlInfo(
            obj=e.info.obj,
            cq=e.info.cq,
            usage=e.assignment.quota_usage(),
            frs=admission_frs(psas),
            tas=list(e.assignment.tas_usage),
        )
        self._temp_usage(info.cq, info.usage, info.tas)
        self._fresh.append(info)
        queue = self.queues[e.info.cq]
        if queue.sticky == e.info.key:
            queue.sticky = None
        if queue.ledger is not None:  # admission fair sharing's entry penalty
            queue.ledger.charge(
                e.info.obj, {d.name: d.count for d in e.assignment.pod_sets}
            )
        self.outcome.admitted[e.info.key] = (e.info.cq, psas)
        self.outcome.reasons.pop(e.info.key, None)

    def _explain_unattempted(self) -> None:
        for name, queue in self.queues.items():
            head = queue.head_key()
            for key in list(queue.active) + list(queue.parked):
                if key in self.outcome.reasons:
                    continue
                if queue.strict and head is not None and key != head:
                    self.outcome.reasons[key] = (
                        f"waiting behind {head} in StrictFIFO ClusterQueue {name}"
                    )
                else:
                    self.outcome.reasons[key] = (
                        f"not yet considered in ClusterQueue {name} (cycle limit)"
                    )
