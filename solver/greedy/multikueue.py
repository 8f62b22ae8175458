"""What MultiKueue itself does: copy the Workload to workers, keep the first
worker that admits it (``multikueue-allatonce``, ``multikueue-incremental``).

Every worker runs its own Kueue (our Kueue-compatible greedy); the workers
share nothing, so one greedy over the combined snapshot
(:mod:`placewise.models.multicluster`) runs every worker's scheduling
cycles in lock-step — the same cycles each worker would run alone.  After
each cycle the race is settled as MultiKueue's workload controller settles
it: a manager Workload admitted by some worker is kept by the first of them
(earliest cycle, then cluster order) and withdrawn from every other worker
— an admission elsewhere is undone and its quota and nodes freed, a copy
still queued is deleted.  Preemptions a withdrawn copy already issued stay
issued: Kueue evicts victims as soon as it decides to.

``allatonce`` (Kueue's default dispatcher) copies the Workload to every
eligible worker at once.  ``incremental`` nominates up to ``step`` workers
(3 unless the manager's Configuration sets
``multiKueue.incrementalDispatcherConfig.stepSize``) in its
MultiKueueConfig's order — or keeps the nominations its status already
holds, a round in progress — and adds the next ones only when a round ends
without an admission, five minutes later.  A plan is the decision of now,
so by default it holds one round: what the cluster settles into before the
next round is due.  ``rounds=None`` plays every round (each ending when the
cycles reach quiescence), what the dispatcher ends in after enough time.
"""

from __future__ import annotations

import time
from typing import Literal

from placewise.models.multicluster import MultiSnapshot
from placewise.models.plan import Plan
from placewise.solver.greedy.scheduler import GreedyScheduler, Outcome
from placewise.solver.greedy.solver import outcome_to_plan
from placewise.solver.kueue.workload import WlInfo

Mode = Literal["allatonce", "incremental"]
NAMES: dict[Mode, str] = {
    "allatonce": "multikueue-allatonce",
    "incremental": "multikueue-incremental",
}


class _Race(GreedyScheduler):
    """The greedy, cycle by cycle, with MultiKueue's race settled between."""

    def __init__(self, snapshot: MultiSnapshot, mode: Mode, rounds: int | None) -> None:
        super().__init__(snapshot)
        self.multi = snapshot
        self.mode = mode
        self.rounds_left = None if rounds is None else rounds - 1
        self.rank = {c: i for i, c in enumerate(snapshot.clusters)}
        self.winner: dict[str, str] = {}
        """manager key -> the copy that won."""
        self.nominated: dict[str, list[str]] = {}
        self.queued: set[str] = set()
        """Copies in a worker's queue now (nominated, not withdrawn)."""
        for key, d in snapshot.facts.dispatch.items():
            if mode == "allatonce":
                first = list(d.order)
            else:
                first = [c for c in d.nominated if c in d.order]
                first = first or list(d.order[: snapshot.facts.step])
            self.nominated[key] = first
            for c, copy in d.copies.items():
                if c in first:
                    self.queued.add(copy)
                else:
                    self._forget(
                        copy,
                        "not nominated yet: the incremental dispatcher adds the "
                        "next clusters when a round ends without an admission",
                    )

    def _forget(self, copy: str, reason: str) -> None:
        cq = self.snapshot.cluster_queue_of(self.snapshot.workloads[copy])
        if cq in self.queues:
            self.queues[cq].forget(copy)
        self.queued.discard(copy)
        self.outcome.reasons[copy] = reason

    def run(self, max_cycles: int | None = None) -> Outcome:
        limit = max_cycles if max_cycles is not None else 1_000_000
        while self.outcome.cycles < limit:
            self.outcome.cycles += 1
            progress = self.cycle()
            self._settle()
            if not progress and not self._next_round():
                break
        self._explain_unattempted()
        return self.outcome

    def _settle(self) -> None:
        """Each newly admitted group keeps its first copy; the rest go."""
        cycle = self.outcome.cycles
        for key, d in self.multi.facts.dispatch.items():
            if key in self.winner:
                continue
            won = sorted(
                (c for c, copy in d.copies.items() if copy in self.outcome.admitted),
                key=self.rank.__getitem__,
            )
            if not won:
                continue
            self.winner[key] = d.copies[won[0]]
            why = f"withdrawn: worker {won[0]} admitted it first (cycle {cycle})"
            for c, copy in d.copies.items():
                if c == won[0]:
                    continue
                if copy in self.outcome.admitted:
                    self._unadmit(copy)
                self._forget(copy, why)

    def _unadmit(self, copy: str) -> None:
        cq, _ = self.outcome.admitted.pop(copy)
        info = self.state.running[cq].get(copy)
        if info is not None:
            self.state.remove(info)
        root = self.state.quota.root(cq).id
        for name, queue in self.queues.items():
            if self.state.quota.root(name).id == root:
                queue.retry_parked()

    def _next_round(self) -> bool:
        """Incremental: nominate the next workers of every group not yet
        admitted; False when there is nobody left to nominate."""
        if self.mode != "incremental" or self.rounds_left == 0:
            return False
        if self.rounds_left is not None:
            self.rounds_left -= 1
        step = self.multi.facts.step
        added = False
        for key, d in self.multi.facts.dispatch.items():
            if key in self.winner:
                continue
            rest = [c for c in d.order if c not in self.nominated[key]]
            if not rest:
                continue
            batch = rest[:step]
            self.nominated[key] += batch
            for c in batch:
                copy = d.copies.get(c)
                if copy is None:
                    continue
                w = self.snapshot.workloads[copy]
                cq = self.snapshot.cluster_queue_of(w)
                if cq in self.queues and self.snapshot.blocked_reason(w) is None:
                    self.queues[cq].push(WlInfo(obj=w, cq=cq))
                    self.outcome.reasons.pop(copy, None)
                    self.queued.add(copy)
                    added = True
        return added


def solve_multikueue(
    snapshot: MultiSnapshot, mode: Mode, rounds: int | None = 1
) -> Plan:
    """The plan MultiKueue's race ends in, on the combined snapshot
    (``rounds``: incremental dispatcher rounds played, None for all)."""
    if not isinstance(snapshot, MultiSnapshot):
        raise ValueError(
            f"{NAMES[mode]} needs a multi-cluster instance (--cluster NAME=FILE)"
        )
    start = time.perf_counter()
    race = _Race(snapshot, mode, rounds)
    race.run()
    return outcome_to_plan(
        snapshot, race.outcome, NAMES[mode], time.perf_counter() - start
    )
