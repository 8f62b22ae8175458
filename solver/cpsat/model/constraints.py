"""Constraint families of the joint model: exactly the validator's feasibility.

Every family is one private method; :meth:`Constraints.add_constraints`
lists them in order.  Resources are scaled per resource by the gcd of the
coefficients that multiply variables, so coefficients stay small and
right-hand sides are floored exactly.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Mapping
from math import gcd
from typing import Literal

from ortools.sat.python import cp_model

from placewise.models.cluster import PODS
from placewise.models.quantity import UNLIMITED
from placewise.solver.cpsat.model import foreign
from placewise.solver.cpsat.model.placement import Placement
from placewise.solver.cpsat.model.variables import Derive, Variables
from placewise.solver.kueue.quota import FR, QuotaNode
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.pairs import Pair

LinearTerms = list[tuple[int, cp_model.IntVar]]
Mode = Literal["plan", "bound", "relaxed", "classes"]


def _unlimited(x: int) -> bool:
    return x >= UNLIMITED // 2


class Constraints:
    def __init__(
        self,
        model: cp_model.CpModel,
        problem: Problem,
        v: Variables,
    ) -> None:
        self.model = model
        self.data = problem.data
        self.layout = problem.layout
        self.v = v
        self.usage_terms: dict[tuple[str, FR], LinearTerms] = defaultdict(list)
        """(queue, fr) -> coefficient/variable terms of the queue's usage."""
        self.own_terms: dict[int, dict[FR, LinearTerms]] = defaultdict(
            lambda: defaultdict(list)
        )
        """(workload, fr) -> the workload's own usage terms."""
        self.victim_terms: dict[tuple[str, FR], LinearTerms] = defaultdict(list)
        """(queue, fr) -> usage its running workloads give back when evicted."""
        self._scales: dict[FR, int] = {}
        self._peak: dict[tuple[str, FR], cp_model.IntVar] = {}
        self._both: dict[tuple[int, str, FR], cp_model.IntVar] = {}
        self._alone: dict[int, cp_model.IntVar] = {}
        self._links: dict[tuple[Pair, str], cp_model.IntVar] = {}
        self._nominal_links: dict[tuple[object, ...], cp_model.IntVar] = {}
        self.cq_usage: dict[tuple[str, FR], tuple[LinearTerms, int, int]] = {}
        """(queue, fr) -> (usage in scaled units without constants, raw constant,
        scale) for queues whose usage some decision changes."""

    def add_constraints(self, mode: Mode = "plan") -> None:
        """``plan``: every rule, the plan's model.  ``bound``: a relaxation of
        every plan the validator accepts — StrictFIFO order, which it does not
        judge, is dropped.  ``relaxed``: ``bound`` with pods needing room only
        in each TAS flavor's total capacity (small, for ceilings).
        ``classes``: ``bound`` without placement rows, which the caller adds
        in arrays (:mod:`placewise.solver.bound.classes`)."""
        self._pod_counts()
        self._one_flavor_per_group()
        self._collect_usage()  # before quota and victims, which read it
        self._quota_with_cohorts()
        if mode == "relaxed":
            self._aggregate_capacity()
        elif mode != "classes":
            self._placement()
        self._victims_need_preemptors()
        if mode == "plan":
            self._room_to_the_entitled()
            self._strict_fifo()
        self._exclusive_copies()

    # -- admission and flavors -------------------------------------------------

    def _pod_counts(self) -> None:
        """Pods under the chosen flavors add up to the admitted count."""
        for pd in self.data.pod_sets:
            var = self.v.pod_sets[pd.idx]
            by_rg: dict[int, list[cp_model.IntVar]] = defaultdict(list)
            for (rg, _f), u in var.u.items():
                by_rg[rg].append(u)
            for us in by_rg.values():
                self.model.add(sum(us) == var.n)

    def _one_flavor_per_group(self) -> None:
        """One flavor per resource group per pod-set group, if admitted."""
        for gd in self.data.groups:
            wv = self.v.workloads[gd.wl]
            for rg, flavors in gd.flavors.items():
                xs = [wv.flavor[(gd.idx, rg, f)] for f in flavors]
                self.model.add(sum(xs) == wv.admit)
                for p in gd.pod_sets:
                    count = self.data.pod_sets[p].count
                    for f, x in zip(flavors, xs, strict=True):
                        self.model.add(self.v.pod_sets[p].u[(rg, f)] <= count * x)

    # -- quota ---------------------------------------------------------------------

    def _collect_usage(self) -> None:
        for pd in self.data.pod_sets:
            cq = self.data.workloads[pd.wl].cq
            for (rg, f), u in self.v.pod_sets[pd.idx].u.items():
                covered = self.data.groups[pd.group].serves[rg]
                for r, q in pd.requests.items():
                    if r in covered and q:
                        self.usage_terms[(cq.name, (f, r))].append((q, u))
                        self.own_terms[pd.wl][(f, r)].append((q, u))
        for vd, x in zip(self.data.victims, self.v.victims, strict=True):
            for fr, q in vd.info.usage.items():
                if q:
                    self.usage_terms[(vd.info.cq, fr)].append((-q, x))
                    self.victim_terms[(vd.info.cq, fr)].append((-q, x))

    def _quota_with_cohorts(self) -> None:
        """kueue-semantics §9: per tree node, usage within subtree quota and limits."""
        tree = self.data.tree
        frs = sorted({fr for (_cq, fr) in self.usage_terms})
        roots = {id(n): n for n in (tree.root(cq) for cq, _ in self.usage_terms)}
        for fr in frs:
            scale = self._scale(fr)
            for root in roots.values():
                self._node(root, fr, scale)

    def _scale(self, fr: FR) -> int:
        """gcd of everything added to a usage sum before a max(0, .): the
        coefficients, the constant usages and the local quotas.  Then U - lq
        is a whole number of units and the scaled model is exact."""
        if fr in self._scales:
            return self._scales[fr]
        g = 0
        for (_cq, key), terms in self.usage_terms.items():
            if key == fr:
                for q, _x in terms:
                    g = gcd(g, abs(q))
        for node in self.data.tree.nodes.values():
            g = gcd(g, node.local_quota(fr))
        for usage in self.data.base_usage.values():
            g = gcd(g, usage.get(fr, 0))
        self._scales[fr] = g or 1
        return self._scales[fr]

    def _node(self, node: QuotaNode, fr: FR, scale: int) -> tuple[LinearTerms, int]:
        """Usage of ``node`` in units of ``scale``: (terms, constant numerator).

        Returns the expression max(0, U - lq) passes to the parent, adding
        the node's own constraints on the way up.
        """
        if node.id.startswith("cq:"):
            name = node.id[3:]
            terms = [(q // scale, x) for q, x in self.usage_terms.get((name, fr), [])]
            const = self.data.base_usage.get(name, {}).get(fr, 0)
            if terms:
                self.cq_usage[(name, fr)] = (terms, const, scale)
        else:
            terms, const = [], 0
            for child in node.children:
                t, c = self._node(child, fr, scale)
                terms += t
                const += c
        return self._limits(node, fr, scale, terms, const)

    def _limits(
        self, node: QuotaNode, fr: FR, scale: int, terms: LinearTerms, const: int
    ) -> tuple[LinearTerms, int]:
        """Constraints of one node; returns what it passes to its parent.

        ``terms`` are in units of ``scale``, ``const`` in raw units, so the
        node's usage is ``scale * terms + const``.  Right-hand sides never go
        below the value at "no decision taken" (0), so a tree that is
        already over quota stays feasible without new usage.
        """
        subtree, lq = node.subtree.get(fr, 0), node.local_quota(fr)
        if not terms:
            # No decision touches this subtree: it passes a constant up.
            return [], max(0, const - lq) if node.parent is not None else const
        expr = sum(c * x for c, x in terms)
        if node.parent is None:
            if not _unlimited(subtree):
                self.model.add(expr <= max((subtree - const) // scale, 0))
            return terms, const
        if lq == 0:
            up_terms, up_const, floor0 = terms, const, 0
        else:
            # e * scale >= U - lq  <=>  e >= expr + ceil((const - lq) / scale)
            shift = -((lq - const) // scale)
            hi = sum(abs(c) * _ub(x) for c, x in terms) + abs(shift) + 1
            e = self.model.new_int_var(0, hi, f"E_{node.id}_{fr[0]}_{fr[1]}")
            self.model.add(e >= expr + shift)
            self.v.derive(e, _positive_part(terms, shift))
            up_terms, up_const, floor0 = [(1, e)], 0, max(0, shift)
        limit = node.borrowing_limit.get(fr)
        if limit is not None and not _unlimited(subtree) and not _unlimited(limit):
            cap = subtree - lq + limit
            up_expr = sum(c * x for c, x in up_terms)
            self.model.add(up_expr <= max((cap - up_const) // scale, floor0))
        return up_terms, up_const

    # -- topology ------------------------------------------------------------------

    def _placement(self) -> None:
        """TAS pods land on host classes (:mod:`.placement`)."""
        data = self.data
        units: dict[tuple[int, str], cp_model.IntVar] = {}
        chosen: dict[tuple[int, str], cp_model.IntVar] = {}
        for pd in data.pod_sets:
            if not pd.tas:
                continue
            wv = self.v.workloads[pd.wl]
            for (rg, f), u in self.v.pod_sets[pd.idx].u.items():
                if f in data.topos:
                    units[(pd.idx, f)] = u
                    chosen[(pd.idx, f)] = wv.flavor[(pd.group, rg, f)]
        self.placement = Placement(
            self.model,
            data,
            self.layout,
            self.v.victims,
            self.v.derive,
            units,
            chosen,
        )
        self.placement.build()

    def _aggregate_capacity(self) -> None:
        """Per TAS flavor and resource: pods fit the flavor's free capacity
        summed over its leaves, plus everything victims there could free."""
        data = self.data
        rows: dict[tuple[str, str], LinearTerms] = defaultdict(list)
        for pd in data.pod_sets:
            if not pd.tas:
                continue
            per_pod = dict(pd.ps.requests)
            per_pod[PODS] = 1
            for (_rg, f), u in self.v.pod_sets[pd.idx].u.items():
                if f in data.topos:
                    for r, q in per_pod.items():
                        if q > 0:
                            rows[(f, r)].append((q, u))
        for (f, r), terms in sorted(rows.items()):
            leaves = set(data.topos[f].leaves)
            free = sum(max(0, data.leaves[lf].free.get(r, 0)) for lf in leaves)
            if free >= UNLIMITED // 2:
                continue
            for vd, x in zip(data.victims, self.v.victims, strict=True):
                back = sum(
                    u.get(r, 0) for lf, u in vd.leaf_usage.items() if lf in leaves
                )
                if back:
                    terms = [*terms, (-back, x)]
            self.model.add(sum(c * x for c, x in terms) <= free)

    # -- preemption and queues -------------------------------------------------------

    def _victims_need_preemptors(self) -> None:
        """A victim needs an admitted preemptor its queue policy allows: some
        member of a linked class takes a shared flavor-resource (and, where
        borrowWithinCohort does not allow the pair, ends within nominal)."""
        data = self.data
        for vd, victim in zip(data.victims, self.v.victims, strict=True):
            pairs = data.pairs.get(vd.idx, [])
            if not pairs:
                self.model.add(victim == 0)
                continue
            self.model.add(victim <= sum(self._link(p, vd.info.cq) for p in pairs))

    def _room_to_the_entitled(self) -> None:
        """A victim's room serves only queues entitled to it (:mod:`.foreign`);
        the plan's model only, as bounds need not decode."""
        placement: Placement | None = getattr(self, "placement", None)
        if placement is None:
            return
        data = self.data
        by_queue: dict[int, dict[str, list[Pair]]] = {}
        for vd in data.victims:
            per: dict[str, list[Pair]] = defaultdict(list)
            for p in data.pairs.get(vd.idx, []):
                if p.members:
                    per[data.workloads[p.members[0]].cq.name].append(p)
            by_queue[vd.idx] = per

        def links(vi: int, queue: str) -> list[cp_model.IntVar]:
            vd = data.victims[vi]
            return [self._link(p, vd.info.cq) for p in by_queue[vd.idx].get(queue, [])]

        placement.foreign = foreign.build(placement, links)

    def _link(self, pair: Pair, vcq: str) -> cp_model.IntVar:
        """1 only if some member of ``pair`` can be the preemptor; one per
        (members, conditions), shared by every victim with the same link."""
        key = (pair, vcq if pair.dynamic else "")
        if key in self._links:
            return self._links[key]
        terms = [x for w in pair.members for x in self._capable(w, pair, vcq)]
        a = self.model.new_bool_var(f"A{len(self._links)}")
        self.model.add(a <= sum(terms))
        self.v.derive(a, _any(terms))
        self._links[key] = a
        return a

    def _capable(self, w: int, pair: Pair, vcq: str) -> list[cp_model.IntVar]:
        """Indicators that ``w`` is admitted and could preempt under ``pair``."""
        uses = self._uses(w, pair.frs)
        for fr in sorted(pair.dynamic):
            uses.append(self._takes_while_borrowing(w, vcq, fr))
        if not pair.need_nominal:
            return uses
        key = (w, pair.frs, pair.dynamic, vcq if pair.dynamic else "")
        if key not in self._nominal_links:
            t = self.model.new_bool_var(f"T{w}_{len(self._nominal_links)}")
            alone = self._within_nominal_alone(w)
            self.model.add(t <= sum(uses))
            self.model.add(t <= alone)
            self.v.derive(t, _both(uses, alone))
            self._nominal_links[key] = t
        return [self._nominal_links[key]]

    def credit(
        self,
        values: dict[int, int],
        named: dict[str, str],
        leaves: Mapping[int, set[int]] | None = None,
    ) -> dict[int, int]:
        """victim index -> the workload credited with evicting it: an admitted
        member of a linked class that can preempt, the plan's named preemptor
        first (Kueue may have given the freed room to another workload), else
        the first in queue order.  With ``leaves`` (workload -> the leaves the
        decoded plan puts it on), those placed on a leaf the victim frees come
        first: the room an eviction frees must serve its preemptor (the
        validator's ``preemption.unneeded`` and ``room-elsewhere``), and a
        credit that ignores where the room went leaves the settling pass to
        undo the plan."""
        data = self.data
        leaves = leaves or {}
        out: dict[int, int] = {}
        for vd, victim in zip(data.victims, self.v.victims, strict=True):
            if not values[victim.index]:
                continue
            able = [
                w
                for p in data.pairs.get(vd.idx, [])
                for w in p.members
                if any(values[x.index] for x in self._capable(w, p, vd.info.cq))
            ]
            want = named.get(vd.info.key)
            freed = vd.leaf_usage.keys()
            near = [w for w in able if not leaves.get(w, set()).isdisjoint(freed)]
            pool = near or able
            chosen = next(
                (w for w in pool if data.workloads[w].key == want),
                pool[0] if pool else None,
            )
            if chosen is not None:
                out[vd.idx] = chosen
        return out

    def _uses(self, w: int, frs: frozenset[FR]) -> list[cp_model.IntVar]:
        """Flavor choices of ``w`` that put it on one of ``frs``."""
        return [
            x
            for (g, rg, f), x in self.v.workloads[w].flavor.items()
            if any(fr[0] == f and fr[1] in self.data.groups[g].serves[rg] for fr in frs)
        ]

    def _takes_while_borrowing(self, w: int, cq: str, fr: FR) -> cp_model.IntVar:
        """1 only if ``w`` takes ``fr``'s flavor and ``cq`` borrows on ``fr``
        at the plan's peak (one per workload, queue and fr, shared by every
        victim of that queue)."""
        key = (w, cq, fr)
        if key not in self._both:
            both = self.model.new_bool_var(f"D{w}_{cq}_{fr[0]}_{fr[1]}")
            uses = self._uses(w, frozenset([fr]))
            peak = self._peak_borrowing(cq, fr)
            self.model.add(both <= sum(uses))
            self.model.add(both <= peak)
            self.v.derive(both, _both(uses, peak))
            self._both[key] = both
        return self._both[key]

    def _peak_borrowing(self, cq: str, fr: FR) -> cp_model.IntVar:
        """1 only if ``cq`` uses more than its nominal quota on ``fr`` with
        its running work (victims included) and the plan's admissions."""
        key = (cq, fr)
        if key not in self._peak:
            b = self.model.new_bool_var(f"B_{cq}_{fr[0]}_{fr[1]}")
            scale = self._scale(fr)
            terms = [
                (q, u)
                for (q, u) in self.usage_terms.get(key, [])
                if q > 0  # admissions only: victims still count at the peak
            ]
            node = self.data.tree.node(cq)
            base = self.data.base_usage.get(cq, {}).get(fr, 0)
            # usage > nominal  <=>  scaled admissions >= floor((N - base)/s) + 1
            need = (node.nominal.get(fr, 0) - base) // scale + 1
            scaled = [(c // scale, x) for c, x in terms]
            if need > 0:  # b -> expr >= need, linear because expr >= 0
                self.model.add(sum(c * x for c, x in scaled) >= need * b)
            self.v.derive(b, _at_least(scaled, need))
            self._peak[key] = b
        return self._peak[key]

    def _within_nominal_alone(self, w: int) -> cp_model.IntVar:
        """1 only if ``w``'s queue ends within nominal quota, judged as the
        validator judges a reclaim that borrowWithinCohort does not allow:
        with the running workloads that stay plus ``w`` alone (later
        admissions into the queue do not undo a legal reclaim).  One
        indicator per workload, shared by all of its victims."""
        if w in self._alone:
            return self._alone[w]
        b = self.model.new_bool_var(f"N{w}")
        cq = self.data.workloads[w].cq.name
        node = self.data.tree.node(cq)
        base = self.data.base_usage.get(cq, {})
        rows: list[tuple[LinearTerms, int]] = []
        for fr, own in sorted(self.own_terms[w].items(), key=lambda kv: kv[0]):
            scale = self._scale(fr)
            terms = own + self.victim_terms.get((cq, fr), [])
            scaled = [(c // scale, x) for c, x in terms]
            expr = sum(c * x for c, x in scaled)
            rhs = (node.nominal.get(fr, 0) - base.get(fr, 0)) // scale
            top = sum(c * _ub(x) for c, x in scaled if c > 0)
            if top > rhs:  # b -> expr <= rhs, as a big-M row
                self.model.add(expr + (top - rhs) * b <= top)
            rows.append((scaled, rhs))
        self.v.derive(b, _all_within(rows))
        self._alone[w] = b
        return b

    def _strict_fifo(self) -> None:
        """StrictFIFO: a workload is admitted only if all ahead of it are."""
        for chain in self.data.strict_chains:
            for ahead, behind in itertools.pairwise(chain):
                self.model.add(
                    self.v.workloads[behind].admit <= self.v.workloads[ahead].admit
                )

    def _exclusive_copies(self) -> None:
        """Copies of one MultiKueue manager Workload (one per worker): at most
        one is admitted, none when a fixed decision admits one already."""
        groups: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        for wd in self.data.workloads:
            if wd.obj.exclusive is not None:
                groups[wd.obj.exclusive].append(self.v.workloads[wd.idx].admit)
        taken: set[str] = set()
        for adm in self.data.fixed_admissions:
            fixed = self.data.snapshot.workloads.get(adm.workload)
            if fixed is not None and fixed.exclusive is not None:
                taken.add(fixed.exclusive)
        for group, admits in sorted(groups.items()):
            self.model.add(sum(admits) <= (0 if group in taken else 1))


def _ub(x: cp_model.IntVar) -> int:
    # The proto's repeated field does not support negative indexing.
    return int(list(x.proto.domain)[-1])


# -- how auxiliary variables follow from the decisions ---------------------------


def _sum(terms: LinearTerms, val: dict[int, int]) -> int:
    return sum(c * val[x.index] for c, x in terms)


def _positive_part(terms: LinearTerms, shift: int) -> Derive:
    return lambda val: max(0, _sum(terms, val) + shift)


def _both(uses: list[cp_model.IntVar], peak: cp_model.IntVar) -> Derive:
    return lambda val: min(
        max((val[u.index] for u in uses), default=0), val[peak.index]
    )


def _at_least(terms: LinearTerms, need: int) -> Derive:
    return lambda val: int(_sum(terms, val) >= need)


def _any(terms: list[cp_model.IntVar]) -> Derive:
    return lambda val: int(any(val[x.index] for x in terms))


def _all_within(rows: list[tuple[LinearTerms, int]]) -> Derive:
    return lambda val: int(all(_sum(t, val) <= rhs for t, rhs in rows))
