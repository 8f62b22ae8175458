"""Moves after the tiers: let blocked gangs in by moving running workloads.

Runs on a finished plan (the optimizer's, which already maximised the
tiers without moves), so a move is only ever added to admit a gang that
plan left pending: the tiers can only gain, and a move that lets nothing
new in is never part of a plan.  First the pending gangs of each flavor are
decided together (:mod:`placewise.solver.defrag.joint`: the tiers, then the
least lost work, then the fewest moves, each move paying for itself at the
lost-work price, :mod:`placewise.solver.defrag.price`); then each gang
still pending, highest priority first (then Kueue's queue order), gets the
one-gang model (:mod:`placewise.solver.defrag.model`) with what is left of
the budget — a second chance where the joint model ran out of time, and the
certificate.  A result is kept only when the whole plan still passes the
validator.  Every gang left pending says what holds it back
(``blockedBy``) and, where the model proved it, the fewest moves that would
admit it (``fewestMoves``), or that no plan within the budget (moves that
pay for themselves) does.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

import numpy as np

from placewise.models.cluster import ClusterQueue
from placewise.models.moves import (
    gpu_hours,
    lost_gpu_seconds,
    movable,
    running_hosts,
)
from placewise.models.moves import hosts as hosts_of
from placewise.models.plan import (
    BlockedBy,
    Plan,
    PlanAdmission,
    PlanMove,
    SolverInfo,
    TierResult,
)
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import Workload
from placewise.solver.baselines.records import FlavorChoice, IntArray
from placewise.solver.budget import Budget
from placewise.solver.defrag.joint import Cap, JointGang, solve_joint
from placewise.solver.defrag.model import Limits, Placed, solve_gang
from placewise.solver.defrag.price import gain, move_cost
from placewise.solver.defrag.state import Held, PlanState, PodSetNeed
from placewise.solver.kueue.order import queue_order
from placewise.solver.kueue.quota import FR
from placewise.solver.policy import Policy, accelerators, tier_figures

log = logging.getLogger("placewise")

MAX_CANDIDATES = 400
"""Movable workloads offered to one gang's model (the certificate says
unknown rather than "none" when more were left out)."""
MAX_JOINT = 64
"""Pending gangs of one flavor decided together (the rest gang by gang)."""
MIN_SECONDS = 0.2
"""Each gang's model gets at least this long."""


@dataclass(slots=True)
class Outcome:
    """What the search decided for one pending gang."""

    admitted: PlanAdmission | None = None
    blocked_by: BlockedBy | None = None
    fewest: int | None = None
    why: str = ""


@dataclass(frozen=True, slots=True)
class _Gang:
    """A pending gang the move model covers, on its first flavor choice."""

    workload: Workload
    cq: ClusterQueue
    choice: FlavorChoice
    flavor: str
    needs: list[PodSetNeed]
    complete: bool
    """Its only flavor choice: a proof over this flavor covers the gang."""


def add_moves(
    snapshot: Snapshot,
    plan: Plan,
    policy: Policy,
    budget: Budget,
    workers: int = 1,
    seed: int = 0,
    deterministic: float | None = None,
) -> Plan:
    """``plan`` with moves that admit gangs it left pending, within the
    policy's budget; unchanged when moves are off or cannot apply.
    ``deterministic``: a deterministic work budget shared by the gangs
    instead of ``budget``'s time (the plan is then reproducible with one
    worker)."""
    rules = policy.move_rules
    if not rules.enabled or plan.moves:
        return plan
    if any(a.replaces for a in plan.admissions):
        return plan  # a scale-up slice's quota hand-over is not modelled here
    start = time.perf_counter()
    search = _Search(snapshot, plan, policy, workers, seed)
    search.run(budget, deterministic)
    return search.result(policy, time.perf_counter() - start)


class _Search:
    def __init__(
        self, snapshot: Snapshot, plan: Plan, policy: Policy, workers: int, seed: int
    ) -> None:
        self.snap = snapshot
        self.plan = plan
        self.policy = policy
        self.rules = rules = policy.move_rules
        self.workers = workers
        self.seed = seed
        self.state = PlanState(snapshot, plan)
        self.count_left = rules.count
        self.lost_left = rules.lost_budget_seconds
        self.outcomes: dict[str, Outcome] = {}
        self.current = plan
        preempted = {p.workload for p in plan.preemptions}
        self.movable = [
            w for w in snapshot.running if w.key not in preempted and movable(w, rules)
        ]
        self.moved: set[str] = set()
        self.budget = Budget.of(0.0)
        self.deterministic: float | None = None

    def run(self, budget: Budget, deterministic: float | None = None) -> None:
        """The joint model first (half the time), then gang by gang for
        what it left pending: a second chance and the certificates."""
        self.budget = budget
        waiting = {p.workload for p in self.plan.pending}
        gangs = sorted(
            (w for w in self.snap.pending if w.key in waiting), key=queue_order
        )
        if deterministic is not None:
            self.deterministic = deterministic / 2
        self._joint(gangs, budget.remaining() / 2)
        gangs = [w for w in gangs if w.key not in self.outcomes]
        if deterministic is not None:  # no clock: an even share each
            self.deterministic = deterministic / 2 / max(1, len(gangs))
            for w in gangs:
                self.outcomes[w.key] = self._one(w, 0.0)
            return
        for i, w in enumerate(gangs):
            # Most models end well before their limit: each gang may take
            # half of what is left (at least its even share).
            left = budget.remaining()
            if left < MIN_SECONDS / 4:
                break
            share = max(left / 2, left / max(1, len(gangs) - i))
            self.outcomes[w.key] = self._one(w, max(MIN_SECONDS, share))

    def _limits(self, seconds: float, det_share: float = 1.0) -> Limits:
        return Limits(
            count=self.count_left,
            lost=self.lost_left,
            seconds=seconds,
            workers=self.workers,
            seed=self.seed,
            deterministic=None
            if self.deterministic is None
            else self.deterministic * det_share,
        )

    def _pays(self, g: _Gang) -> int | None:
        """What admitting ``g`` gains, in move-cost units; None unpriced."""
        return gain(self._gpus(g)) if self.rules.price else None

    # -- all gangs of a flavor together ---------------------------------------

    def _joint(self, gangs: list[Workload], seconds: float) -> None:
        by_flavor: dict[str, list[_Gang]] = {}
        for w in gangs:
            g = self._prepare(w)
            if isinstance(g, _Gang):
                by_flavor.setdefault(g.flavor, []).append(g)
        for n, (flavor, group) in enumerate(sorted(by_flavor.items())):
            fi = self.state.flavor_index(flavor)
            assert fi is not None
            held = self._held(flavor)[:MAX_CANDIDATES]
            group = group[:MAX_JOINT]
            share = (
                seconds / (len(by_flavor) - n)
                if self.deterministic is None
                else seconds
            )
            limits = self._limits(share, 1 / len(by_flavor))
            joint = [
                JointGang(g.needs, g.workload.priority, self._gpus(g), self._pays(g))
                for g in group
            ]
            caps = self._caps(group)
            result = solve_joint(fi, fi.tree.rem.copy(), joint, held, limits, caps)
            seconds = max(0.0, seconds - share)
            if not result.admitted:
                continue
            entries = [(group[i], placed) for i, placed in result.admitted.items()]
            if not self._commit(entries, held, result.moved):
                log.info("the joint moves for %s fail the validator", flavor)

    def _caps(self, group: list[_Gang]) -> list[Cap]:
        """Per cohort tree and flavor-resource, the gangs' quota together
        within the least any of their queues may still take."""
        trees: dict[tuple[str, FR], list[tuple[int, str, int]]] = {}
        for i, g in enumerate(group):
            root = self.state.quota.root(g.cq.name).id
            for fr, q in g.choice.usage.items():
                if q > 0:
                    trees.setdefault((root, fr), []).append((i, g.cq.name, q))
        return [
            (
                [(i, q) for i, _, q in terms],
                min(self.state.quota.available(cq, fr) for _, cq, _ in terms),
            )
            for (_, fr), terms in sorted(trees.items())
            if len(terms) > 1
        ]

    def _gpus(self, g: _Gang) -> int:
        return sum(
            accelerators(ps.requests, self.policy) * n
            for ps, n in zip(g.workload.pod_sets, g.choice.counts, strict=True)
        )

    # -- one gang ----------------------------------------------------------

    def _prepare(self, w: Workload) -> _Gang | Outcome:
        if self.snap.blocked_reason(w) is not None or self.snap.replaced_slice(w):
            return Outcome()
        cq_name = self.snap.cluster_queue_of(w)
        if cq_name is None:
            return Outcome()
        cq = self.snap.cluster_queues[cq_name]
        choices, why = self.state.flavor_choices(w, cq)
        if not choices:
            return Outcome(blocked_by="quota" if "quota" in why else None)
        got = self.state.needs(cq, w, choices[0])
        if isinstance(got, str):
            return Outcome()
        flavor, needs = got
        return _Gang(w, cq, choices[0], flavor, needs, len(choices) == 1)

    def _one(self, w: Workload, seconds: float) -> Outcome:
        g = self._prepare(w)
        if isinstance(g, Outcome):
            return g
        fi = self.state.flavor_index(g.flavor)
        assert fi is not None
        held = self._held(g.flavor)
        # A proof covers one flavor choice and every movable workload.
        complete = len(held) <= MAX_CANDIDATES and g.complete
        held = held[:MAX_CANDIDATES]
        kind = _kind(fi.tree.rem, g.needs)
        limits = self._limits(seconds, 1 / 2)
        pays = self._pays(g)
        result = solve_gang(fi, fi.tree.rem.copy(), g.needs, held, limits, pays)
        if result.status in ("optimal", "feasible"):
            if self._commit([(g, result.gang)], held, result.moved):
                return self.outcomes[w.key]
            return Outcome(blocked_by=kind, why="its moves fail the validator")
        if result.status == "unknown" or not complete:
            return Outcome(
                blocked_by=kind, why="whether moves would admit it is unknown"
            )
        within = (
            "no plan within the move budget admits it"
            if pays is None
            else "no plan within the move budget admits it with moves that pay "
            "for themselves"
        )
        # Within the budget none does: how many moves would, beyond it?
        cert = solve_gang(
            fi,
            fi.tree.rem.copy(),
            g.needs,
            held,
            replace(
                limits,
                count=None,
                first="count",
                seconds=min(seconds, self.budget.remaining()),
            ),
        )
        if cert.status == "optimal":
            return Outcome(
                blocked_by="fragmentation",
                fewest=cert.moves,
                why=f"{within}; {cert.moves} move(s) would ({self.count_left} "
                "left in the budget)",
            )
        if cert.status == "infeasible":
            beyond = "" if self.lost_left is not None else ", nor any set of moves"
            return Outcome(
                blocked_by=kind,
                why=f"{within}{beyond} (proven by the move model)",
            )
        return Outcome(
            blocked_by=kind,
            why=f"{within} (proven by the move model); how many moves would is unknown",
        )

    def _held(self, flavor: str) -> list[Held]:
        out = []
        for w in self.movable:
            if w.key in self.moved:
                continue
            lost = lost_gpu_seconds(self.snap, w, self.rules.accelerators)
            h = self.state.held(w, flavor, lost)
            if h is not None:
                gpus = sum(
                    q
                    for (_f, r), q in w.usage().items()
                    if r in self.rules.accelerators
                )
                out.append(
                    replace(h, cost=move_cost(self.snap, self.policy, lost, gpus))
                )
        return out

    def _commit(
        self,
        entries: list[tuple[_Gang, Placed]],
        held: list[Held],
        moved_to: dict[int, Placed],
    ) -> bool:
        """Admit the gangs and move the workloads, when the whole plan then
        passes the validator; else change nothing."""
        admitted = [
            self.state.admission(g.cq, g.workload, g.choice, g.flavor, placed)
            for g, placed in entries
        ]
        moved: list[PlanAdmission] = []
        moves: list[PlanMove] = []
        for k, placed in sorted(moved_to.items()):
            h = held[k]
            again = self.state.readmission(h, entries[0][0].flavor, placed)
            moved.append(again)
            moves.append(
                PlanMove(
                    workload=h.workload.key,
                    from_hosts=running_hosts(h.workload),
                    to_hosts=hosts_of(again.pod_set_assignments),
                    lost_gpu_hours=gpu_hours(h.lost),
                )
            )
        keys = {g.workload.key for g, _ in entries}
        trial = self.current.model_copy(
            update={
                "admissions": (*self.current.admissions, *admitted, *moved),
                "pending": tuple(
                    p for p in self.current.pending if p.workload not in keys
                ),
                "moves": (*self.current.moves, *moves),
            }
        )
        found = validate(self.snap, trial, self.rules)
        if found:
            log.warning(
                "moves for %s dropped: %s",
                ", ".join(sorted(keys)),
                "; ".join(map(str, found[:3])),
            )
            return False
        for h in (held[k] for k in moved_to):
            self.state.evict(h.workload)
            self.moved.add(h.workload.key)
        for adm in (*admitted, *moved):
            self.state.add_admission(adm)
        if self.count_left is not None:
            self.count_left -= len(moves)
        if self.lost_left is not None:
            self.lost_left -= sum(held[k].lost for k in moved_to)
        self.current = trial
        for adm in admitted:
            self.outcomes[adm.workload] = Outcome(admitted=adm)
        return True

    # -- the plan ------------------------------------------------------------

    def result(self, policy: Policy, wall: float) -> Plan:
        pending = []
        for p in self.current.pending:
            o = self.outcomes.get(p.workload)
            if o is None or (o.blocked_by is None and not o.why):
                pending.append(p)
                continue
            reason = f"{p.reason}; {o.why}" if o.why else p.reason
            pending.append(
                p.model_copy(
                    update={
                        "reason": reason,
                        "blocked_by": o.blocked_by,
                        "fewest_moves": o.fewest,
                    }
                )
            )
        plan = self.current.model_copy(update={"pending": tuple(pending)})
        if not plan.moves and plan.admissions == self.plan.admissions:
            return plan
        return plan.model_copy(update={"solver": _info(self.snap, plan, policy, wall)})


def _kind(rem: IntArray, needs: list[PodSetNeed]) -> BlockedBy:
    """Fragmentation when the free capacity, summed over the leaves the gang
    may use, would hold it; else priority (running work holds the room)."""
    for need in needs:
        free = rem[:, need.allowed].sum(axis=1)
        if np.any(free < need.vec * need.count):
            return "priority"
    return "fragmentation"


def _info(snapshot: Snapshot, plan: Plan, policy: Policy, wall: float) -> SolverInfo:
    """Tier figures of the plan with moves; bounds proven without moves no
    longer hold, so they are dropped."""
    info = plan.solver
    tiers = (
        tuple(
            TierResult(priority=f.priority, gpus=f.gpus)
            for f in tier_figures(snapshot, plan, policy)
        )
        if info.tiers
        else ()
    )
    return info.model_copy(
        update={
            "status": "FEASIBLE",
            "objective": None,
            "bound": None,
            "tiers": tiers,
            "wall_seconds": info.wall_seconds + wall,
        }
    )
