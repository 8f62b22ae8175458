"""Best-fit-decreasing warm start: a valid plan in under a second at any size.

Kueue's greedy is the floor whenever it finishes within the budget, but at
10,000 hosts it alone takes longer than the whole budget.  This heuristic
gives the search a first incumbent in its place: workloads in Kueue's order
(priority, then queue time), each pod set's flavors first-fit in the queue's
order under the quota tree's ``available`` (so every prefix of the plan is
within quota, as Kueue checks it), and pods placed best-fit over the leaves
with numpy: a required domain is the one that holds the pod set with the
least room to spare, a preferred one holds as much of it as possible, and
inside a domain the fullest leaves that still fit are filled first.  It
never preempts (the optimizer does that), and leaves pending what it cannot
place whole: slices above the leaf level and multi-pod-set groups.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.workload import PodSetAssignment
from placewise.solver.cpsat.decode.plan_io import pod_set_assignment
from placewise.solver.cpsat.tuning import MAX_COMBINATIONS
from placewise.solver.kueue.order import candidate_order, queue_order
from placewise.solver.kueue.preemption import satisfies_policy
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import (
    ModelData,
    PodSetData,
    VictimData,
    WorkloadData,
)
from placewise.solver.problem.layout import Layout, Spec

IntArray = npt.NDArray[np.int64]
Admitted = tuple[list[PodSetAssignment], Callable[[], None]]
CLIP = 1 << 62


class Leaves:
    """Free capacity per leaf and resource, and domain ids per flavor level."""

    def __init__(self, data: ModelData, layout: Layout) -> None:
        self.resources = sorted({r for s in layout.shapes for r, _ in s.request})
        col = {r: i for i, r in enumerate(self.resources)}
        self.col = col
        free = np.zeros((len(data.leaves), max(len(col), 1)), dtype=np.int64)
        for lf in data.leaves:
            for r, q in lf.free.items():
                if r in col:
                    free[lf.idx, col[r]] = max(-CLIP, min(q, CLIP))
        self.free = free
        self.cache: dict[tuple[str, int], tuple[IntArray, IntArray, IntArray]] = {}
        self.position: dict[str, IntArray] = {}
        """flavor -> per leaf, its position in the flavor's leaves (-1: none)."""
        self.index: dict[str, IntArray] = {}
        self.domains: dict[tuple[str, int], IntArray] = {}
        for f, topo in data.topos.items():
            leaves = np.asarray(topo.leaves, dtype=np.int64)
            self.index[f] = leaves
            position = np.full(len(data.leaves), -1, dtype=np.int64)
            position[leaves] = np.arange(len(leaves))
            self.position[f] = position
            for level in range(len(topo.levels)):
                names: dict[tuple[str, ...], int] = {}
                ids = [
                    names.setdefault(topo.paths[leaf][: level + 1], len(names))
                    for leaf in topo.leaves
                ]
                self.domains[(f, level)] = np.asarray(ids, dtype=np.int64)

    def fit(self, f: str, shape: int, need: IntArray, mask: IntArray) -> IntArray:
        """Units of a shape that fit on every leaf of ``f`` (0 where the mask
        forbids); kept per shape and refreshed only where leaves changed."""
        key = (f, shape)
        if key not in self.cache:
            self.cache[key] = (need, mask, self._fit(self.index[f], need, mask))
        return self.cache[key][2]

    def fit_now(self, f: str, need: IntArray, mask: IntArray) -> IntArray:
        """Like :meth:`fit`, computed afresh (nothing cached)."""
        return self._fit(self.index[f], need, mask)

    def _fit(self, leaves: IntArray, need: IntArray, mask: IntArray) -> IntArray:
        rows = self.free[leaves]
        fit = np.full(len(rows), CLIP, dtype=np.int64)
        for j in np.nonzero(need)[0]:
            fit = np.minimum(fit, np.maximum(rows[:, j], 0) // need[j])
        fit[mask == 0] = 0
        return fit

    def take(self, leaves: IntArray, delta: IntArray, refresh: bool = True) -> None:
        """Subtract ``delta`` (a row per leaf; leaves may repeat) and refresh
        the cached fits (or leave that to one :meth:`refresh` later)."""
        np.subtract.at(self.free, leaves, delta)
        if refresh:
            self.refresh(leaves)

    def refresh(self, leaves: IntArray) -> None:
        leaves = np.unique(leaves)
        for (f, _shape), (need, mask, fit) in self.cache.items():
            pos = self.position[f][leaves]
            pos = pos[pos >= 0]
            if len(pos):
                fit[pos] = self._fit(self.index[f][pos], need, mask[pos])


def choose(
    lv: Leaves, spec: Spec, units: int, fit: IntArray
) -> list[tuple[int, int]] | None:
    """(position in the flavor's leaves, units) for ``units`` units, or None."""
    f = spec.flavor
    level = spec.required if spec.required is not None else spec.preferred
    if level is not None:
        dom = lv.domains[(f, level)]
        room = np.bincount(dom, weights=fit, minlength=int(dom.max()) + 1)
        whole = np.nonzero(room >= units)[0]
        if len(whole):
            best = int(whole[np.argmin(room[whole])])
            order = [best]
        elif spec.required is not None:
            return None
        else:
            order = [int(d) for d in np.argsort(-room, kind="stable") if room[d] > 0]
            if not order:
                return None
        positions = np.concatenate(
            [np.nonzero((dom == d) & (fit > 0))[0] for d in order]
        )
        rank = {d: i for i, d in enumerate(order)}
        key = np.asarray([rank[int(dom[p])] for p in positions], dtype=np.int64)
        positions = positions[np.lexsort((positions, fit[positions], key))]
    else:
        positions = np.nonzero(fit > 0)[0]
        positions = positions[np.lexsort((positions, fit[positions]))]
    out: list[tuple[int, int]] = []
    left = units
    for pos in positions:
        take = int(min(left, fit[pos]))
        out.append((int(pos), take))
        left -= take
        if left == 0:
            return out
    return None


def best_fit(problem: Problem, preempt: bool = True) -> Plan:
    """A valid plan built best-fit-decreasing (with ``preempt``, evicting
    lower-priority work of the workload's own queue where its policy allows)."""
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
    order = sorted(data.workloads, key=lambda wd: _decreasing(data, wd))
    taken = {  # exclusive groups (MultiKueue copies) already admitted
        w.exclusive
        for a in data.fixed_admissions
        if (w := data.snapshot.workloads.get(a.workload)) is not None
    }
    for wd in order:
        if wd.obj.exclusive is not None and wd.obj.exclusive in taken:
            continue
        got = admit(data, layout, lv, quota, wd)
        if got is None and preempt:
            got = evictions.admit(
                wd,
                lambda wd=wd: admit(data, layout, lv, quota, wd),  # type: ignore[misc]
            )
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


class _Evictions:
    """Kueue's within-ClusterQueue preemption, simplified: candidates in
    Kueue's order until the workload fits, then every victim that can come
    back (and every one sharing no flavor-resource with the admission) is
    restored.  Reclaims from other queues are left to the optimizer."""

    def __init__(self, data: ModelData, lv: Leaves, quota: QuotaTree) -> None:
        self.data, self.lv, self.quota = data, lv, quota
        self.done: dict[str, str] = {}
        self.rows: dict[int, tuple[IntArray, IntArray]] = {}
        self.by_cq: dict[str, list[VictimData]] = defaultdict(list)
        for v in data.victims:
            self.by_cq[v.info.cq].append(v)

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
        for v in vs:
            if sign < 0:
                self.quota.remove_usage(v.info.cq, v.info.usage)
            else:
                self.quota.add_usage(v.info.cq, v.info.usage)
        parts = [self._rows(v) for v in vs]
        rows = np.concatenate([r for r, _ in parts])
        delta = np.concatenate([d for _, d in parts])
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
            self.quota.add_usage(v.info.cq, v.info.usage)
            self.lv.take(rows, delta, refresh=False)
            touched.append(rows)
        if touched:
            self.lv.refresh(np.concatenate(touched))
        return kept

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
        policy = wd.cq.preemption.within_cluster_queue
        order = candidate_order(wd.cq.name)
        cands = sorted(
            (
                v
                for v in self.by_cq.get(wd.cq.name, [])
                if v.info.key not in self.done
                and satisfies_policy(wd.info, v.info, policy)
            ),
            key=lambda v: order(v.info),
        )
        if not cands or self._short_of_quota(wd, cands):
            return None  # even evicting every candidate would not make room
        removed: list[VictimData] = []
        for v in cands:
            self.quota.remove_usage(v.info.cq, v.info.usage)
            removed.append(v)
            if not self._short_of_quota(wd):
                break
        for v in removed:  # _move releases quota and leaves together
            self.quota.add_usage(v.info.cq, v.info.usage)
        self._move(removed, -1)
        got = attempt()
        if got is None:
            # Quota fits but the pods do not: free the rest, try once more.
            rest = cands[len(removed) :]
            self._move(rest, -1)
            removed += rest
            got = attempt()
        if got is not None:
            taken = {(f, r) for psa in got[0] for r, f in psa.flavors.items()}
            kept = self._fill_back(removed)
            if all(v.info.frs & taken for v in kept):
                for v in kept:
                    self.done[v.info.key] = wd.key
                return got
            # A victim the admission shares no flavor-resource with cannot be
            # credited to it: take the admission back.
            got[1]()
            removed = kept
        self._move(removed, 1)
        return None


def admit(
    data: ModelData,
    layout: Layout,
    lv: Leaves,
    quota: QuotaTree,
    wd: WorkloadData,
) -> Admitted | None:
    """Admit one workload whole (first-fit flavors, best-fit leaves) or undo;
    returns the assignments and how to take the admission back."""
    undo: list[tuple[IntArray, IntArray]] = []
    charged: list[dict[FR, int]] = []
    chosen_for: dict[int, dict[int, str]] = {}
    placed_for: dict[int, tuple[str, dict[int, int]]] = {}

    def rollback() -> None:
        for rows, delta in undo:
            lv.take(rows, -delta)
        for usage in charged:
            quota.remove_usage(wd.cq.name, usage)

    for g in wd.groups:
        gd = data.groups[g]
        members = [data.pod_sets[p] for p in gd.pod_sets]
        if len(members) > 1 and any(m.tas for m in members):
            rollback()
            return None
        rgs = sorted(gd.flavors)
        ok = False
        for combo in itertools.islice(
            itertools.product(*(gd.flavors[rg] for rg in rgs)), MAX_COMBINATIONS
        ):
            chosen = dict(zip(rgs, combo, strict=True))
            usage = group_usage(data, wd, members, chosen)
            if any(quota.available(wd.cq.name, fr) < q for fr, q in usage.items()):
                continue
            placements = _place_all(data, layout, lv, members, chosen, undo)
            if placements is None:
                continue
            quota.add_usage(wd.cq.name, usage)
            charged.append(usage)
            for pd in members:
                chosen_for[pd.idx] = chosen
            placed_for.update(placements)
            ok = True
            break
        if not ok:
            rollback()
            return None
    psas = [
        pod_set_assignment(
            data,
            data.pod_sets[p],
            chosen_for[p],
            data.pod_sets[p].count,
            placed_for.get(p),
        )
        for p in wd.pod_sets
    ]
    return psas, rollback


def group_usage(
    data: ModelData, wd: WorkloadData, members: list[PodSetData], chosen: dict[int, str]
) -> dict[FR, int]:
    usage: dict[FR, int] = defaultdict(int)
    for pd in members:
        for rg, f in chosen.items():
            covered = data.groups[pd.group].serves[rg]
            for r, q in pd.requests.items():
                if r in covered and q:
                    usage[(f, r)] += q * pd.count
    return dict(usage)


def _place_all(
    data: ModelData,
    layout: Layout,
    lv: Leaves,
    members: list[PodSetData],
    chosen: dict[int, str],
    undo: list[tuple[IntArray, IntArray]],
) -> dict[int, tuple[str, dict[int, int]]] | None:
    """Place every TAS pod set of a group under its chosen flavor; None (with
    this call's own changes undone) when one does not fit."""
    mine: list[tuple[IntArray, IntArray]] = []
    out: dict[int, tuple[str, dict[int, int]]] = {}
    for pd in members:
        if not pd.tas:
            continue
        f = next((fl for fl in chosen.values() if fl in data.topos), None)
        spec = next(
            (
                layout.specs[i]
                for i in layout.by_pod_set.get(pd.idx, [])
                if layout.specs[i].flavor == f
            ),
            None,
        )
        got = None
        if f is not None and spec is not None and not spec.slices:
            shape = layout.shapes[spec.shape]
            need = np.zeros(lv.free.shape[1], dtype=np.int64)
            for r, q in shape.request:
                need[lv.col[r]] = q
            fit = lv.fit(f, shape.idx, need, layout.masks[f][shape.signature])
            got = choose(lv, spec, pd.count // spec.unit, fit)
        if got is None or f is None or spec is None:
            for rows, delta in reversed(mine):
                lv.take(rows, -delta)
            return None
        leaves = lv.index[f][[pos for pos, _ in got]]
        taken = np.asarray([u for _, u in got], dtype=np.int64)
        delta = np.outer(taken, need)
        lv.take(leaves, delta)
        mine.append((leaves, delta))
        out[pd.idx] = (
            f,
            {int(lf): int(u) * spec.unit for lf, u in zip(leaves, taken, strict=True)},
        )
    undo.extend(mine)
    return out
