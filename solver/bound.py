"""Upper bounds on the accelerator units (GPUs) running after any feasible plan.

Benchmarks report an optimizer's gap against a *proven* ceiling, so this
module bounds the quantity "accelerators running after the plan" (running
minus preempted plus admitted, see :func:`gpus_after`) over every plan the
validator accepts — a superset of what the CP-SAT model can express — and
never relies on the solvers' own bookkeeping beyond the static facts of
:func:`placewise.solver.problem.data.compile_data` (eligible flavors, TAS leaves with
their free capacity, victims' usage).  Two bounds, reported as the smaller:

* the **LP relaxation** (:func:`lp_bound`): a continuous admission fraction per
  pending workload, pod counts in ``[minCount, count]`` scaled by it, flavor
  shares per pod-set group and resource group, the quota tree in the linear
  form of kueue-semantics §9 (``max(0, U - lq)`` as auxiliary variables),
  per-leaf TAS capacity rows with continuous pods per leaf, a domain share
  per required-topology pod set (pods in a domain between minCount and what
  fits there, times its share), and a continuous eviction fraction for every
  running workload some pending workload's queue policy may preempt;
* the **aggregate ceiling** (:func:`aggregate_bound`): per accelerator
  flavor-resource, the smallest of the cohort tree's quota ceiling, running
  plus eligible pending demand, and (TAS flavors) the nodes' free capacity.

Every relaxation step keeps the bound valid, only looser: where the
validator checks a rule only when the plan touches something (a node already
over quota, a leaf already over capacity) the row's right-hand side is
``max(limit, value before the plan)``; rules the validator does not enforce
(StrictFIFO order, "the preemptor is admitted") are left out; slices and
preferred levels are dropped.  Workloads the CP-SAT model cannot express
(TAS flavors in two resource groups, minCount on two pod sets) enter the LP
with their quota rows but without topology rows; ones whose requests exceed
any finite quota add their whole demand as a constant.  Accelerator counts
are integers, so the LP optimum is floored (with a 1e-6 tolerance).

Placement columns grow as pod sets x TAS leaves; beyond ``COARSE_CELLS`` the
leaves of each parent domain (rack) are grouped: one column per pod set and
group, bounded by the sum of its leaves' fits, and one capacity row per
group and resource, the sum of the leaves' rows — implied by them, so still
valid, only blind to how pod sets would share single hosts.

Solver choice, measured on this 2-core machine (highspy 1.15.1, CBC 2.10.3
through pulp 3.3.2's ``PULP_CBC_CMD``):

* highspy cannot share a process with OR-Tools: both wheels ship a
  ``libhighs.so.1`` (different HiGHS versions, one SONAME), the loader reuses
  whichever came first, and the second import fails with an undefined
  symbol — in either order.  pulp's ``HiGHS`` class is highspy, so it fails
  the same way; ``HiGHS_CMD`` needs a ``highs`` executable no wheel ships.
  HiGHS therefore runs in a child interpreter fed the CSR matrix (numpy
  ``.npz`` on stdin), at a fixed ~0.3-0.45 s for starting it.
* LP solve time (best of 3) on generated families, columns x rows:
  ``default`` 2.3k x 0.7k: HiGHS 0.47 s, CBC 0.20 s; ``preemption-heavy``
  7.3k x 1.2k: 0.61 / 0.58 s; ``scale-300`` 11.7k x 2.5k: 0.60 / 0.76 s;
  ``fragmented`` 16.6k x 3.2k: 0.88 / 1.58 s; ``multi-team`` 18.8k x 2.9k:
  0.73 / 1.14 s; ``topology-heavy`` 47k x 34k: 1.31 / 3.78 s; the demo
  (59 x 62): 0.30 / 0.01 s.  Both found the same optimum everywhere.

So HiGHS serves better from about 10k columns (1.3-2.9x faster, and the gap
grows with size), CBC below that (its process starts in milliseconds).
``solver="highs"`` is the default because benchmark instances are the large
ones; tests and small instances may pass ``solver="cbc"``.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from placewise.models.cluster import PODS
from placewise.models.plan import Plan
from placewise.models.quantity import UNLIMITED
from placewise.models.scheduling import untolerated
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.kueue.eligibility import flavor_rejection
from placewise.solver.kueue.quota import FR, QuotaNode
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.problem.data import (
    MAX_REQUEST,
    ModelData,
    PodSetData,
    VictimData,
    compile_data,
)

__all__ = [
    "ACCELERATORS",
    "BoundResult",
    "aggregate_bound",
    "gpus_after",
    "lp_bound",
    "running_gpus",
]


LpSolver = Literal["highs", "cbc"]
INF = math.inf
TOLERANCE = 1e-6
"""Relative slack before flooring the LP optimum: a simplex optimum a hair
below an integer must not lose that integer."""

COARSE_CELLS = 300_000
"""Per-leaf placement columns above which leaves are grouped by parent domain
(rack).  Measured: scale-1000 (130k columns) solves per leaf in ~15 s with
HiGHS and its bound is 10% tighter than grouped (4756 vs 5293 GPUs);
scale-3000 would need ~1.8M columns, grouped it is 176k and ~18 s."""
BIG = 1 << 62

# Reasons compile_data gives for workloads no validator-feasible plan admits.
_INFEASIBLE = ("resource ", "no eligible flavor")


@dataclass(frozen=True, slots=True)
class BoundResult:
    """The best proven bound and how it was obtained."""

    value: float
    """min(LP bound, aggregate bound), in accelerator units."""
    method: str
    """``lp-highs`` / ``lp-cbc`` when the LP is the smaller, else ``aggregate``."""
    seconds: float
    lp: float | None = None
    """The floored LP bound (None when the LP could not be solved)."""
    aggregate: float = INF
    running: float = 0.0
    """Accelerators running before the plan (the bound with nothing admitted
    and nothing evicted is at least this)."""
    status: str = ""
    """The LP solver's status text."""
    columns: int = 0
    rows: int = 0


def _is_unlimited(x: float) -> bool:
    return x >= UNLIMITED // 2


def _acc(usage: Mapping[str, int], accelerators: Sequence[str]) -> int:
    return sum(v for r, v in usage.items() if r in accelerators)


def running_gpus(snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS) -> int:
    """Accelerators held by running workloads (quota usage with a flavor)."""
    return sum(
        v
        for w in snapshot.running
        for (_f, r), v in w.usage().items()
        if r in accelerators
    )


def gpus_after(
    snapshot: Snapshot, plan: Plan, accelerators: Sequence[str] = ACCELERATORS
) -> int:
    """Accelerators running after ``plan``: the quantity every bound here bounds."""
    evicted = {p.workload for p in plan.preemptions}
    total = sum(
        v
        for w in snapshot.running
        if w.key not in evicted
        for (_f, r), v in w.usage().items()
        if r in accelerators
    )
    for adm in plan.admissions:
        for psa in adm.pod_set_assignments:
            total += sum(
                v
                for r, v in psa.resource_usage.items()
                if r in accelerators and r in psa.flavors
            )
    return total


# -- the problem in index form -------------------------------------------------------


@dataclass(slots=True)
class _PodSet:
    """One pending pod set as the bound sees it (supported or relaxed)."""

    wl: int
    cq: str
    count: int
    min_count: int
    requests: dict[str, int]
    """Per pod, with ``pods: 1`` when the queue covers ``pods``."""
    per_pod: dict[str, int]
    """Per pod as placed on nodes (spec requests plus ``pods: 1``)."""
    flavors: dict[int, list[str]]
    """Resource group -> flavors it may take."""
    covered: dict[int, tuple[str, ...]]
    group: tuple[int, int]
    """(workload, group) — pod sets of one podSetGroupName share flavors."""
    tas: PodSetData | None = None
    """Set when the pod set's TAS flavors get leaf rows."""
    required: str | None = None


@dataclass(slots=True)
class _Problem:
    snapshot: Snapshot
    data: ModelData
    accelerators: Sequence[str]
    pod_sets: list[_PodSet] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    victims: list[VictimData] = field(default_factory=list)
    """Running workloads some admissible pending workload may preempt."""
    constant: int = 0
    """Accelerators of workloads kept out of the rows (added optimistically)."""

    def release(self) -> dict[int, dict[str, int]]:
        """Per leaf, everything evictions could free there."""
        out: dict[int, dict[str, int]] = {}
        for v in self.victims:
            for leaf, usage in v.leaf_usage.items():
                acc = out.setdefault(leaf, {})
                for r, q in usage.items():
                    acc[r] = acc.get(r, 0) + q
        return out


def _problem(snapshot: Snapshot, accelerators: Sequence[str]) -> _Problem:
    data = compile_data(snapshot)
    prob = _Problem(snapshot, data, accelerators)
    for wd in data.workloads:
        wl = len(prob.workloads)
        prob.workloads.append(wd.obj)
        for p in wd.pod_sets:
            pd = data.pod_sets[p]
            gd = data.groups[pd.group]
            covered = {
                rg: wd.cq.resource_groups[rg].covered_resources for rg in gd.flavors
            }
            per_pod = {r: v for r, v in pd.ps.requests.items() if v > 0}
            per_pod[PODS] = 1
            required = next(
                (
                    data.pod_sets[m].ps.topology.required
                    for m in gd.pod_sets
                    if data.pod_sets[m].tas and data.pod_sets[m].ps.topology.required
                ),
                None,
            )
            prob.pod_sets.append(
                _PodSet(
                    wl,
                    wd.cq.name,
                    pd.count,
                    pd.min_count,
                    dict(pd.requests),
                    per_pod,
                    dict(gd.flavors),
                    covered,
                    (wl, pd.group),
                    pd if pd.tas else None,
                    required,
                )
            )
    for key, reason in sorted(data.unsupported.items()):
        if reason.startswith(_INFEASIBLE):
            continue
        _add_relaxed(prob, snapshot.workloads[key], reason)
    prob.victims = _preemptible(snapshot, data)
    return prob


def _add_relaxed(prob: _Problem, w: Workload, reason: str) -> None:
    """A workload the CP-SAT model cannot express: quota rows only."""
    snap = prob.snapshot
    cq_name = snap.cluster_queue_of(w)
    if cq_name is None:
        return
    cq = snap.cluster_queues[cq_name]
    if "too large" in reason or any(
        v * max(ps.count, 1) > MAX_REQUEST
        for ps in w.pod_sets
        for v in ps.requests.values()
    ):
        prob.constant += sum(
            _acc(ps.requests, prob.accelerators) * ps.count for ps in w.pod_sets
        )
        return
    covers_pods = cq.group_of(PODS) is not None
    wl = len(prob.workloads)
    entries: list[_PodSet] = []
    for i, ps in enumerate(w.pod_sets):
        req = {r: v for r, v in ps.requests.items() if v > 0}
        if covers_pods:
            req[PODS] = 1
        flavors: dict[int, list[str]] = {}
        covered: dict[int, tuple[str, ...]] = {}
        for r in req:
            g = cq.group_of(r)
            if g is None:
                return  # uncovered resource: never admissible
            rg = cq.resource_groups[g]
            covered[g] = rg.covered_resources
            flavors[g] = [
                fq.name
                for fq in rg.flavors
                if flavor_rejection(snap, cq, fq.name, [ps], rg.covered_resources)
                is None
            ]
            if not flavors[g]:
                return
        per_pod = {r: v for r, v in ps.requests.items() if v > 0}
        per_pod[PODS] = 1
        entries.append(
            _PodSet(
                wl,
                cq.name,
                ps.count,
                ps.min_count or ps.count,
                req,
                per_pod,
                flavors,
                covered,
                (wl, -1 - i),
                None,
                None,
            )
        )
    prob.workloads.append(w)
    prob.pod_sets.extend(entries)


def _candidate_frs(snap: Snapshot, w: Workload, cq_name: str) -> set[FR]:
    """Flavor-resources a pending workload could hold (the validator's test
    for "victim and preemptor share a flavor-resource")."""
    cq = snap.cluster_queues[cq_name]
    out: set[FR] = set()
    for ps in w.pod_sets:
        needed = [r for r, v in ps.requests.items() if v > 0 and r != PODS]
        if cq.group_of(PODS) is not None:
            needed.append(PODS)
        for r in needed:
            g = cq.group_of(r)
            if g is not None:
                out.update((fq.name, r) for fq in cq.resource_groups[g].flavors)
    return out


def _within_allows(policy: str, victim: Workload, w: Workload) -> bool:
    if policy == "LowerPriority":
        return victim.priority < w.priority
    if policy == "LowerOrNewerEqualPriority":
        return victim.priority < w.priority or (
            victim.priority == w.priority
            and w.queue_order_timestamp < victim.queue_order_timestamp
        )
    return False


def _preemptible(snap: Snapshot, data: ModelData) -> list[VictimData]:
    """Running workloads that the validator would let some pending workload evict.

    The borrowing conditions of reclamation depend on the plan (they are
    judged at its peak usage), so they are relaxed: a queue policy that
    permits the pair and a shared flavor-resource are enough.
    """
    tree = data.tree
    preemptors: list[tuple[Workload, str, set[FR]]] = []
    for w in snap.admissible():
        name = snap.cluster_queue_of(w)
        if name is not None and name in snap.cluster_queues:
            preemptors.append((w, name, _candidate_frs(snap, w, name)))
    out: list[VictimData] = []
    for vd in data.victims:
        victim, vcq = vd.info.obj, vd.info.cq
        held = set(vd.info.usage)
        for w, cq_name, frs in preemptors:
            if not held & frs:
                continue
            cq = snap.cluster_queues[cq_name]
            if vcq == cq_name:
                ok = _within_allows(cq.preemption.within_cluster_queue, victim, w)
            else:
                reclaim = cq.preemption.reclaim_within_cohort
                ok = (
                    snap.is_active(vcq)
                    and tree.node(cq_name).parent is not None
                    and tree.root(cq_name) is tree.root(vcq)
                    and (
                        reclaim == "Any"
                        or (reclaim == "LowerPriority" and victim.priority < w.priority)
                    )
                )
            if ok:
                out.append(vd)
                break
    return out


# -- the LP ---------------------------------------------------------------------------


@dataclass(slots=True)
class _Lp:
    """A maximisation LP in row form: lo <= a.x <= hi, col_lo <= x <= col_hi."""

    col_lo: list[float] = field(default_factory=list)
    col_hi: list[float] = field(default_factory=list)
    cost: list[float] = field(default_factory=list)
    rows: list[tuple[dict[int, float], float, float]] = field(default_factory=list)

    def var(self, lo: float, hi: float, cost: float = 0.0) -> int:
        self.col_lo.append(lo)
        self.col_hi.append(hi)
        self.cost.append(cost)
        return len(self.cost) - 1

    def row(self, terms: Iterable[tuple[int, float]], lo: float, hi: float) -> None:
        coefs: dict[int, float] = defaultdict(float)
        for j, c in terms:
            coefs[j] += c
        coefs = {j: c for j, c in coefs.items() if c != 0.0}
        if coefs:
            self.rows.append((coefs, lo, hi))


Terms = list[tuple[int, float]]
Cell = int | tuple[str, ...]
"""A capacity row's scope: one TAS leaf, or (coarse mode) a group of leaves."""


class _Builder:
    """Writes the relaxation of one problem into an :class:`_Lp`."""

    def __init__(self, prob: _Problem) -> None:
        self.prob = prob
        self.lp = _Lp()
        self.usage: dict[tuple[str, FR], Terms] = defaultdict(list)
        """(queue, fr) -> raw-unit terms of the usage decisions change."""
        self.cap_terms: dict[tuple[Cell, str], Terms] = defaultdict(list)
        """(capacity cell, resource) -> terms of its row."""
        self.unit = self._units()
        self.coarse = _placement_cells(prob) > COARSE_CELLS
        self.cell_leaves: dict[Cell, list[int]] = {}
        self.leaf_cells: dict[int, set[Cell]] = defaultdict(set)
        self.groups: dict[str, list[tuple[Cell, np.ndarray]]] = {}
        if self.coarse:
            self._make_groups()
        self._masks: dict[tuple[str, str], np.ndarray] = {}
        self._have: dict[tuple[str, str], np.ndarray] = {}

    def _units(self) -> dict[str, float]:
        """Per resource, the largest per-pod request: rows are written in
        these units so coefficients stay near 1 (bytes of memory would
        otherwise sit beside pod counts)."""
        unit: dict[str, float] = defaultdict(lambda: 1.0)
        for ps in self.prob.pod_sets:
            for r, q in {**ps.requests, **ps.per_pod}.items():
                unit[r] = max(unit[r], float(q))
        return unit

    def build(self) -> _Lp:
        admit = [self.lp.var(0.0, 1.0) for _ in self.prob.workloads]
        release = self.prob.release()
        shares: dict[tuple[tuple[int, int], int], dict[str, int]] = {}
        for ps in self.prob.pod_sets:
            self._pod_set(ps, admit[ps.wl], shares, release)
        for vd in self.prob.victims:
            self._victim(vd)
        self._quota()
        self._leaves()
        return self.lp

    def _pod_set(
        self,
        ps: _PodSet,
        admit: int,
        shares: dict[tuple[tuple[int, int], int], dict[str, int]],
        release: dict[int, dict[str, int]],
    ) -> None:
        lp, acc = self.lp, _acc(ps.requests, self.prob.accelerators)
        if ps.min_count < ps.count:
            n = lp.var(0.0, float(ps.count), float(acc))
            lp.row([(n, 1.0), (admit, -float(ps.count))], -INF, 0.0)
            lp.row([(n, 1.0), (admit, -float(ps.min_count))], 0.0, INF)
            n_terms: Terms = [(n, 1.0)]
        else:
            lp.cost[admit] += float(acc * ps.count)
            n_terms = [(admit, float(ps.count))]
        for rg, flavors in sorted(ps.flavors.items()):
            key = (ps.group, rg)
            if key not in shares:
                # One flavor per resource group for the whole pod-set group.
                shares[key] = {f: lp.var(0.0, 1.0) for f in flavors}
                lp.row(
                    [(x, 1.0) for x in shares[key].values()] + [(admit, -1.0)],
                    0.0,
                    0.0,
                )
            us: Terms = []
            for f in flavors:
                u = lp.var(0.0, float(ps.count))
                us.append((u, 1.0))
                lp.row([(u, 1.0), (shares[key][f], -float(ps.count))], -INF, 0.0)
                for r, q in ps.requests.items():
                    if r in ps.covered[rg] and q:
                        self.usage[(ps.cq, (f, r))].append((u, float(q)))
                if ps.tas is not None and f in self.prob.data.topos:
                    self._placements(ps, f, u, shares[key][f], release)
            lp.row(us + [(j, -c) for j, c in n_terms], 0.0, 0.0)

    def _placements(
        self,
        ps: _PodSet,
        flavor: str,
        u: int,
        share: int,
        release: dict[int, dict[str, int]],
    ) -> None:
        """Pods on the flavor's leaves; a required level picks one domain."""
        assert ps.tas is not None
        if self.coarse:
            self._group_placements(ps, flavor, u, share, release)
            return
        data, lp = self.prob.data, self.lp
        topo = data.topos[flavor]
        places: Terms = []
        by_domain: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        depth = (
            topo.levels.index(ps.required) + 1
            if ps.required is not None and ps.required in topo.levels
            else None
        )
        fits = self._fits(ps, flavor, release)
        for pos in np.flatnonzero(fits > 0):
            leaf, fit = topo.leaves[int(pos)], int(fits[pos])
            p = lp.var(0.0, float(fit))
            places.append((p, 1.0))
            self.leaf_cells[leaf].add(leaf)
            self.cell_leaves[leaf] = [leaf]
            for r, q in ps.per_pod.items():
                self.cap_terms[(leaf, r)].append((p, float(q)))
            if depth is not None:
                by_domain[topo.paths[leaf][:depth]].append((p, fit))
        lp.row([*places, (u, -1.0)], 0.0, 0.0)
        if depth is not None:
            self._domains(ps, by_domain, share)

    def _domains(
        self,
        ps: _PodSet,
        by_domain: dict[tuple[str, ...], list[tuple[int, int]]],
        share: int,
        ys: Terms | None = None,
    ) -> None:
        """y_d = 1 iff the pod set sits in domain d: all its pods go there, so
        pods in d are at most min(count, what fits in d) and at least minCount."""
        lp = self.lp
        ys = list(ys or [])
        for dom in sorted(by_domain):
            members = by_domain[dom]
            room = min(ps.count, sum(fit for _p, fit in members))
            y = lp.var(0.0, 1.0 if room >= ps.min_count else 0.0)
            ys.append((y, 1.0))
            in_d = [(p, 1.0) for p, _fit in members]
            lp.row([*in_d, (y, -float(room))], -INF, 0.0)
            lp.row([*in_d, (y, -float(ps.min_count))], 0.0, INF)
        lp.row([*ys, (share, -1.0)], -INF, 0.0)

    def _victim(self, vd: VictimData) -> None:
        usage: dict[str, int] = defaultdict(int)
        for (_f, r), q in vd.info.usage.items():
            usage[r] += q
        v = self.lp.var(0.0, 1.0, -float(_acc(usage, self.prob.accelerators)))
        for fr, q in vd.info.usage.items():
            if q:
                self.usage[(vd.info.cq, fr)].append((v, -float(q)))
        for leaf, used in vd.leaf_usage.items():
            for cell in self.leaf_cells.get(leaf, ()):
                for r, q in used.items():
                    if q:
                        self.cap_terms[(cell, r)].append((v, -float(q)))

    # -- quota tree (kueue-semantics §9) ----------------------------------------------

    def _quota(self) -> None:
        tree = self.prob.data.tree
        by_fr: dict[FR, dict[int, QuotaNode]] = defaultdict(dict)
        for cq, fr in self.usage:
            root = tree.root(cq)
            by_fr[fr][id(root)] = root
        for fr, roots in sorted(by_fr.items()):
            for root in roots.values():
                self._node(root, fr)

    def _node(self, node: QuotaNode, fr: FR) -> tuple[Terms, float, float]:
        """Scaled usage of ``node``: (decision terms, constant, value before the
        plan); returns what it passes to its parent, adding its own rows."""
        unit = self.unit[fr[1]]
        if node.id.startswith("cq:"):
            name = node.id[3:]
            terms = [(j, c / unit) for j, c in self.usage.get((name, fr), [])]
            const = self.prob.data.base_usage.get(name, {}).get(fr, 0) / unit
            before = const
        else:
            terms, const, before = [], 0.0, 0.0
            for child in node.children:
                t, c, b = self._node(child, fr)
                terms += t
                const += c
                before += b
        return self._limits(node, fr, terms, const, before)

    def _limits(
        self, node: QuotaNode, fr: FR, terms: Terms, const: float, before: float
    ) -> tuple[Terms, float, float]:
        unit = self.unit[fr[1]]
        subtree, lq = node.subtree.get(fr, 0), node.local_quota(fr)
        if _is_unlimited(const * unit):
            return [], const, before  # saturated usage: nothing to bound
        if node.parent is None:
            if terms and not _is_unlimited(subtree):
                cap = max(subtree / unit, before)
                self.lp.row(terms, -INF, cap - const)
            return terms, const, before
        up_before = max(0.0, before - lq / unit)
        if not terms:
            return [], up_before, up_before
        if lq == 0:
            up_terms, up_const = terms, const
        else:
            e = self.lp.var(0.0, INF)
            self.lp.row(
                [(e, 1.0)] + [(j, -c) for j, c in terms], const - lq / unit, INF
            )
            up_terms, up_const = [(e, 1.0)], 0.0
        limit = node.borrowing_limit.get(fr)
        finite = not _is_unlimited(subtree) and not _is_unlimited(limit or 0)
        if limit is not None and finite:
            cap = max((subtree - lq + limit) / unit, up_before)
            self.lp.row(up_terms, -INF, cap - up_const)
        return up_terms, up_const, up_before

    def _leaves(self) -> None:
        """Per capacity cell and resource: placed pods fit in free plus
        released capacity.

        The validator checks only leaves the plan places pods on, so a leaf
        already over capacity bounds new pods by 0, never below; a cell of
        several leaves (coarse mode) is the sum of its leaves' rows.
        """
        leaves = self.prob.data.leaves
        for (cell, r), terms in sorted(self.cap_terms.items(), key=_row_key):
            if not any(c > 0 for _j, c in terms):
                continue
            frees = [leaves[leaf].free.get(r, 0) for leaf in self.cell_leaves[cell]]
            if any(_is_unlimited(x) for x in frees):
                continue
            unit = self.unit[r]
            room = sum(max(x, 0) for x in frees) / unit
            self.lp.row([(j, c / unit) for j, c in terms], -INF, room)

    # -- coarse placement (large instances) ------------------------------------------

    def _make_groups(self) -> None:
        """Cells of sibling leaves: the leaves of one parent domain."""
        data = self.prob.data
        for name, topo in sorted(data.topos.items()):
            by_parent: dict[Cell, list[int]] = defaultdict(list)
            for pos, leaf in enumerate(topo.leaves):
                parent = topo.paths[leaf][:-1]
                cell: Cell = (
                    ("hosts", *topo.levels, "|", *parent)
                    if topo.hostname
                    else ("pool", name, "|", *parent)
                )
                by_parent[cell].append(pos)
                self.leaf_cells[leaf].add(cell)
            groups = []
            for cell, positions in sorted(by_parent.items()):
                self.cell_leaves[cell] = [topo.leaves[p] for p in positions]
                groups.append((cell, np.asarray(positions, dtype=np.int64)))
            self.groups[name] = groups

    def _mask(self, ps: _PodSet, flavor: str) -> np.ndarray:
        """Leaves whose node the pod's taints and node selection allow."""
        assert ps.tas is not None
        placement = ps.tas.ps.placement
        key = (flavor, repr(placement))
        if key not in self._masks:
            data, snap = self.prob.data, self.prob.snapshot
            topo = data.topos[flavor]
            fl = snap.flavors[flavor]
            ok = np.ones(len(topo.leaves), dtype=bool)
            if topo.hostname:
                tolerations = placement.tolerations + fl.tolerations
                for pos, leaf in enumerate(topo.leaves):
                    node = snap.nodes.get(data.leaves[leaf].node or "")
                    if node is None:
                        continue
                    ok[pos] = not untolerated(
                        node.taints, tolerations
                    ) and placement.matches_node(node.labels, node.name)
            self._masks[key] = ok
        return self._masks[key]

    def _available(
        self, flavor: str, r: str, release: dict[int, dict[str, int]]
    ) -> np.ndarray:
        """Free plus releasable capacity of ``r`` per leaf (capped, so that
        "unlimited" never bounds a fit)."""
        key = (flavor, r)
        if key not in self._have:
            data = self.prob.data
            out = []
            for leaf in data.topos[flavor].leaves:
                have = data.leaves[leaf].free.get(r, 0)
                have += release.get(leaf, {}).get(r, 0)
                out.append(BIG if have >= UNLIMITED // 2 else min(max(have, 0), BIG))
            self._have[key] = np.asarray(out, dtype=np.int64)
        return self._have[key]

    def _fits(
        self, ps: _PodSet, flavor: str, release: dict[int, dict[str, int]]
    ) -> np.ndarray:
        """Most pods of ``ps`` each leaf of the flavor could hold: the CP-SAT
        model's ``leaf_fit`` (taints, node selection, free plus releasable
        capacity per resource), vectorised — a test holds the two equal."""
        fit = np.where(self._mask(ps, flavor), ps.count, 0).astype(np.int64)
        for r, need in ps.per_pod.items():
            if need > 0:
                fit = np.minimum(fit, self._available(flavor, r, release) // need)
        return fit

    def _group_placements(
        self,
        ps: _PodSet,
        flavor: str,
        u: int,
        share: int,
        release: dict[int, dict[str, int]],
    ) -> None:
        """Pods per group of sibling leaves, bounded by the leaves' summed fits.

        Summing leaf rows (and leaf bounds) over a group is implied by them,
        so the bound stays valid; it only forgets how pods of different pod
        sets would share single hosts.  A required leaf level keeps its
        per-leaf meaning through the best single leaf of each group.
        """
        topo = self.prob.data.topos[flavor]
        fits = self._fits(ps, flavor, release)
        depth = (
            topo.levels.index(ps.required) + 1
            if ps.required is not None and ps.required in topo.levels
            else None
        )
        leaf_level = depth == len(topo.levels)
        places: Terms = []
        ys: Terms = []
        by_domain: dict[tuple[str, ...], list[tuple[int, int]]] = defaultdict(list)
        lp = self.lp
        for cell, positions in self.groups[flavor]:
            f = fits[positions]
            if leaf_level:
                eligible = f[f >= ps.min_count]
                bound = min(ps.count, int(eligible.max())) if eligible.size else 0
            else:
                bound = min(ps.count, int(f.sum()))
            if bound <= 0:
                continue
            p = lp.var(0.0, float(bound))
            places.append((p, 1.0))
            for r, q in ps.per_pod.items():
                self.cap_terms[(cell, r)].append((p, float(q)))
            if leaf_level:
                y = lp.var(0.0, 1.0)
                ys.append((y, 1.0))
                lp.row([(p, 1.0), (y, -float(bound))], -INF, 0.0)
                lp.row([(p, 1.0), (y, -float(ps.min_count))], 0.0, INF)
            elif depth is not None:
                parent = topo.paths[topo.leaves[int(positions[0])]]
                by_domain[parent[:depth]].append((p, bound))
        lp.row([*places, (u, -1.0)], 0.0, 0.0)
        if depth is not None:
            self._domains(ps, by_domain, share, ys)


def _row_key(item: tuple[tuple[Cell, str], Terms]) -> tuple[str, str]:
    (cell, r), _terms = item
    return (repr(cell), r)


def _placement_cells(prob: _Problem) -> int:
    """Columns the per-leaf placement would create (pod sets x TAS leaves)."""
    data = prob.data
    cells = 0
    for ps in prob.pod_sets:
        if ps.tas is None:
            continue
        flavors = {f for fl in ps.flavors.values() for f in fl if f in data.topos}
        cells += sum(len(data.topos[f].leaves) for f in flavors)
    return cells


# -- back-ends ------------------------------------------------------------


_HIGHS_WORKER = """
import io, json, sys
import numpy as np
import highspy

arrays = np.load(io.BytesIO(sys.stdin.buffer.read()))
h = highspy.Highs()
h.setOptionValue("output_flag", False)
lp = highspy.HighsLp()
lp.num_col_ = int(arrays["cost"].size)
lp.num_row_ = int(arrays["row_lo"].size)
lp.col_cost_ = arrays["cost"]
lp.col_lower_ = arrays["col_lo"]
lp.col_upper_ = np.minimum(arrays["col_hi"], highspy.kHighsInf)
lp.row_lower_ = np.maximum(arrays["row_lo"], -highspy.kHighsInf)
lp.row_upper_ = np.minimum(arrays["row_hi"], highspy.kHighsInf)
lp.sense_ = highspy.ObjSense.kMaximize
lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
lp.a_matrix_.start_ = arrays["start"]
lp.a_matrix_.index_ = arrays["index"]
lp.a_matrix_.value_ = arrays["value"]
h.passModel(lp)
h.run()
status = h.getModelStatus()
optimal = status == highspy.HighsModelStatus.kOptimal
print(json.dumps({
    "status": h.modelStatusToString(status),
    "objective": h.getInfo().objective_function_value if optimal else None,
}))
"""
"""HiGHS in a child interpreter: OR-Tools and highspy both ship a
``libhighs.so.1`` (different HiGHS versions under one SONAME), and the
dynamic loader shares the first one loaded, so whichever of the two is
imported second fails with an undefined symbol.  The child imports numpy and
highspy only."""


def _solve_highspy(lp: _Lp) -> tuple[float | None, str]:
    starts: list[int] = [0]
    index: list[int] = []
    value: list[float] = []
    for coefs, _lo, _hi in lp.rows:
        index.extend(coefs)
        value.extend(coefs.values())
        starts.append(len(index))
    buf = io.BytesIO()
    np.savez(
        buf,
        cost=np.asarray(lp.cost, dtype=np.float64),
        col_lo=np.asarray(lp.col_lo, dtype=np.float64),
        col_hi=np.asarray(lp.col_hi, dtype=np.float64),
        row_lo=np.asarray([lo for _t, lo, _h in lp.rows], dtype=np.float64),
        row_hi=np.asarray([hi for _t, _l, hi in lp.rows], dtype=np.float64),
        start=np.asarray(starts, dtype=np.int32),
        index=np.asarray(index, dtype=np.int32),
        value=np.asarray(value, dtype=np.float64),
    )
    proc = subprocess.run(
        [sys.executable, "-c", _HIGHS_WORKER],
        input=buf.getvalue(),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return None, f"HiGHS worker failed: {' '.join(tail) or proc.returncode}"
    out = json.loads(proc.stdout)
    objective = out["objective"]
    return (float(objective) if objective is not None else None), str(out["status"])


def _solve_cbc(lp: _Lp) -> tuple[float | None, str]:
    """CBC through pulp (it writes an MPS file and runs pulp's bundled cbc)."""
    import pulp

    prob = pulp.LpProblem("gpu_bound", pulp.LpMaximize)
    xs = [
        prob.add_variable(f"x{j}", lo, None if math.isinf(hi) else hi)
        for j, (lo, hi) in enumerate(zip(lp.col_lo, lp.col_hi, strict=True))
    ]
    prob += pulp.LpAffineExpression([(xs[j], c) for j, c in enumerate(lp.cost) if c])
    for coefs, lo, hi in lp.rows:
        expr = pulp.LpAffineExpression([(xs[j], c) for j, c in coefs.items()])
        if lo == hi:
            prob += expr == lo
            continue
        if not math.isinf(hi):
            prob += expr <= hi
        if not math.isinf(lo):
            prob += expr >= lo
    with warnings.catch_warnings():
        # pulp 3.3 deprecates its bundled-binary class for 4.0; it is the
        # one that needs no separately installed cbc.
        warnings.simplefilter("ignore", DeprecationWarning)
        backend = pulp.PULP_CBC_CMD(msg=False)
    prob.solve(backend)
    text = str(pulp.LpStatus[prob.status])
    if prob.status != pulp.LpStatusOptimal:
        return None, text
    return float(pulp.value(prob.objective) or 0.0), text


def _solve(lp: _Lp, solver: str) -> tuple[float | None, str]:
    if not lp.cost:
        return 0.0, "Optimal"
    if solver == "highs":
        return _solve_highspy(lp)
    if solver == "cbc":
        return _solve_cbc(lp)
    raise ValueError(f"unknown LP solver {solver!r}; choose highs or cbc")


def _floor(x: float) -> float:
    return float(math.floor(x + TOLERANCE * max(1.0, abs(x))))


# -- public API -----------------------------------------------------------


def lp_bound(
    snapshot: Snapshot,
    solver: LpSolver = "highs",
    accelerators: Sequence[str] = ACCELERATORS,
) -> BoundResult:
    """The LP bound and the aggregate ceiling; ``value`` is the smaller."""
    start = time.perf_counter()
    prob = _problem(snapshot, accelerators)
    lp = _Builder(prob).build()
    raw, status = _solve(lp, solver)
    running = float(running_gpus(snapshot, accelerators))
    lp_value = _floor(raw + running + prob.constant) if raw is not None else None
    agg = _aggregate(prob)
    method, value = "aggregate", agg
    if lp_value is not None and lp_value <= agg:
        method, value = f"lp-{solver}", lp_value
    return BoundResult(
        value=value,
        method=method,
        seconds=time.perf_counter() - start,
        lp=lp_value,
        aggregate=agg,
        running=running,
        status=status,
        columns=len(lp.cost),
        rows=len(lp.rows),
    )


def aggregate_bound(
    snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS
) -> float:
    """The cheap ceiling alone (quota, demand and node capacity per flavor)."""
    return _aggregate(_problem(snapshot, accelerators))


def _aggregate(prob: _Problem) -> float:
    """Per accelerator flavor-resource: min(quota ceiling, running + eligible
    demand) per cohort tree, capped for TAS flavors by the nodes' free
    capacity plus what evictions could release; never above all running
    plus all pending demand."""
    data, acc = prob.data, prob.accelerators
    tree = data.tree
    before: dict[tuple[int, FR], float] = defaultdict(float)
    roots: dict[int, QuotaNode] = {}
    for cq, usage in data.base_usage.items():
        root = tree.root(cq)
        roots[id(root)] = root
        for fr, q in usage.items():
            if fr[1] in acc:
                before[(id(root), fr)] += q
    demand: dict[tuple[int, FR], float] = defaultdict(float)
    total_demand = 0.0
    for ps in prob.pod_sets:
        root = tree.root(ps.cq)
        roots[id(root)] = root
        for rg, flavors in ps.flavors.items():
            for r, q in ps.requests.items():
                if r in acc and r in ps.covered[rg]:
                    for f in flavors:
                        demand[(id(root), (f, r))] += q * ps.count
        total_demand += _acc(ps.requests, acc) * ps.count
    per_fr: dict[FR, float] = defaultdict(float)
    for key in sorted(set(before) | set(demand), key=lambda k: (k[1], k[0])):
        rid, fr = key
        ceiling = min(_quota_ceiling(roots[rid], fr), before[key] + demand[key])
        per_fr[fr] += ceiling
    total = 0.0
    for fr, value in per_fr.items():
        if fr[0] in data.topos:
            value = min(value, _tas_ceiling(prob, fr))
        total += value
    cap = running_gpus(prob.snapshot, acc) + total_demand
    return float(min(total, cap)) + prob.constant


def _tas_ceiling(prob: _Problem, fr: FR) -> float:
    """Usage of a TAS flavor-resource after any plan.

    Pods the plan places on a leaf fit in its allocatable minus bound pods,
    which is ``free + held`` (held: running TAS usage there); leaves the plan
    leaves alone keep at most ``held``.  Running usage of the flavor that is
    not on its leaves (no or unresolved topology assignment) stays as is.
    So usage <= before - on_leaves + Σ_leaves (held + max(free, 0)).
    """
    data = prob.data
    flavor, r = fr
    topo = data.topos[flavor]
    before = sum(u.get(fr, 0) for u in data.base_usage.values())
    held: dict[int, int] = defaultdict(int)
    on_leaves = 0
    for vd in data.victims:
        for leaf, used in vd.leaf_usage.items():
            held[leaf] += used.get(r, 0)
        for t in vd.info.tas:
            if t.flavor != flavor:
                continue
            for d in t.assignment.domains:
                if tuple(d.values) in topo.by_value:
                    on_leaves += t.per_pod.get(r, 0) * d.count
    room = sum(
        held[leaf] + max(0, data.leaves[leaf].free.get(r, 0)) for leaf in topo.leaves
    )
    return float(before - on_leaves + room)


def _quota_ceiling(root: QuotaNode, fr: FR) -> float:
    """Σ over the tree's queues of usage ≤ U_root + Σ localQuota(non-root)
    (every level hides at most its local quota from its parent), and the
    root holds at most max(S_root, its usage before the plan)."""
    subtree = root.subtree.get(fr, 0)
    if _is_unlimited(subtree):
        return INF
    local = 0
    stack = list(root.children)
    while stack:
        n = stack.pop()
        local += n.local_quota(fr)
        stack.extend(n.children)
    return float(max(subtree, root.usage.get(fr, 0)) + local)
