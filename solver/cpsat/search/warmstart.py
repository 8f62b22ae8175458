"""Best-fit-decreasing warm start: a valid plan in under a second at any size.

Kueue's greedy is the floor whenever it finishes within the budget, but at
10,000 hosts it alone takes longer than the whole budget.  This heuristic
gives the search a first incumbent in its place: workloads in Kueue's order
(priority, then queue time), each admitted as :mod:`.packing` places one
workload (flavors first-fit under quota, pods best-fit over the leaves).
With ``preempt`` it evicts lower-priority work of the workload's own queue
where its policy allows (Kueue's within-ClusterQueue preemption,
simplified); reclaims from other queues are left to the optimizer.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Callable
from typing import Literal

import numpy as np
import numpy.typing as npt

from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.solver.budget import Budget
from placewise.solver.cpsat.search.packing import Admitted, Leaves, admit, group_usage
from placewise.solver.cpsat.tuning import EVICTION_STEP, MAX_COMBINATIONS
from placewise.solver.kueue.order import candidate_order, queue_order
from placewise.solver.kueue.preemption import satisfies_policy
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import (
    ModelData,
    VictimData,
    WorkloadData,
)

IntArray = npt.NDArray[np.int64]
Order = Literal["decreasing", "bound-first"]
"""Best-fit's orders of the pending workloads (:data:`ORDERS`)."""


def best_fit(
    problem: Problem,
    preempt: bool = True,
    budget: Budget | None = None,
    order: Order = "decreasing",
) -> Plan:
    """A valid plan built best-fit-decreasing (with ``preempt``, evicting
    lower-priority work of the workload's own queue where its policy allows).
    Evictions are tried only while ``budget`` lasts (highest priority
    first): at 50,000 hosts they are most of the warm start's time, and a
    plan without the rest of them is still valid.  ``order``: one of
    :data:`ORDERS`."""
    data, layout = problem.data, problem.layout
    lv = Leaves(data, layout)
    quota = QuotaTree(data.snapshot)
    for adm in data.fixed_admissions:
        usage: dict[FR, int] = defaultdict(int)
        for psa in adm.pod_set_assignments:
            for r, q in psa.resource_usage.items():
                if r in psa.flavors:
                    usage[(psa.flavors[r], r)] += q
        quota.add_usage(adm.cluster_queue, usage)
    admissions: list[PlanAdmission] = []
    evictions = _Evictions(data, lv, quota)
    rank = ORDERS[order]
    ordered = sorted(data.workloads, key=lambda wd: rank(data, wd))
    taken = {  # exclusive groups (MultiKueue copies) already admitted
        w.exclusive
        for a in data.fixed_admissions
        if (w := data.snapshot.workloads.get(a.workload)) is not None
    }
    for wd in ordered:
        if wd.obj.exclusive is not None and wd.obj.exclusive in taken:
            continue
        evictions.hold(wd.cq.name, -1)  # its own queue's freed room is open to it
        got = admit(data, layout, lv, quota, wd)
        if got is None and preempt and (budget is None or budget.remaining() > 0):
            got = evictions.admit(
                wd,
                lambda wd=wd: admit(data, layout, lv, quota, wd),  # type: ignore[misc]
            )
        evictions.hold(wd.cq.name, 1)
        if got is not None:
            psas = got[0]
            taken.add(wd.obj.exclusive)
            admissions.append(
                PlanAdmission(
                    workload=wd.key,
                    cluster_queue=wd.cq.name,
                    pod_set_assignments=tuple(psas),
                )
            )
    admissions += data.fixed_admissions
    keys = {a.workload for a in admissions}
    pending = tuple(
        PlanPending(
            workload=w.key,
            reason=data.unsupported.get(w.key)
            or data.snapshot.blocked_reason(w)
            or "not placed by the warm start",
        )
        for w in data.snapshot.pending
        if w.key not in keys
    )
    preemptions = tuple(
        PlanPreemption(workload=victim, preemptor=pre, reason="InClusterQueue")
        for victim, pre in sorted(evictions.done.items())
    )
    return Plan(
        solver=SolverInfo(name="best-fit", status="FEASIBLE"),
        admissions=tuple(sorted(admissions, key=lambda a: a.workload)),
        preemptions=preemptions,
        pending=pending,
    )


def _decreasing(data: ModelData, wd: WorkloadData) -> tuple[object, ...]:
    """Priority first (the objective's order), then the biggest GPU demand
    first — best-fit *decreasing*: big gangs find room before small pods
    fragment it — then Kueue's queue order."""
    gpus = sum(
        data.pod_sets[p].count * data.pod_sets[p].requests.get(r, 0)
        for p in wd.pod_sets
        for r in ACCELERATORS
    )
    return (-wd.info.priority, -gpus, queue_order(wd.obj))


def _bound_first(data: ModelData, wd: WorkloadData) -> tuple[object, ...]:
    """:func:`_decreasing` with the workloads whose pods must share a
    domain (a rack) before those of the same priority that may go
    anywhere: a loose pod placed first takes a rack's whole host as
    readily as a hole, and a rack-bound gang placed after it finds no rack.
    At 10,000 hosts the better order by 390-420 GPUs at tier 1,000, at
    50,000 by 2,500; on some smaller instances the worse (the optimizer's
    warm start tries both off its large path)."""
    loose = not any(
        data.pod_sets[p].ps.topology.required is not None for p in wd.pod_sets
    )
    first, *rest = _decreasing(data, wd)
    return (first, loose, *rest)


ORDERS: dict[Order, Callable[[ModelData, WorkloadData], tuple[object, ...]]] = {
    "decreasing": _decreasing,
    "bound-first": _bound_first,
}
"""Best-fit's orders of the pending workloads, by name."""


class _Evictions:
    """Kueue's within-ClusterQueue preemption, simplified: candidates in
    Kueue's order until the workload fits, then every victim that can come
    back (and every one sharing no flavor-resource with the admission) is
    restored.  Reclaims from other queues are left to the optimizer."""

    def __init__(self, data: ModelData, lv: Leaves, quota: QuotaTree) -> None:
        self.data, self.lv, self.quota = data, lv, quota
        self.done: dict[str, str] = {}
        self.held: dict[str, tuple[IntArray, IntArray]] = {}
        """ClusterQueue -> leaf rows of the victims evicted for its admissions."""
        self.rows: dict[int, tuple[IntArray, IntArray]] = {}
        self.by_cq: dict[str, list[VictimData]] = defaultdict(list)
        for v in data.victims:
            self.by_cq[v.info.cq].append(v)
        self.order: dict[str, list[VictimData]] = {}
        self.failed: dict[tuple[str, ...], int] = {}
        """Demand (queue, pod sets) -> the highest priority at which it did
        not fit with every candidate evicted (see :meth:`admit`)."""

    @staticmethod
    def _demand(wd: WorkloadData) -> tuple[str, ...]:
        """What decides whether a workload fits, but its priority."""
        return (
            wd.cq.name,
            *(ps.model_dump_json(exclude={"name"}) for ps in wd.obj.pod_sets),
        )

    def _rows(self, v: VictimData) -> tuple[IntArray, IntArray]:
        if v.idx not in self.rows:
            leaves = sorted(v.leaf_usage)
            delta = np.zeros((len(leaves), self.lv.free.shape[1]), dtype=np.int64)
            for i, leaf in enumerate(leaves):
                for r, q in v.leaf_usage[leaf].items():
                    if r in self.lv.col:
                        delta[i, self.lv.col[r]] = q
            self.rows[v.idx] = (np.asarray(leaves, dtype=np.int64), delta)
        return self.rows[v.idx]

    def _move(self, vs: list[VictimData], sign: int) -> None:
        """Release (-1) or give back (+1) the quota and leaves of ``vs``."""
        if not vs:
            return
        usage: dict[FR, int] = defaultdict(int)
        for v in vs:  # all of one queue: one walk up the tree for them all
            for fr, q in v.info.usage.items():
                usage[fr] += q
        if sign < 0:
            self.quota.remove_usage(vs[0].info.cq, usage)
        else:
            self.quota.add_usage(vs[0].info.cq, usage)
        parts = [self._rows(v) for v in vs]
        rows = np.concatenate([r for r, _ in parts])
        delta = np.concatenate([d for _, d in parts])
        self.lv.take(rows, sign * delta)

    def hold(self, cq: str, sign: int) -> None:
        """Close (+1) or open (-1) the leaves of the victims evicted for
        ``cq``'s admissions: the room an in-queue eviction frees may serve its
        own ClusterQueue only (the validator's ``preemption.room-elsewhere``),
        so it is closed to every other queue's workloads placed after it.
        Without this the room a preemptor left over went to the next workload,
        maybe of another queue, and the plan needed settling (at 10,000 hosts
        eight such victims took the settling pass 96-154 s of a 10 s budget).
        Leaves only: freed quota beyond the preemptor's need may be borrowed
        by anyone, as in Kueue's next cycle."""
        if cq in self.held:
            rows, delta = self.held[cq]
            self.lv.take(rows, sign * delta)

    def _fill_back(self, removed: list[VictimData]) -> list[VictimData]:
        """Give back every victim the admission leaves room for (latest
        first); returns those that stay evicted.

        Victims are all of one queue, and usage added to a queue lowers what
        it may still take by exactly that much, so ``available`` is read once
        per flavor-resource and kept up to date here."""
        kept: list[VictimData] = []
        touched: list[IntArray] = []
        avail: dict[tuple[str, FR], int] = {}
        back: dict[FR, int] = defaultdict(int)
        for v in reversed(removed):
            for fr in v.info.usage:
                if (v.info.cq, fr) not in avail:
                    avail[(v.info.cq, fr)] = self.quota.available(v.info.cq, fr)
            rows, delta = self._rows(v)
            room = all(
                avail[(v.info.cq, fr)] >= q for fr, q in v.info.usage.items()
            ) and bool(np.all(self.lv.free[rows] >= delta))
            if not room:
                kept.append(v)
                continue
            for fr, q in v.info.usage.items():
                avail[(v.info.cq, fr)] -= q
                back[fr] += q
            self.lv.take(rows, delta, refresh=False)
            touched.append(rows)
        if touched:
            # Usage adds up the cohort tree the same in one call as in many.
            self.quota.add_usage(removed[0].info.cq, back)
            self.lv.refresh(np.concatenate(touched))
        return kept

    def _ordered(self, cq: str) -> list[VictimData]:
        """The queue's running work in Kueue's candidate order (sorted once:
        the order reads only the candidates)."""
        got = self.order.get(cq)
        if got is None:
            order = candidate_order(cq)
            got = self.order[cq] = sorted(
                self.by_cq.get(cq, []), key=lambda v: order(v.info)
            )
        return got

    def _fewest(self, wd: WorkloadData, cands: list[VictimData]) -> int:
        """How many of ``cands``, in order, are evicted before ``wd`` fits
        its queue's quota (all of them if it never does): the first prefix
        that fits, found by bisection (evicting more never leaves less
        quota), each probe one removal and one return of the prefix's
        summed usage — not one per candidate, which at 50,000 hosts was
        2.5 million walks up the cohort tree."""
        cq = wd.cq.name

        def gone(usage: dict[FR, int]) -> bool:
            self.quota.remove_usage(cq, usage)
            ok = not self._short_of_quota(wd)
            self.quota.add_usage(cq, usage)
            return ok

        if gone(cands[0].info.usage):  # the common case (median 1 at 10,000 hosts)
            return 1
        frs = sorted({fr for v in cands for fr in v.info.usage})
        cum = {fr: np.cumsum([v.info.usage.get(fr, 0) for v in cands]) for fr in frs}

        def fits(k: int) -> bool:
            return gone({fr: int(c[k - 1]) for fr, c in cum.items() if c[k - 1]})

        lo, hi = 2, len(cands)
        if hi < lo or not fits(hi):
            return hi
        return lo + bisect.bisect_left(range(lo, hi), True, key=fits)

    def _useful_first(
        self, wd: WorkloadData, cands: list[VictimData]
    ) -> list[VictimData]:
        """``cands`` with those whose eviction alone opens room for one more
        of ``wd``'s pods on some leaf first (each part in Kueue's order).
        Freeing candidates in Kueue's order until the pods fit freed ~120
        at the median at 10,000 hosts where one or two were kept."""
        needs = [self._need(p) for p in wd.pod_sets if self.data.pod_sets[p].tas]
        if not needs or not cands:
            return cands
        parts = [self._rows(v) for v in cands]
        rows = np.concatenate([r for r, _ in parts])
        delta = np.concatenate([d for _, d in parts])
        owner = np.repeat(np.arange(len(cands)), [len(r) for r, _ in parts])
        free = np.maximum(self.lv.free[rows], 0)
        opens = np.zeros(len(cands), dtype=bool)
        for need in needs:
            cols = np.nonzero(need)[0]
            before = (free[:, cols] // need[cols]).min(axis=1)
            after = ((free + delta)[:, cols] // need[cols]).min(axis=1)
            opens[owner[after > before]] = True
        return [v for v, o in zip(cands, opens, strict=True) if o] + [
            v for v, o in zip(cands, opens, strict=True) if not o
        ]

    def _need(self, pod_set: int) -> IntArray:
        """A pod's request in the leaves' columns."""
        need = np.zeros(self.lv.free.shape[1], dtype=np.int64)
        for r, q in self.data.pod_sets[pod_set].requests.items():
            if r in self.lv.col:
                need[self.lv.col[r]] = q
        return need

    def _short_of_quota(
        self, wd: WorkloadData, extra: list[VictimData] | None = None
    ) -> bool:
        """Whether no flavor choice of ``wd`` fits the queue's quota yet (or
        would, if the usage of ``extra`` came back too: an upper bound)."""
        back: dict[FR, int] = defaultdict(int)
        for v in extra or ():
            for fr, q in v.info.usage.items():
                back[fr] += q
        for g in wd.groups:
            gd = self.data.groups[g]
            members = [self.data.pod_sets[p] for p in gd.pod_sets]
            rgs = sorted(gd.flavors)
            if not any(
                all(
                    self.quota.available(wd.cq.name, fr) + back.get(fr, 0) >= q
                    for fr, q in group_usage(
                        self.data, wd, members, dict(zip(rgs, combo, strict=True))
                    ).items()
                )
                for combo in itertools.islice(
                    itertools.product(*(gd.flavors[rg] for rg in rgs)),
                    MAX_COMBINATIONS,
                )
            ):
                return True
        return False

    def admit(
        self, wd: WorkloadData, attempt: Callable[[], Admitted | None]
    ) -> Admitted | None:
        """``wd`` admitted after evicting candidates of its queue, or None.

        A demand that did not fit with every candidate evicted is not tried
        again at the same or a lower priority: workloads come highest
        priority first, so a later one has no more candidates, and the room
        its queue may use only shrinks (admissions take room; its victims'
        room stays held for it).  At 10,000 hosts 110 of 353 attempts
        failed so, each evicting and restoring every candidate of its queue
        (at 50,000 hosts thousands): most of the warm start's time."""
        demand = self._demand(wd)
        if self.failed.get(demand, -(1 << 62)) >= wd.info.priority:
            return None
        policy = wd.cq.preemption.within_cluster_queue
        done, ordered, prio = self.done, self._ordered(wd.cq.name), wd.info.priority
        if policy == "LowerPriority":  # satisfies_policy's rule, inlined: hot
            cands = [
                v for v in ordered if v.info.priority < prio and v.info.key not in done
            ]
        else:
            cands = [
                v
                for v in ordered
                if v.info.key not in done and satisfies_policy(wd.info, v.info, policy)
            ]
        if not cands or self._short_of_quota(wd, cands):
            return None  # even evicting every candidate would not make room
        removed = cands[: self._fewest(wd, cands)]
        self._move(removed, -1)
        got = attempt()
        rest = self._useful_first(wd, cands[len(removed) :])
        step = max(len(removed), EVICTION_STEP)
        while got is None and rest:
            # Quota fits but the pods do not: free more candidates, in
            # batches doubling in size, and try again.  Freeing them all at
            # once made every success restore hundreds of victims (thousands
            # at 50,000 hosts) one by one in :meth:`_fill_back`.
            batch, rest = rest[:step], rest[step:]
            self._move(batch, -1)
            removed += batch
            got = attempt()
            step *= 2
        if got is None:
            self.failed[demand] = wd.info.priority
        if got is not None:
            taken = {(f, r) for psa in got[0] for r, f in psa.flavors.items()}
            kept = self._fill_back(removed)
            if all(v.info.frs & taken for v in kept):
                for v in kept:
                    self.done[v.info.key] = wd.key
                if kept:
                    parts = [self._rows(v) for v in kept]
                    if wd.cq.name in self.held:
                        parts.insert(0, self.held[wd.cq.name])
                    self.held[wd.cq.name] = (
                        np.concatenate([r for r, _ in parts]),
                        np.concatenate([d for _, d in parts]),
                    )
                return got
            # A victim the admission shares no flavor-resource with cannot be
            # credited to it: take the admission back.
            got[1]()
            removed = kept
        self._move(removed, 1)
        return None
