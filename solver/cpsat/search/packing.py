"""Packing on the leaves: the free capacity table and one workload's admission.

The warm start (:mod:`.warmstart`) and the decoder's fill
(:mod:`placewise.solver.cpsat.decode.finish`) both place workloads this way:
a pod set's flavors first-fit in the queue's order under the quota tree's
``available`` (so every prefix of a plan is within quota, as Kueue checks
it), and pods best-fit over the leaves with numpy: a required (or
preferred) domain is, of those that hold the pod set, first one whose holes
hold it without breaking a whole host, then the one with the least room to
spare; a preferred one that no domain holds alone is spread over the
roomiest; and inside a domain the fullest leaves that still fit are filled
first.  Whole hosts are what whole-host gangs placed later need.  Slices
above the leaf level and multi-pod-set groups that cannot be placed whole
stay pending.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from placewise.models.workload import PodSetAssignment
from placewise.solver.cpsat.decode.plan_io import pod_set_assignment
from placewise.solver.cpsat.tuning import MAX_COMBINATIONS
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.problem.data import (
    ModelData,
    PodSetData,
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
        self.accelerator_cols = [col[r] for r in self.resources if r in ACCELERATORS]
        """Columns of the accelerators (what :func:`choose` keeps whole)."""
        self._accelerators = np.asarray(self.accelerator_cols, dtype=np.int64)
        free = np.zeros((len(data.leaves), max(len(col), 1)), dtype=np.int64)
        self.capacity = np.full(free.shape, CLIP, dtype=np.int64)
        """A host's allocatable per column (CLIP on aggregated leaves, which
        are never one whole host): all of it free, the host is whole."""
        for lf in data.leaves:
            for r, q in lf.free.items():
                if r in col:
                    free[lf.idx, col[r]] = max(-CLIP, min(q, CLIP))
            node = data.snapshot.nodes.get(lf.node or "")
            if node is not None:
                for r, q in node.allocatable.items():
                    if r in col:
                        self.capacity[lf.idx, col[r]] = min(q, CLIP)
        self.free = free
        self.intact = np.zeros(len(free), dtype=bool)
        """Per leaf: a host with every accelerator free (kept up to date by
        :meth:`take`; read by :func:`choose` to keep whole hosts whole)."""
        self.mark_intact(np.arange(len(free), dtype=np.int64))
        self.cache: dict[tuple[str, int], tuple[IntArray, IntArray, IntArray]] = {}
        self.changed: list[IntArray] = []
        """Leaves changed since the start, in order (see :meth:`refresh`)."""
        self.seen: dict[tuple[str, int], int] = {}
        """Cached fit -> how many of ``changed`` it has been refreshed for."""
        self.position: dict[str, IntArray] = {}
        """flavor -> per leaf, its position in the flavor's leaves (-1: none)."""
        self.index: dict[str, IntArray] = {}
        self.domains: dict[tuple[str, int], IntArray] = {}
        self._members: dict[tuple[str, int], tuple[IntArray, IntArray]] = {}
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

    def members(self, f: str, level: int) -> tuple[IntArray, IntArray]:
        """(positions of ``f``'s leaves sorted by their domain at ``level``,
        where each domain's run starts, one past the last at the end)."""
        key = (f, level)
        got = self._members.get(key)
        if got is None:
            dom = self.domains[key]
            order = np.argsort(dom, kind="stable").astype(np.int64)
            starts = np.searchsorted(dom[order], np.arange(int(dom.max()) + 2))
            got = self._members[key] = (order, starts.astype(np.int64))
        return got

    def fit(self, f: str, shape: int, need: IntArray, mask: IntArray) -> IntArray:
        """Units of a shape that fit on every leaf of ``f`` (0 where the mask
        forbids); kept per shape and refreshed only where leaves changed."""
        key = (f, shape)
        if key not in self.cache:
            self.cache[key] = (need, mask, self._fit(self.index[f], need, mask))
        elif self.seen[key] < len(self.changed):
            mark = np.zeros(len(self.free), dtype=bool)  # not np.unique: no sort
            mark[np.concatenate(self.changed[self.seen[key] :])] = True
            leaves = np.nonzero(mark)[0]
            need, mask, fit = self.cache[key]
            pos = self.position[f][leaves]
            pos = pos[pos >= 0]
            if len(pos):
                fit[pos] = self._fit(self.index[f][pos], need, mask[pos])
        self.seen[key] = len(self.changed)
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
        self.mark_intact(leaves)
        if refresh:
            self.refresh(leaves)

    def mark_intact(self, leaves: IntArray) -> None:
        """Re-read whether each of ``leaves`` is a whole host (after a
        change to ``free``: :meth:`take` calls it; so must code that writes
        ``free`` directly)."""
        if len(self._accelerators):
            rows = np.ix_(leaves, self._accelerators)
            self.intact[leaves] = np.all(self.free[rows] >= self.capacity[rows], axis=1)

    def refresh(self, leaves: IntArray) -> None:
        """Mark ``leaves`` changed: each cached fit is brought up to date
        when it is next read (:meth:`fit`), not on every change — the warm
        start's evictions change leaves thousands of times while most
        shapes are read far more rarely (refreshing every shape on every
        change was a third of best-fit's time at 10,000 hosts)."""
        self.changed.append(np.asarray(leaves, dtype=np.int64))


def choose(
    lv: Leaves, spec: Spec, units: int, fit: IntArray, need: IntArray | None = None
) -> list[tuple[int, int]] | None:
    """(position in the flavor's leaves, units) for ``units`` units, or None.

    Leaves that fit fewer units come first and, among those, the ones that
    a unit leaves with the fewest accelerators free (with ``need``): a
    6-GPU pod fits once on a host with 6 free and on an empty 8-GPU host
    alike, and taking the empty host strands 2 GPUs where a whole-host gang
    could have gone."""
    f = spec.flavor
    level = spec.required if spec.required is not None else spec.preferred
    if level is not None:
        dom = lv.domains[(f, level)]
        room = np.bincount(dom, weights=fit, minlength=int(dom.max()) + 1)
        whole = np.nonzero(room >= units)[0]
        if len(whole):
            # First a domain whose holes hold the units without breaking a
            # whole host (hosts a whole-host gang of a later workload needs),
            # then the tightest in units, then in accelerators: of two racks
            # that hold a gang of 3-GPU pods alike, the one whose room is
            # holes rather than whole hosts.
            broken = _whole_hosts_used(lv, f, dom, fit, need, units, whole)
            whole = whole[broken == broken.min()]
            tied = whole[room[whole] == room[whole].min()]
            if len(tied) > 1:
                gpus = _domain_accelerators(lv, f, level, tied, need)
                tied = tied[np.lexsort((tied, gpus))]
            order = [int(tied[0])]
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
        spare = _left_after(lv, f, positions, need)
        positions = positions[np.lexsort((positions, spare, fit[positions], key))]
    else:
        positions = np.nonzero(fit > 0)[0]
        spare = _left_after(lv, f, positions, need)
        positions = positions[np.lexsort((positions, spare, fit[positions]))]
    out: list[tuple[int, int]] = []
    left = units
    for pos in positions:
        take = int(min(left, fit[pos]))
        out.append((int(pos), take))
        left -= take
        if left == 0:
            return out
    return None


def _whole_hosts_used(
    lv: Leaves,
    f: str,
    dom: IntArray,
    fit: IntArray,
    need: IntArray | None,
    units: int,
    doms: IntArray,
) -> IntArray:
    """For each of ``doms``, the units that would not fit in its holes (its
    leaves with some accelerator in use) and so take whole hosts.  A pod
    set that prefers a block went to the tightest block that held it, and
    when that block's holes ran short it broke whole hosts while other
    blocks had holes to spare: at 10,000 hosts the top tier's 6-GPU pods
    took ~130 whole hosts the next tier's whole-host gangs waited for."""
    if need is None or not len(_asked(lv, need)):
        return np.zeros(len(doms), dtype=np.int64)
    pos = np.nonzero(fit)[0]
    holes = np.bincount(
        dom[pos],
        weights=np.where(lv.intact[lv.index[f][pos]], 0, fit[pos]),
        minlength=int(dom.max()) + 1,
    )
    return np.maximum(units - holes[doms], 0).astype(np.int64)


def _asked(lv: Leaves, need: IntArray | None) -> IntArray:
    """The accelerator columns a unit asks for (none without ``need``)."""
    cols = [] if need is None else [c for c in lv.accelerator_cols if need[c] > 0]
    return np.asarray(cols, dtype=np.int64)


def _domain_accelerators(
    lv: Leaves, f: str, level: int, doms: IntArray, need: IntArray | None
) -> IntArray:
    """For each of ``doms`` (domain ids of ``f`` at ``level``), the
    accelerators the unit asks for that are free there (zeros without
    ``need``).  Only the domains' own leaves are read: at 50,000 hosts
    summing every leaf per placement took 3.5 s of best-fit's 19 s."""
    cols = _asked(lv, need)
    if need is None or not len(cols):
        return np.zeros(len(doms), dtype=np.int64)
    order, starts = lv.members(f, level)
    lens = starts[doms + 1] - starts[doms]
    first = np.concatenate(([0], np.cumsum(lens)[:-1]))
    pos = order[np.arange(int(lens.sum())) + np.repeat(starts[doms] - first, lens)]
    free = np.maximum(lv.free[np.ix_(lv.index[f][pos], cols)], 0).sum(axis=1)
    owner = np.repeat(np.arange(len(doms)), lens)
    return np.bincount(owner, weights=free, minlength=len(doms)).astype(np.int64)


def _left_after(
    lv: Leaves, f: str, positions: IntArray, need: IntArray | None
) -> IntArray:
    """At those positions of ``f``'s leaves, the accelerators one unit
    leaves free (zeros without ``need`` or where the unit asks for none)."""
    cols = _asked(lv, need)
    if need is None or not len(cols):
        return np.zeros(len(positions), dtype=np.int64)
    leaves = lv.index[f][positions]
    if len(cols) == 1:  # one accelerator: a plain gather, several times faster
        return np.asarray(lv.free[leaves, cols[0]] - need[cols[0]], dtype=np.int64)
    rows = lv.free[np.ix_(leaves, cols)]
    return np.asarray((rows - need[cols]).sum(axis=1), dtype=np.int64)


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
            got = choose(lv, spec, pd.count // spec.unit, fit, need)
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
