"""The cluster after a plan, as the move search sees it.

The baselines' bookkeeping (:class:`~placewise.solver.baselines.common.
BaselineScheduler`: quota on Kueue's tree, free capacity per TAS leaf,
flavor choices, node filters) already answers "may this pod go there";
this module loads a finished plan into it — victims gone, admissions in —
and lets a search take a running workload out and put it back elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from placewise.models.cluster import PODS, ClusterQueue
from placewise.models.plan import Plan, PlanAdmission
from placewise.models.snapshot import Snapshot
from placewise.models.workload import (
    PodSet,
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
    Workload,
)
from placewise.solver.baselines.binpack_gang import BinpackGangScheduler
from placewise.solver.baselines.records import FlavorChoice, FlavorIndex, IntArray
from placewise.solver.kueue.quota import FR


@dataclass(frozen=True, slots=True)
class PodSetNeed:
    """One pod set to place on a flavor's hostname leaves."""

    name: str
    count: int
    vec: IntArray
    """Per-pod demand over the TAS resource rows (one ``pods`` each)."""
    allowed: list[int]
    """Leaves the pod may land on (node filter, leaves no victim freed)."""
    level: int | None
    """Required level index: every pod in one domain of it."""
    group: str
    """``podSetGroupName``: pod sets of one group share the domain."""


@dataclass(frozen=True, slots=True)
class Held:
    """A movable running workload: where it is and what it would need."""

    workload: Workload
    old: dict[int, IntArray]
    """Leaf -> demand it holds there now."""
    pod_sets: list[PodSetNeed]
    psas: tuple[PodSetAssignment, ...]
    lost: int
    """GPU-seconds a move throws away."""
    cost: int = 0
    """What a move costs a gang it admits, in 1/UNITS GPU of that gang
    (:func:`placewise.solver.defrag.price.move_cost`)."""


def admission_usage(psas: Iterable[PodSetAssignment]) -> dict[FR, int]:
    """Quota an admission holds: its ``resourceUsage`` under each flavor."""
    out: dict[FR, int] = {}
    for psa in psas:
        for r, v in psa.resource_usage.items():
            f = psa.flavors.get(r)
            if f is not None:
                out[(f, r)] = out.get((f, r), 0) + v
    return out


class PlanState(BinpackGangScheduler):
    """Quota and free capacity after a plan; placements by leaf index."""

    name = "defrag"

    def __init__(self, snapshot: Snapshot, plan: Plan) -> None:
        super().__init__(snapshot)
        running = {w.key: w for w in snapshot.running}
        self.freed: set[tuple[str, int]] = set()
        """(flavor, leaf) where a victim of the plan ran: room freed for its
        preemptor, which no move and no other admission takes here."""
        for pre in plan.preemptions:
            victim = running.get(pre.workload)
            if victim is None or victim.admission is None:
                continue
            self.quota.remove_usage(victim.admission.cluster_queue, victim.usage())
            for flavor, ta, per_pod in self.tas.workload_usage(victim.key):
                self.tas.remove_usage(flavor, ta, per_pod)
                tree = self.tas.tree(flavor)
                self.freed.update(
                    (flavor, leaf)
                    for d in ta.domains
                    if (leaf := tree.leaf_of(d.values)) is not None
                )
        for adm in plan.admissions:
            self.add_admission(adm)

    # -- usage ---------------------------------------------------------------

    def _tas_parts(
        self, psas: Iterable[PodSetAssignment]
    ) -> list[tuple[str, TopologyAssignment, dict[str, int]]]:
        out = []
        for psa in psas:
            ta = psa.topology_assignment
            tas = sorted(
                f for f in set(psa.flavors.values()) if f in self.tas.flavors()
            )
            if ta is None or not tas or psa.count <= 0:
                continue
            per_pod = {
                r: v // psa.count for r, v in psa.resource_usage.items() if r != PODS
            }
            out.append((tas[0], ta, per_pod))
        return out

    def add_admission(self, adm: PlanAdmission, sign: int = 1) -> None:
        usage = admission_usage(adm.pod_set_assignments)
        if sign > 0:
            self.quota.add_usage(adm.cluster_queue, usage)
        else:
            self.quota.remove_usage(adm.cluster_queue, usage)
        self.tas.update_many(self._tas_parts(adm.pod_set_assignments), sign)

    def evict(self, w: Workload, sign: int = -1) -> None:
        """Take a running workload's capacity out (-1) or back (1); its
        quota stays (a move keeps its flavors and queue)."""
        self.tas.update_many(self.tas.workload_usage(w.key), sign)

    # -- what a placement needs ----------------------------------------------------

    def needs(
        self, cq: ClusterQueue, w: Workload, choice: FlavorChoice
    ) -> tuple[str, list[PodSetNeed]] | str:
        """The flavor and pod sets of ``w`` under ``choice``, or why the move
        model does not cover it (it then waits as before)."""
        flavor: str | None = None
        out: list[PodSetNeed] = []
        for ps, count in zip(w.pod_sets, choice.counts, strict=True):
            job = self.start(cq, ps, count, choice)
            if job.problem is not None:
                return job.problem
            if job.fi is None or job.vec is None:
                continue  # not topology-placed: counted, placed nowhere
            if flavor not in (None, job.placed.flavor):
                return "pod sets on several TAS flavors"
            flavor = job.placed.flavor
            need = self._need(job.fi, flavor or "", ps, count, job.vec)
            if isinstance(need, str):
                return need
            out.append(need)
        if flavor is None:
            return "not topology-placed"
        return flavor, out

    def _need(
        self, fi: FlavorIndex, flavor: str, ps: PodSet, count: int, vec: IntArray
    ) -> PodSetNeed | str:
        tree = fi.tree
        if not tree.hostname:
            return "the flavor's topology has no hostname level"
        if ps.topology.slices:
            return "slice layers are not modelled by the move search"
        req = ps.topology.required
        level = tree.levels.index(req) if req in tree.levels else None
        mask = self.leaf_mask(fi, ps)
        allowed = [
            int(i) for i in np.flatnonzero(mask) if (flavor, int(i)) not in self.freed
        ]
        return PodSetNeed(ps.name, count, vec, allowed, level, ps.topology.group or "")

    def held(self, w: Workload, flavor: str, lost: int) -> Held | None:
        """A movable running workload on ``flavor``, or None when the move
        model cannot move it (other flavors, slices, no placement)."""
        assert w.admission is not None
        parts = self.tas.workload_usage(w.key)
        if not parts or any(f != flavor for f, _, _ in parts):
            return None
        fi = self.flavor_index(flavor)
        if fi is None:
            return None
        tree = fi.tree
        old: dict[int, IntArray] = {}
        pod_sets: list[PodSetNeed] = []
        for psa in w.admission.pod_set_assignments:
            ta = psa.topology_assignment
            ps = w.pod_set(psa.name)
            if ta is None or ps is None or psa.count <= 0:
                return None
            per_pod = {
                r: v // psa.count for r, v in psa.resource_usage.items() if r != PODS
            }
            vec = self._usage_vector(per_pod)
            if vec is None:
                return None
            for d in ta.domains:
                leaf = tree.leaf_of(d.values)
                if leaf is None:
                    return None
                old[leaf] = old.get(leaf, 0) + vec * d.count
            need = self._need(fi, flavor, ps, psa.count, vec)
            if isinstance(need, str):
                return None
            pod_sets.append(need)
        return Held(w, old, pod_sets, w.admission.pod_set_assignments, lost)

    def _usage_vector(self, per_pod: Mapping[str, int]) -> IntArray | None:
        vec = np.zeros(len(self.tas.resources), dtype=np.int64)
        for r, v in per_pod.items():
            if v <= 0:
                continue
            i = self.tas.resource_index.get(r)
            if i is None:
                return None
            vec[i] = v
        vec[self.tas.resource_index[PODS]] += 1
        return vec

    # -- placements as plan entries --------------------------------------------------

    def topology(self, flavor: str, leaf_pods: Mapping[int, int]) -> TopologyAssignment:
        tree = self.tas.tree(flavor)
        return TopologyAssignment(
            levels=tree.assignment_levels,
            domains=tuple(
                TopologyDomain(values=tree.leaf_values(leaf), count=n)
                for leaf, n in sorted(leaf_pods.items())
                if n > 0
            ),
        )

    def admission(
        self,
        cq: ClusterQueue,
        w: Workload,
        choice: FlavorChoice,
        flavor: str,
        placed: Mapping[str, Mapping[int, int]],
    ) -> PlanAdmission:
        """The gang's admission: ``placed`` is pod set -> leaf -> pods."""
        psas = []
        for ps, count in zip(w.pod_sets, choice.counts, strict=True):
            flavors: dict[str, str] = {}
            usage: dict[str, int] = {}
            serving = self.serving(cq, w, ps)
            for r in self.needed(cq, ps):
                flavors[r] = choice.flavors[serving[r]]
                usage[r] = (1 if r == PODS else ps.requests.get(r, 0)) * count
            ta = self.topology(flavor, placed[ps.name]) if ps.name in placed else None
            psas.append(
                PodSetAssignment(
                    name=ps.name,
                    flavors=flavors,
                    resource_usage=usage,
                    count=count,
                    topology_assignment=ta,
                )
            )
        return PlanAdmission(
            workload=w.key, cluster_queue=cq.name, pod_set_assignments=tuple(psas)
        )

    def readmission(
        self, h: Held, flavor: str, placed: Mapping[str, Mapping[int, int]]
    ) -> PlanAdmission:
        """A moved workload's new admission: its old one, new leaves."""
        assert h.workload.admission is not None
        psas = tuple(
            psa.model_copy(
                update={"topology_assignment": self.topology(flavor, placed[psa.name])}
            )
            for psa in h.psas
        )
        return PlanAdmission(
            workload=h.workload.key,
            cluster_queue=h.workload.admission.cluster_queue,
            pod_set_assignments=psas,
        )
