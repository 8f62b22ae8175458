"""``binpack-gang``: all-or-nothing gangs, best-fit binpacking, priority/FIFO order.

The style of a batch scheduler such as Volcano with its ``gang`` and
``binpack`` plugins: jobs are taken in priority then creation order, every
pod of a job is allocated tentatively, and the whole allocation is kept only
if the job reaches its minimum (``minCount``, else every pod) — otherwise it
is discarded and the nodes are free for the next job.  Quota is admitted as
a ClusterQueue would (see :mod:`placewise.solver.baselines.common`); a job that does
not fit its first quota-fitting flavor tries the next one, as a gang
scheduler re-tries a job on every eligible node pool.

Placement is best fit:

* a node's binpack score is the weighted utilisation after the pod,
  ``sum_r w_r * (used_r + request_r) / allocatable_r / sum_r w_r`` over the
  resources the pod requests (cpu 1, memory 1, accelerators 2 — the common
  Volcano setting that adds ``nvidia.com/gpu`` to ``binpack.resources``);
  the highest score wins, the lower node index on ties;
* a required topology level is a hard network-topology constraint: of the
  domains at that level that hold the whole gang, the one with the least room
  (best fit); a preferred level does the same and falls back to the whole
  cluster when no single domain holds the gang;
* a slice layer (``size`` pods per domain of its level) is packed slice by
  slice into the slice-level domain with the fewest free slices that still
  has one.  With several slice layers the innermost one is packed and the
  result re-checked against the others (a failing check fails the gang).
"""

from __future__ import annotations

import numpy as np

from placewise.models.cluster import ClusterQueue
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSet, Workload
from placewise.solver.baselines.common import BaselineScheduler
from placewise.solver.baselines.records import (
    BaselineOutcome,
    FlavorChoice,
    FlavorIndex,
    FloatArray,
    GroupDomains,
    IntArray,
    Placement,
    PodSetPlacement,
)
from placewise.solver.kueue.resources import ACCELERATORS

WEIGHTS: dict[str, float] = {"cpu": 1.0, "memory": 1.0} | {r: 2.0 for r in ACCELERATORS}
"""Binpack weights per resource; resources not listed do not score."""


class BinpackGangScheduler(BaselineScheduler):
    """Gang all-or-nothing with best-fit node and domain choice."""

    name = "binpack-gang"
    try_all_flavors = True

    def place(self, w: Workload, cq: ClusterQueue, choice: FlavorChoice) -> Placement:
        placements: list[PodSetPlacement] = []
        groups = GroupDomains()
        failure: str | None = None
        for ps, count in zip(w.pod_sets, choice.counts, strict=True):
            job = self.start(cq, ps, count, choice)
            placed, fi, vec = job.placed, job.fi, job.vec
            placements.append(placed)
            if job.problem is not None:
                failure = job.problem
                break
            if fi is None or vec is None:
                continue  # not topology-placed
            floor = min(ps.min_count if ps.min_count is not None else count, count)
            fixed = groups.get(ps)
            got = self._pack(fi, ps, vec, count, floor, fixed)
            if isinstance(got, str):
                failure = f"pod set {ps.name}: {got}"
                break
            placed.leaf_pods = got
            placed.count = sum(got.values())
            failure = self.topology_failure(fi, ps, got, fixed)
            if failure is not None:
                break
            self.take(placed)
            groups.note(ps, fi, got)
        if failure is not None:
            for placed in placements:
                self.release(placed)
                placed.leaf_pods, placed.count, placed.topology = {}, 0, None
        return Placement(placements, failure)

    # -- packing ----------------------------------------------------------------

    def _pack(
        self,
        fi: FlavorIndex,
        ps: PodSet,
        vec: IntArray,
        count: int,
        floor: int,
        group_domain: tuple[int, int] | None,
    ) -> dict[int, int] | str:
        """Leaf -> pods for between ``floor`` and ``count`` pods, or why none."""
        tree = fi.tree
        free = tree.rem.copy()
        mask = self.leaf_mask(fi, ps)
        levels = tree.levels
        leaf_level = tree.depth - 1
        if ps.topology.slices:
            inner = ps.topology.slices[-1]
            if inner.level not in levels:
                return f"slice level {inner.level} is not in the topology"
            s_level, size = levels.index(inner.level), inner.size
        else:
            s_level, size = leaf_level, 1
        fit = np.where(mask, np.minimum(self.fit_counts(free, vec), count), 0)
        req, pref = ps.topology.required, ps.topology.preferred
        level = (
            levels.index(req)
            if req in levels
            else (levels.index(pref) if pref in levels else None)
        )
        want = count - count % size
        low = -(-floor // size) * size
        scope = np.ones(tree.n_leaves, dtype=np.bool_)
        if group_domain is not None:
            scope = fi.domain_of[group_domain[0]] == group_domain[1]
        elif level is not None:
            units = self._units(fi, fit, s_level, size)
            cap = np.bincount(
                fi.domain_of[level][units[0]],
                weights=units[1] * size,
                minlength=tree.sizes[level],
            ).astype(np.int64)
            full = np.flatnonzero(cap >= want)
            if full.size:
                domain = int(full[np.argmin(cap[full])])
            elif cap.size and cap.max() >= low and req is not None:
                domain = int(np.argmax(cap))
                want = int(cap[domain])
            elif req is not None:
                best = int(cap.max()) if cap.size else 0
                return f"no {req} domain holds {low} pod(s) (largest holds {best})"
            else:
                domain = -1  # preferred: no single domain, use the whole cluster
            if domain >= 0:
                scope = fi.domain_of[level] == domain
        fit = np.where(scope, fit, 0)
        units = self._units(fi, fit, s_level, size)
        total = int(units[1].sum()) * size
        if total < low:
            return f"{total} pod(s) fit on eligible nodes, {low} needed"
        target = min(want, total)
        return self._fill(fi, free, fit, vec, target, s_level, size)

    @staticmethod
    def _units(
        fi: FlavorIndex, fit: IntArray, s_level: int, size: int
    ) -> tuple[IntArray, IntArray]:
        """(first leaf, whole slices) of every slice-level domain."""
        doms = fi.domain_of[s_level]
        n = fi.tree.sizes[s_level]
        per = np.bincount(doms, weights=fit, minlength=n).astype(np.int64) // size
        first = np.searchsorted(doms, np.arange(n))
        first = np.minimum(first, doms.size - 1)
        return first, per

    def _fill(
        self,
        fi: FlavorIndex,
        free: IntArray,
        fit: IntArray,
        vec: IntArray,
        target: int,
        s_level: int,
        size: int,
    ) -> dict[int, int]:
        """Slice by slice into the tightest slice domain, pods onto the fullest node."""
        out: dict[int, int] = {}
        doms = fi.domain_of[s_level]
        leaf_level = fi.tree.depth - 1

        def put(leaf: int) -> None:
            free[:, leaf] -= vec
            fit[leaf] -= 1
            out[leaf] = out.get(leaf, 0) + 1

        for _ in range(target // size):
            if s_level == leaf_level:
                cand = np.flatnonzero(fit >= size)
                leaf = int(cand[np.argmax(self._binpack(fi, free, vec, cand))])
                for _pod in range(size):
                    put(leaf)
                continue
            _, units = self._units(fi, fit, s_level, size)
            has = np.flatnonzero(units > 0)
            inside = np.flatnonzero(doms == int(has[np.argmin(units[has])]))
            for _pod in range(size):
                cand = inside[fit[inside] > 0]
                put(int(cand[np.argmax(self._binpack(fi, free, vec, cand))]))
        return out

    def _binpack(
        self, fi: FlavorIndex, free: IntArray, vec: IntArray, cand: IntArray
    ) -> FloatArray:
        """Weighted utilisation after one more pod (higher = fuller = better)."""
        score = np.zeros(cand.size, dtype=np.float64)
        total = 0.0
        for r, weight in WEIGHTS.items():
            i = self.tas.resource_index.get(r)
            if i is None or vec[i] <= 0:
                continue
            alloc = fi.alloc[i, cand]
            used = alloc - free[i, cand] + vec[i]
            score += weight * used / np.maximum(alloc, 1)
            total += weight
        return score / total if total else score


def run_binpack_gang(snapshot: Snapshot, seed: int = 0) -> BaselineOutcome:
    return BinpackGangScheduler(snapshot, seed).run()


def solve_binpack_gang(snapshot: Snapshot, seed: int = 0) -> Plan:
    return run_binpack_gang(snapshot, seed).plan
