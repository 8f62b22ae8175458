"""``kube-default``: Kueue quota admission, then kube-scheduler's default profile.

What a cluster runs when Kueue admits on quota alone (no TAS, no gang
scheduling) and hands the pods to an unmodified kube-scheduler: each pod is
filtered and scored on its own, in priority/creation order, and a pod that
fits nowhere simply stays Pending while its siblings keep their nodes.  The
plan can therefore admit only the workloads whose pods *all* landed (or at
least ``minCount`` of them, for elastic jobs); the others are pending in the
plan but, as in a real cluster, still hold their quota reservation and the
nodes their bound pods took (:class:`~placewise.solver.baselines.common.PartialGang`).

Scoring, per pod, over every feasible node (kube-scheduler scores a sample
of nodes on large clusters; scoring all of them is the kinder assumption):

* ``NodeResourcesFit`` with ``LeastAllocated`` on cpu and memory (weight 1):
  the mean of ``(allocatable - requested) * 100 / allocatable`` — which
  spreads pods, and is why GPUs fragment: GPUs are not a scored resource in
  the default profile;
* ``NodeResourcesBalancedAllocation`` (weight 1): ``(1 - std of the cpu and
  memory fractions) * 100``;
* ``InterPodAffinity`` (weight 2) for a *preferred* topology: the preferred
  level becomes a preferred pod affinity to the job's own pods, normalised to
  0..100 over the candidates as kube-scheduler does.

A *required* level becomes a required pod affinity to the job's own pods on
that level's label — the way a Kubernetes user keeps a job in one rack
without Kueue: the first pod may go anywhere (Kubernetes lets a pod that
matches its own affinity term start a domain), the rest must follow it.
Slice constraints become the same per slice (each group of ``size`` pods
has its own affinity term).  PodTopologySpread's system defaults select only
pods of Services/ReplicaSets/StatefulSets, not Job pods, so they do not
apply.  Ties between equal top scores are broken at random, as
kube-scheduler's ``selectHost`` does, from a generator seeded by ``seed``.
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
    GroupDomains,
    IntArray,
    Placement,
    PodSetPlacement,
)


class KubeDefaultScheduler(BaselineScheduler):
    """Pod-by-pod placement with kube-scheduler's default scores, no gangs."""

    name = "kube-default"
    try_all_flavors = False

    def __init__(self, snapshot: Snapshot, seed: int = 0) -> None:
        super().__init__(snapshot, seed)
        self.rng = np.random.default_rng(seed)
        self._cpu = self.tas.resource_index.get("cpu")
        self._mem = self.tas.resource_index.get("memory")

    def place(self, w: Workload, cq: ClusterQueue, choice: FlavorChoice) -> Placement:
        placements: list[PodSetPlacement] = []
        groups = GroupDomains()
        failure: str | None = None
        for ps, count in zip(w.pod_sets, choice.counts, strict=True):
            job = self.start(cq, ps, count, choice)
            placed, fi, vec = job.placed, job.fi, job.vec
            placements.append(placed)
            if fi is None or vec is None:
                # Not topology-placed (nothing to bind), or no node can
                # take it: the other pod sets still bind what they can.
                failure = failure or job.problem
                continue
            fixed = groups.get(ps)
            got = self._schedule_pods(fi, ps, vec, count, fixed)
            placed.leaf_pods = {leaf: n for leaf, n in got.items() if n > 0}
            placed.count = sum(placed.leaf_pods.values())
            self.take(placed)
            groups.note(ps, fi, placed.leaf_pods)
            floor = ps.min_count if ps.min_count is not None else count
            if placed.count < min(floor, count):
                failure = failure or (
                    f"{count - placed.count} of {count} pods of pod set {ps.name} "
                    "found no node (no gang scheduling: the bound pods keep theirs)"
                )
            elif failure is None:
                failure = self.topology_failure(fi, ps, placed.leaf_pods, fixed)
        return Placement(placements, failure)

    def _schedule_pods(
        self,
        fi: FlavorIndex,
        ps: PodSet,
        vec: IntArray,
        count: int,
        group_domain: tuple[int, int] | None,
    ) -> dict[int, int]:
        """kube-scheduler's loop for ``count`` identical pods: filter, score, bind."""
        tree = fi.tree
        free = tree.rem.copy()
        mask = self.leaf_mask(fi, ps)
        rows = np.flatnonzero(vec > 0)
        levels = tree.levels
        required = (
            levels.index(ps.topology.required)
            if ps.topology.required in levels
            else None
        )
        preferred = (
            levels.index(ps.topology.preferred)
            if ps.topology.preferred in levels
            else None
        )
        layers = [
            (levels.index(layer.level), layer.size)
            for layer in ps.topology.slices
            if layer.level in levels
        ]
        gang_domain = None
        if group_domain is not None and group_domain[0] == required:
            gang_domain = group_domain[1]
        slice_domain: dict[tuple[int, int], int] = {}
        pref_count: dict[int, int] = {}
        out: dict[int, int] = {}
        for i in range(count):
            ok = mask & (free[rows] >= vec[rows, None]).all(axis=0)
            if required is not None and gang_domain is not None:
                ok &= fi.domain_of[required] == gang_domain
            for n, (k, size) in enumerate(layers):
                d = slice_domain.get((n, i // size))
                if d is not None:
                    ok &= fi.domain_of[k] == d
            cand = np.flatnonzero(ok)
            if cand.size == 0:
                continue  # this pod stays Pending; its siblings keep going
            score = self._score(fi, free, vec, cand)
            if preferred is not None and pref_count:
                doms = fi.domain_of[preferred][cand]
                raw = np.asarray(
                    [pref_count.get(int(d), 0) for d in doms], dtype=np.int64
                )
                lo, hi = int(raw.min()), int(raw.max())
                if hi > lo:
                    score = score + 2 * ((raw - lo) * 100 // (hi - lo))
            best = cand[score == score.max()]
            pick = int(self.rng.integers(best.size)) if best.size > 1 else 0
            leaf = int(best[pick])
            free[:, leaf] -= vec
            out[leaf] = out.get(leaf, 0) + 1
            if required is not None and gang_domain is None:
                gang_domain = int(fi.domain_of[required][leaf])
            for n, (k, size) in enumerate(layers):
                slice_domain.setdefault((n, i // size), int(fi.domain_of[k][leaf]))
            if preferred is not None:
                d = int(fi.domain_of[preferred][leaf])
                pref_count[d] = pref_count.get(d, 0) + 1
        return out

    def _score(
        self, fi: FlavorIndex, free: IntArray, vec: IntArray, cand: IntArray
    ) -> IntArray:
        """LeastAllocated + BalancedAllocation on cpu and memory (0..200)."""
        fractions = []
        least = np.zeros(cand.size, dtype=np.int64)
        used_rows = [r for r in (self._cpu, self._mem) if r is not None]
        for r in used_rows:
            alloc = fi.alloc[r, cand]
            requested = alloc - free[r, cand] + vec[r]
            safe = np.maximum(alloc, 1)
            least += np.where(alloc > 0, (alloc - requested) * 100 // safe, 0)
            fractions.append(np.minimum(requested / safe, 1.0))
        if not used_rows:
            return least
        least //= len(used_rows)
        if len(fractions) == 2:
            std = np.abs(fractions[0] - fractions[1]) / 2
            balanced = ((1.0 - std) * 100).astype(np.int64)
        else:
            balanced = np.full(cand.size, 100, dtype=np.int64)
        out: IntArray = least + balanced
        return out


def run_kube_default(snapshot: Snapshot, seed: int = 0) -> BaselineOutcome:
    """The plan, plus the gangs left partially bound (what the plan cannot show)."""
    return KubeDefaultScheduler(snapshot, seed).run()


def solve_kube_default(snapshot: Snapshot, seed: int = 0) -> Plan:
    return run_kube_default(snapshot, seed).plan
