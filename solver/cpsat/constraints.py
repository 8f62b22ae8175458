"""Constraint families of the joint model: exactly the validator's feasibility.

Every family is one private method; :meth:`Constraints.add_constraints`
lists them in order.  Resources are scaled per resource by the gcd of the
coefficients that multiply variables, so coefficients stay small and
right-hand sides are floored exactly.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from math import gcd

from ortools.sat.python import cp_model

from placewise.models.quantity import UNLIMITED
from placewise.solver.cpsat.data import PODS, ModelData
from placewise.solver.cpsat.variables import Variables
from placewise.solver.quota import FR, QuotaNode

LinearTerms = list[tuple[int, cp_model.IntVar]]


def _unlimited(x: int) -> bool:
    return x >= UNLIMITED // 2


class Constraints:
    def __init__(
        self,
        model: cp_model.CpModel,
        data: ModelData,
        v: Variables,
        unattributed: frozenset[str] = frozenset(),
    ) -> None:
        self.unattributed = unattributed
        """Victims allowed without an admitted preemptor: only to evaluate a
        greedy plan whose preemptor lost the freed capacity to another."""
        self.model = model
        self.data = data
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
        self.cq_usage: dict[tuple[str, FR], tuple[LinearTerms, int, int]] = {}
        """(queue, fr) -> (usage in scaled units without constants, raw constant,
        scale) for queues whose usage some decision changes."""

    def add_constraints(self) -> None:
        self._pod_counts()
        self._one_flavor_per_group()
        self._collect_usage()  # before quota and victims, which read it
        self._quota_with_cohorts()
        self._topology_counts()
        self._required_domains()
        self._slices()
        self._leaf_capacity()
        self._victims_need_preemptors()
        self._strict_fifo()

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
                covered = cq.resource_groups[rg].covered_resources
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
            hi = sum(abs(c) for c, _x in terms) * self._max_count() + abs(shift) + 1
            e = self.model.new_int_var(0, hi, f"E_{node.id}_{fr[0]}_{fr[1]}")
            self.model.add(e >= expr + shift)
            up_terms, up_const, floor0 = [(1, e)], 0, max(0, shift)
        limit = node.borrowing_limit.get(fr)
        if limit is not None and not _unlimited(subtree) and not _unlimited(limit):
            cap = subtree - lq + limit
            up_expr = sum(c * x for c, x in up_terms)
            self.model.add(up_expr <= max((cap - up_const) // scale, floor0))
        return up_terms, up_const

    def _max_count(self) -> int:
        return max((pd.count for pd in self.data.pod_sets), default=1)

    # -- topology ------------------------------------------------------------------

    def _topology_counts(self) -> None:
        """Pods of a TAS pod set land on leaves of its chosen TAS flavor."""
        for pd in self.data.pod_sets:
            var = self.v.pod_sets[pd.idx]
            if not pd.tas:
                continue
            for (_rg, f), u in var.u.items():
                if f not in self.data.topos:
                    continue
                leaves = [x for (ff, _l), x in var.place.items() if ff == f]
                self.model.add(sum(leaves) == u)

    def domain_of(self, flavor: str, leaf: int, level: str) -> tuple[str, ...]:
        topo = self.data.topos[flavor]
        path = topo.paths[leaf]
        return path[: topo.levels.index(level) + 1]

    def _required_domains(self) -> None:
        """A required level puts every pod (and a group's leader) in one domain."""
        data = self.data
        self.domains: dict[tuple[int, str, tuple[str, ...]], cp_model.IntVar] = {}
        for gd in data.groups:
            members = [data.pod_sets[p] for p in gd.pod_sets if data.pod_sets[p].tas]
            level = next(
                (m.ps.topology.required for m in members if m.ps.topology.required),
                None,
            )
            if level is None:
                continue
            wv = self.v.workloads[gd.wl]
            for (g, _rg, f), x in wv.flavor.items():
                if g != gd.idx or f not in data.topos:
                    continue
                doms: dict[tuple[str, ...], cp_model.IntVar] = {}
                for m in members:
                    for (ff, leaf), place in self.v.pod_sets[m.idx].place.items():
                        if ff != f:
                            continue
                        d = self.domain_of(f, leaf, level)
                        if d not in doms:
                            doms[d] = self.model.new_bool_var(f"G{gd.idx}_F{f}_D{d}")
                        fit = self.v.pod_sets[m.idx].fits[(f, leaf)]
                        self.model.add(place <= fit * doms[d])
                self.model.add(sum(doms.values()) == x)
                for d, b in doms.items():
                    self.domains[(gd.idx, f, d)] = b

    def _slices(self) -> None:
        """Pods per slice-level domain come in whole slices."""
        for pd in self.data.pod_sets:
            var = self.v.pod_sets[pd.idx]
            for layer in pd.ps.topology.slices:
                if layer.size <= 1:
                    continue
                by_dom: dict[tuple[str, tuple[str, ...]], list[cp_model.IntVar]] = (
                    defaultdict(list)
                )
                for (f, leaf), place in var.place.items():
                    by_dom[(f, self.domain_of(f, leaf, layer.level))].append(place)
                for (f, d), places in by_dom.items():
                    k = self.model.new_int_var(
                        0, pd.count // layer.size, f"P{pd.idx}_F{f}_K{d}"
                    )
                    self.model.add(sum(places) == layer.size * k)

    def _leaf_capacity(self) -> None:
        """Per TAS leaf and resource: placed pods fit in free plus released capacity."""
        rows: dict[tuple[int, str], LinearTerms] = defaultdict(list)
        for pd in self.data.pod_sets:
            per_pod = dict(pd.ps.requests)
            per_pod[PODS] = 1
            for (_f, leaf), place in self.v.pod_sets[pd.idx].place.items():
                for r, q in per_pod.items():
                    if q:
                        rows[(leaf, r)].append((q, place))
        for vd, x in zip(self.data.victims, self.v.victims, strict=True):
            for leaf, usage in vd.leaf_usage.items():
                for r, q in usage.items():
                    if q and (leaf, r) in rows:
                        rows[(leaf, r)].append((-q, x))
        for (leaf, r), terms in sorted(rows.items(), key=lambda kv: kv[0]):
            free = self.data.leaves[leaf].free.get(r, 0)
            if _unlimited(free):
                continue
            if all(c < 0 for c, _ in terms):
                continue
            if sum(c for c, _ in terms if c > 0) * self._max_count() <= free:
                continue  # can never bind
            g = 0
            for c, _x in terms:
                g = gcd(g, abs(c))
            row = sum((c // g) * x for c, x in terms)
            if free >= 0:
                self.model.add(row <= free // g)
                continue
            # Already over allocatable (victims still releasing, a node that
            # shrank): a leaf the plan places pods on must end within
            # allocatable, so releases there must cover the deficit as well
            # as the placement; a leaf it leaves alone may stay over.
            used = self.model.new_bool_var(f"over_L{leaf}_{r}")
            self.model.add(row <= free // g).only_enforce_if(used)
            for c, x in terms:
                if c > 0:
                    self.model.add(x == 0).only_enforce_if(~used)

    # -- preemption and queues -------------------------------------------------------

    def _victims_need_preemptors(self) -> None:
        """A victim needs an admitted preemptor its queue policy allows."""
        data = self.data
        for vd, victim in zip(data.victims, self.v.victims, strict=True):
            pairs = data.pairs.get(vd.idx, [])
            # A relaxed model builds exactly the same variables (its values
            # hint the strict one by index) and only drops victim <= sum(s).
            relaxed = vd.info.key in self.unattributed
            if not pairs and not relaxed:
                self.model.add(victim == 0)
                continue
            ss = []
            for w, frs, need_nominal, dynamic in pairs:
                s = self.v.pairs[(w, vd.idx)]
                ss.append(s)
                wv = self.v.workloads[w]
                self.model.add(s <= wv.admit)
                uses = self._uses(w, frs)
                for fr in sorted(dynamic):
                    uses.append(self._takes_while_borrowing(w, vd.info.cq, fr))
                self.model.add(s <= sum(uses))
                if need_nominal:
                    self.model.add(s <= self._within_nominal_alone(w))
            if not relaxed:
                self.model.add(victim <= sum(ss))

    def _uses(self, w: int, frs: frozenset[FR]) -> list[cp_model.IntVar]:
        """Flavor choices of ``w`` that put it on one of ``frs``."""
        wd = self.data.workloads[w]
        return [
            x
            for (_g, rg, f), x in self.v.workloads[w].flavor.items()
            if any(
                fr[0] == f and fr[1] in wd.cq.resource_groups[rg].covered_resources
                for fr in frs
            )
        ]

    def _takes_while_borrowing(self, w: int, cq: str, fr: FR) -> cp_model.IntVar:
        """1 only if ``w`` takes ``fr``'s flavor and ``cq`` borrows on ``fr``
        at the plan's peak (one per workload, queue and fr, shared by every
        victim of that queue)."""
        key = (w, cq, fr)
        if key not in self._both:
            both = self.model.new_bool_var(f"D{w}_{cq}_{fr[0]}_{fr[1]}")
            self.model.add(both <= sum(self._uses(w, frozenset([fr]))))
            self.model.add(both <= self._peak_borrowing(cq, fr))
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
            expr = sum((c // scale) * x for c, x in terms)
            self.model.add(expr >= need).only_enforce_if(b)
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
        for fr, own in sorted(self.own_terms[w].items(), key=lambda kv: kv[0]):
            scale = self._scale(fr)
            terms = own + self.victim_terms.get((cq, fr), [])
            expr = sum((c // scale) * x for c, x in terms)
            rhs = (node.nominal.get(fr, 0) - base.get(fr, 0)) // scale
            self.model.add(expr <= rhs).only_enforce_if(b)
        self._alone[w] = b
        return b

    def _strict_fifo(self) -> None:
        """StrictFIFO: a workload is admitted only if all ahead of it are."""
        for chain in self.data.strict_chains:
            for ahead, behind in itertools.pairwise(chain):
                self.model.add(
                    self.v.workloads[behind].admit <= self.v.workloads[ahead].admit
                )
