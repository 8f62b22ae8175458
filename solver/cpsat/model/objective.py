"""The objective as stages of small-integer linear criteria.

Under the ``tiers`` policy every priority tier, highest first, is one stage:
its GPUs running after the plan, weighted just above the range of its other
demand (coarse buckets, see :mod:`placewise.solver.policy`), so the weights
stay small and the LP stays well conditioned.  The ``gpus`` policy is one
stage of GPUs alone.  Then, under fair sharing, the largest share, and
under admission fair sharing the LocalQueues' order; then who has waited
(:meth:`Objective._waiting`).  The tie-breaks — preemption cost,
preferred-level spread, empty hosts opened, borrowing — come last, packed
into as few stages as weights below 2^31 allow.  Stages are solved in
order, each held at its best value afterwards (:mod:`.stages`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from ortools.sat.python import cp_model

from placewise.models.multicluster import dispatch_costs
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.cpsat.model.afs import afs_terms
from placewise.solver.cpsat.model.aging import aged_terms, aged_value, minutes_waited
from placewise.solver.cpsat.model.attribution import attribute
from placewise.solver.cpsat.model.constraints import Constraints
from placewise.solver.cpsat.model.fairness import largest_share
from placewise.solver.cpsat.model.variables import Derive, Variables
from placewise.solver.lost_work import lost_work, price_units, victim_units
from placewise.solver.policy import (
    Policy,
    accelerators,
    capacity,
    other_demand,
    tier_figures,
)
from placewise.solver.problem.data import ModelData

Terms = list[tuple[int, cp_model.IntVar]]
STAGE_RANGE = 1 << 31
"""Largest product of criterion ranges packed into one tie-break stage."""


@dataclass(slots=True)
class Criterion:
    """Maximise ``sum(terms)``; ``lo``/``hi`` bound it for safe weights."""

    name: str
    terms: Terms = field(default_factory=list)
    lo: int = 0
    hi: int = 0

    def add(self, coef: int, var: cp_model.IntVar, var_hi: int) -> None:
        if coef == 0:
            return
        self.terms.append((coef, var))
        if coef > 0:
            self.hi += coef * var_hi
        else:
            self.lo += coef * var_hi


@dataclass(slots=True)
class Stage:
    """One solve: maximise ``sum(terms)`` (weighted criteria)."""

    name: str
    terms: Terms
    lo: int
    hi: int
    tier: int | None = None
    """The priority this stage decides (``tiers``), else None."""
    gpus: Terms = field(default_factory=list)
    """GPU terms alone (admitted minus preempted) for reporting and bounds."""
    weight: int = 1
    """GPU weight in ``terms``; ``other_lo`` is the lowest the rest can be."""
    other_lo: int = 0
    costs: dict[str, int] = field(default_factory=dict)
    """Victim key -> its lost work in ``terms``'s units (1/weight GPU),
    subtracted when it is preempted (:mod:`placewise.solver.lost_work`):
    victims of this tier, and lower-tier victims when the eviction is
    charged to this tier (:mod:`.attribution`)."""
    gpus_hi: int = 0
    """The most GPUs (delta) any plan adds: every pending pod, no victim."""
    unpriced: Terms = field(default_factory=list)
    """``terms`` without the victims' price: what bounds GPUs when priced."""
    cross: dict[str, tuple[frozenset[str], frozenset[str]]] = field(
        default_factory=dict
    )
    """Lower-tier victim key -> (this tier's workloads that may evict it,
    those of the tiers between): who takes the charge in a plan
    (:mod:`.attribution`)."""
    aged: bool = False
    """Waiting GPUs (or started jobs) count extra in ``terms`` (:mod:`.aging`)."""
    other: Terms = field(default_factory=list)
    """Other demand terms alone: with ``gpus`` x ``weight``, the tier as
    Kueue's plan is held to (:func:`.aging.hold_tiers`)."""

    def value(self, values: dict[int, int]) -> int:
        return sum(c * values[x.index] for c, x in self.terms)

    def gpu_bound(self, stage_bound: float) -> int:
        """GPUs (delta) implied by a bound on the stage's objective.  A plan
        pays at most every victim's price, so GPUs + other demand stay within
        the bound plus that: a valid, if looser, bound on GPUs when priced."""
        priced = sum(self.costs.values())
        got = int((stage_bound + priced - self.other_lo + 1e-6) // self.weight)
        return min(got, self.gpus_hi) if priced or self.aged else got


class Objective:
    def __init__(
        self,
        model: cp_model.CpModel,
        data: ModelData,
        v: Variables,
        c: Constraints,
        policy: Policy,
    ) -> None:
        self.model, self.data, self.v, self.c, self.policy = model, data, v, c, policy
        self.cap = capacity(data.snapshot)
        self.largest_share: cp_model.IntVar | None = None
        """With fair sharing on: the largest weighted share (see .fairness)."""
        self.lost = lost_work(data.snapshot, policy)
        self.cross = (
            attribute(model, data, v, c, self.lost, policy)
            if policy.objective == "tiers"
            else {}
        )
        """Tier -> lower-tier victims its stage may be charged for."""

    def build(self, relaxed: bool = False) -> list[Stage]:
        """The stages; a ``relaxed`` model (bounds only) has no tie-breaks."""
        if self.policy.objective == "gpus":
            gpus, _ = self._demand(None)
            terms, lo, costs = self._priced(None, 1, gpus)
            stages = [
                Stage(
                    "gpus",
                    gpus.terms + terms,
                    gpus.lo + lo,
                    gpus.hi,
                    gpus=gpus.terms,
                    costs=costs,
                    gpus_hi=gpus.hi,
                    unpriced=gpus.terms,
                )
            ]
        else:
            stages = [self._tier(t) for t in self._tiers()]
        stages = [s for s in stages if s.terms]
        if relaxed:
            return stages
        if self.data.snapshot.fair_sharing.enable:
            stages += pack([c for c in [self._fairness()] if c.terms])
        afs = Criterion("admission-fair-sharing")  # empty without AFS (cpsat/afs.py)
        for coef, var, hi in afs_terms(self.data, self.v, self.policy):
            afs.add(coef, var, hi)
        stages += pack([afs] if afs.terms else [])
        if self.policy.waiting:
            stages += pack([c for c in [self._waiting()] if c.terms])
        tail: list[Criterion] = [self._cluster_cost()]
        if self.policy.preemption:
            tail.append(self._preemption_cost())
        if self.policy.topology:
            tail.append(self._preferred_spread())
        if self.policy.fragmentation:
            tail.append(self._empty_hosts())
        if self.policy.borrowing:
            tail.append(self._borrowing())
        return stages + pack([c for c in tail if c.terms])

    def _tiers(self) -> list[int]:
        return sorted(
            {wd.info.priority for wd in self.data.workloads}
            | {vd.info.priority for vd in self.data.victims},
            reverse=True,
        )

    def _tier(self, tier: int) -> Stage:
        gpus, other = self._demand(tier)
        aged = Criterion(f"aged@{tier}")
        for coef, var, hi in aged_terms(self.data, self.v, self.policy, tier):
            aged.add(coef, var, hi)
        weight = other.hi - other.lo + 1
        terms = [(weight * c, x) for c, x in gpus.terms + aged.terms] + other.terms
        priced, lo, costs = self._priced(tier, weight, gpus)
        return Stage(
            f"tier {tier}",
            terms + priced,
            weight * gpus.lo + other.lo + lo,
            weight * (gpus.hi + aged.hi) + other.hi,
            tier,
            gpus.terms,
            weight,
            other.lo,
            costs,
            gpus.hi,
            terms,
            {a.key: (a.members, a.between) for a in self.cross.get(tier, [])},
            bool(aged.terms),
            other.terms,
        )

    def _priced(
        self, tier: int | None, weight: int, gpus: Criterion
    ) -> tuple[Terms, int, dict[str, int]]:
        """Victims of ``tier`` (all, for one GPU stage) priced by the work
        they lose, in 1/weight GPU: (terms, their lowest sum, key -> units).
        A price is capped just above the tier's whole GPU range — more than
        anything the tier can gain — which keeps coefficients no larger than
        the stage's own range."""
        terms: Terms = []
        costs: dict[str, int] = {}
        cap = weight * (gpus.hi - gpus.lo + 1)
        for vd, x in zip(self.data.victims, self.v.victims, strict=True):
            if tier is not None and vd.info.priority != tier:
                continue
            units = min(victim_units(self.lost, vd.info.key, weight, self.policy), cap)
            if units <= 0:
                continue
            terms.append((-units, x))
            costs[vd.info.key] = units
        if tier is not None:
            price = self.policy.cross_tier_price
            for att in self.cross.get(tier, []):
                units = min(
                    price_units(att.gpu_seconds, weight, self.policy, price), cap
                )
                if units > 0:
                    terms.append((-units, att.charged))
                    costs[att.key] = units
        return terms, -sum(costs.values()), costs

    def _demand(self, tier: int | None) -> tuple[Criterion, Criterion]:
        """GPUs and other demand a plan adds (admissions minus preemptions)
        for one tier, or for all of them when ``tier`` is None."""
        data, pol = self.data, self.policy
        gpus, rest = Criterion(f"gpus@{tier}"), Criterion(f"other@{tier}")
        for pd in data.pod_sets:
            if tier is not None and data.workloads[pd.wl].info.priority != tier:
                continue
            acc = accelerators(pd.ps.requests, pol)
            rest_coef = other_demand(pd.ps.requests, self.cap, pol)
            n = self.v.pod_sets[pd.idx].n
            if pd.min_count < pd.count:
                gpus.add(acc, n, pd.count)  # type: ignore[arg-type]
                rest.add(rest_coef, n, pd.count)  # type: ignore[arg-type]
            else:
                admit = self.v.workloads[pd.wl].admit
                gpus.add(acc * pd.count, admit, 1)
                rest.add(rest_coef * pd.count, admit, 1)
        for vd, x in zip(data.victims, self.v.victims, strict=True):
            if tier is not None and vd.info.priority != tier:
                continue
            usage: dict[str, int] = defaultdict(int)
            for (_f, r), q in vd.info.usage.items():
                usage[r] += q
            gpus.add(-accelerators(usage, pol), x, 1)
            rest.add(-other_demand(usage, self.cap, pol), x, 1)
        return gpus, rest

    def _waiting(self) -> Criterion:
        """Among plans as good on every tier: admit more of the jobs, and the
        ones that have waited longest.  Each pending workload admitted counts
        :func:`wait_weight` of its wait.  Why: a replay is judged per job
        (mean queueing delay), and the tiers only count GPUs, so a solve
        that can fill the same GPUs with one new gang or with several jobs
        queued for an hour was indifferent; Kueue's FIFO order picks the
        old ones, and so does this.  Log buckets keep the coefficients small
        (a range the tie-breaks can pack) and make an hour's wait outweigh
        a minute's without letting one job outweigh many."""
        crit = Criterion("waiting")
        now = self.data.snapshot.now
        for wd in self.data.workloads:
            crit.add(wait_weight(wd.info.obj, now), self.v.workloads[wd.idx].admit, 1)
        return crit

    # -- tie-breaks ------------------------------------------------------------

    def _cluster_cost(self) -> Criterion:
        """Multi-cluster only: cheaper and preferred worker clusters."""
        crit = Criterion("cluster-cost")
        costs = dispatch_costs(self.data.snapshot)
        for wd in self.data.workloads:
            if costs.get(wd.key):
                crit.add(-costs[wd.key], self.v.workloads[wd.idx].admit, 1)
        return crit

    def _preemption_cost(self) -> Criterion:
        """Fewer, smaller and lower-priority preemptions."""
        crit = Criterion("preemption-cost")
        ranks = {
            p: i + 1
            for i, p in enumerate(
                sorted({vd.info.priority for vd in self.data.victims})
            )
        }
        for vd, x in zip(self.data.victims, self.v.victims, strict=True):
            size = accelerators(
                {r: q for (_f, r), q in vd.info.usage.items()}, self.policy
            )
            crit.add(-ranks[vd.info.priority] * (1 + size), x, 1)
        return crit

    def _preferred_spread(self) -> Criterion:
        """Fewest domains at the preferred level per pod set."""
        crit = Criterion("preferred-spread")
        for q in self.c.placement.preferred.values():
            crit.add(-1, q, 1)
        return crit

    def _empty_hosts(self) -> Criterion:
        """Keep empty hosts empty (maximise the hosts left empty)."""
        crit = Criterion("empty-hosts-kept")
        pl = self.c.placement
        for cls in pl.layout.classes:
            if cls.empty:
                crit.add(1, pl.empty[cls.idx], len(cls.leaves))
        return crit

    def _fairness(self) -> Criterion:
        """The largest weighted dominant share, made small (:mod:`.fairness`)."""
        crit = Criterion("largest-share")
        got = largest_share(self.model, self.data, self.v, self.c)
        if got is not None:
            crit.add(-1, got[0], got[1])
            self.largest_share = got[0]
        return crit

    def _borrowing(self) -> Criterion:
        crit = Criterion("borrowing")
        tree = self.data.tree
        for (cq, fr), (terms, const, scale) in sorted(
            self.c.cq_usage.items(), key=lambda kv: kv[0]
        ):
            nominal = tree.node(cq).nominal.get(fr, 0)
            top = sum(c * _upper(x) for c, x in terms if c > 0)
            hi = (top * scale + const - nominal) // scale + 1
            if hi <= 0:
                continue
            b = self.model.new_int_var(0, hi, f"B_{cq}_{fr[0]}_{fr[1]}")
            expr = sum(c * x for c, x in terms)
            self.model.add(b * scale >= expr * scale + const - nominal)
            self.v.derive(b, _excess(terms, const - nominal, scale))
            crit.add(-1, b, hi)
        return crit


def wait_weight(w: Workload, now: datetime | None) -> int:
    """1 + floor(log2(1 + minutes waited)): 1 for a job queued now (or with
    no clock), 2 after a minute, 6 after an hour, 11 after 17 hours.  The
    wait counts from the queue order time, as in Kueue's order
    (:func:`~placewise.solver.cpsat.model.aging.minutes_waited`)."""
    minutes = minutes_waited(w, now)
    return 1 if minutes is None else (1 + minutes).bit_length()


def pack(criteria: list[Criterion]) -> list[Stage]:
    """Criteria in order, as few stages as weights below STAGE_RANGE allow;
    inside a stage each criterion outweighs the whole range of the later ones."""
    out: list[Stage] = []
    current: list[Criterion] = []
    span = 1

    def flush() -> None:
        terms: Terms = []
        weight = 1
        lo = hi = 0
        for crit in reversed(current):
            terms += [(weight * c, x) for c, x in crit.terms]
            lo += weight * crit.lo
            hi += weight * crit.hi
            weight *= crit.hi - crit.lo + 1
        name = "+".join(c.name for c in current)
        out.append(Stage(name, terms, lo, hi))

    for crit in criteria:
        width = crit.hi - crit.lo + 1
        if current and span * width > STAGE_RANGE:
            flush()
            current, span = [], 1
        current.append(crit)
        span *= width
    if current:
        flush()
    return out


def _excess(terms: Terms, const: int, scale: int) -> Derive:
    """Smallest ``b`` with ``b * scale >= scale * sum(terms) + const``, >= 0."""

    def value(val: dict[int, int]) -> int:
        total = scale * sum(c * val[x.index] for c, x in terms) + const
        return max(0, -(-total // scale))

    return value


def _upper(x: cp_model.IntVar) -> int:
    return int(list(x.proto.domain)[-1])


def priced_vector(
    snapshot: Snapshot, plan: Plan, stages: list[Stage], pol: Policy
) -> list[int]:
    """The GPU stages' values for ``plan`` as the model ranks them (up to a
    constant per stage): per tier GPUs x weight + other demand, less the
    price of the victims it preempts: its own tier's, and a lower tier's
    where the model's attribution charges this tier -- the plan admits one
    of this tier's workloads that may evict it and none of a tier between
    (:mod:`.attribution`).  With nothing priced this orders plans as
    :func:`placewise.solver.policy.primary_vector` does."""
    figs = {f.priority: f for f in tier_figures(snapshot, plan, pol)}
    evicted = {p.workload for p in plan.preemptions}
    admitted = {a.workload for a in plan.admissions}
    out: list[int] = []
    for st in stages:
        if not st.gpus:
            continue
        if st.tier is None:
            value = sum(f.gpus for f in figs.values())
        else:
            f = figs.get(st.tier)
            value = 0 if f is None else st.weight * f.gpus + f.other
            value += st.weight * aged_value(snapshot, plan, st.tier, pol)
        paid = 0
        for k, u in st.costs.items():
            if k not in evicted:
                continue
            if k not in st.cross:
                paid += u  # a victim of this tier (or the one GPU stage)
                continue
            members, between = st.cross[k]
            if admitted & members and not admitted & between:
                paid += u
        out.append(value - paid)
    return out
