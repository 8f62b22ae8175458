"""What every rule family needs: the violation record and an indexed plan.

The plan is indexed once so that each rule module can look at "the
admissions that name a pending workload" or "the running workloads that stay"
without repeating the bookkeeping checks; malformed entries are reported by
:mod:`placewise.models.validate.bookkeeping` and simply left out of these views, so one
mistake is reported once, by the rule that owns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property

from placewise.models.cluster import PODS, ClusterQueue, ResourceFlavor
from placewise.models.moves import MoveRules
from placewise.models.plan import Plan, PlanAdmission, PlanMove, PlanPreemption
from placewise.models.quantity import format_units
from placewise.models.snapshot import Snapshot
from placewise.models.validate.domains import DomainIndex
from placewise.models.workload import PodSet, PodSetAssignment, Workload

FlavorResource = tuple[str, str]
"""(flavor, resource): the unit of quota accounting."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason a plan is infeasible.

    ``rule`` is a short stable id (``family.name``) that tests and scripts
    match on; ``message`` is for people and names every object involved.
    """

    rule: str
    workload: str
    message: str

    def __str__(self) -> str:
        return f"{self.rule}: {self.workload or '-'}: {self.message}"


def qty(resource: str, units: int) -> str:
    """A quantity as users wrote it (``1500m``, ``4Gi``) for messages."""
    return format_units(resource, units)


@dataclass(frozen=True, slots=True)
class Admitted:
    """A plan admission of a pending workload, joined with its spec."""

    entry: PlanAdmission
    workload: Workload
    cluster_queue: ClusterQueue | None
    """The ClusterQueue the plan names, if it exists and is active.

    An admission into a missing or inactive queue is reported once, by
    bookkeeping; the flavor, usage and quota rules then skip it rather than
    pile up consequences of that one mistake.
    """

    @property
    def key(self) -> str:
        return self.workload.key

    def group_of(self, ps: PodSet, resource: str) -> int | None:
        """The queue's resource group serving ``resource`` for ``ps``.

        Kueue assigns flavors per pod-set group (``podSetGroupName``), so
        the rule (``ClusterQueue.serving_groups``) runs over everything the
        group requests; a resource it does not request (a zero request given
        a flavor anyway) falls back to its first group."""
        cq = self.cluster_queue
        if cq is None:
            return None
        group = ps.topology.group
        mates = [
            p
            for p in self.workload.pod_sets
            if p is ps or (group and p.topology.group == group)
        ]
        wanted = {r for p in mates for r, v in p.requests.items() if v}
        if cq.group_of(PODS) is not None:
            wanted.add(PODS)
        serving = cq.serving_groups(wanted)
        return serving[resource] if resource in serving else cq.group_of(resource)

    def pairs(self) -> Iterator[tuple[PodSet, PodSetAssignment]]:
        """Pod sets with their assignment, matched by name (first match)."""
        seen: set[str] = set()
        for psa in self.entry.pod_set_assignments:
            ps = self.workload.pod_set(psa.name)
            if ps is not None and psa.name not in seen:
                seen.add(psa.name)
                yield ps, psa


@dataclass
class Context:
    """The snapshot and the plan, with the cross-references rules share."""

    snap: Snapshot
    plan: Plan
    rules: MoveRules | None = None
    """The move policy the plan was made under; None: only the opt-in label
    makes a workload movable and no budget is checked."""
    admitted: list[Admitted] = field(default_factory=list)
    """First admission of each pending workload, in plan order, then the
    new placements of moved running workloads."""
    victims: dict[str, tuple[Workload, PlanPreemption]] = field(default_factory=dict)
    """Running workloads the plan evicts (first preemption of each)."""
    replaced: dict[str, tuple[Workload, Admitted]] = field(default_factory=dict)
    """Running workload slices the plan finishes, each by the admission of
    the elastic slice that replaces it (``PlanAdmission.replaces``, where the
    link holds and the old slice is no victim): their quota and capacity
    pass to that admission, which is no preemption."""

    moved: dict[str, tuple[Workload, PlanMove]] = field(default_factory=dict)
    """Running workloads the plan moves (first move of each, where it is no
    victim and the plan admits it again): their old placement is gone and
    their admission is checked like any other."""

    def __post_init__(self) -> None:
        pending = {w.key: w for w in self.snap.pending}
        running = {w.key: w for w in self.snap.running}
        seen: set[str] = set()
        for entry in self.plan.admissions:
            w = pending.get(entry.workload)
            if w is None or entry.workload in seen:
                continue
            seen.add(entry.workload)
            self.admitted.append(self._admitted(entry, w))
        for pre in self.plan.preemptions:
            victim = running.get(pre.workload)
            if victim is not None and pre.workload not in self.victims:
                self.victims[pre.workload] = (victim, pre)
        entries = {a.workload: a for a in reversed(self.plan.admissions)}
        for move in self.plan.moves:
            w = running.get(move.workload)
            again = entries.get(move.workload)
            if (
                w is None
                or again is None
                or move.workload in self.victims
                or move.workload in self.moved
            ):
                continue  # reported by the moves rules
            self.moved[move.workload] = (w, move)
            self.admitted.append(self._admitted(again, w))
        for adm in self.admitted:
            old = self.snap.replaced_slice(adm.workload)
            if (
                old is not None
                and adm.entry.replaces == old.key
                and old.key not in self.victims
                and old.key not in self.replaced
            ):
                self.replaced[old.key] = (old, adm)

    def _admitted(self, entry: PlanAdmission, w: Workload) -> Admitted:
        cq = None
        if self.snap.is_active(entry.cluster_queue):
            cq = self.snap.cluster_queues[entry.cluster_queue]
        return Admitted(entry, w, cq)

    @cached_property
    def remaining(self) -> list[Workload]:
        """Running workloads still holding quota and capacity where they
        are after the plan (moved ones hold them at their new place)."""
        return [
            w
            for w in self.snap.running
            if w.key not in self.victims
            and w.key not in self.replaced
            and w.key not in self.moved
        ]

    @cached_property
    def domains(self) -> DomainIndex:
        return DomainIndex(self.snap)

    @cached_property
    def admitted_by_key(self) -> dict[str, Admitted]:
        return {a.key: a for a in self.admitted}

    def flavor(self, name: str) -> ResourceFlavor | None:
        return self.snap.flavors.get(name)

    def covers(self, cq: ClusterQueue, resource: str) -> bool:
        return cq.group_of(resource) is not None

    def tas_implied(self, cq: ClusterQueue) -> bool:
        """Every flavor of the queue is a TAS flavor (Kueue's ``IsTASOnly``)."""
        names = cq.flavor_names
        return bool(names) and all(
            (f := self.flavor(n)) is not None and f.is_tas for n in names
        )

    def wants_tas(self, cq: ClusterQueue, ps: PodSet) -> bool:
        """The pod set must be placed on a topology (explicitly or implied)."""
        return ps.topology.requests_tas or self.tas_implied(cq)

    def needed_resources(self, cq: ClusterQueue, ps: PodSet, count: int) -> list[str]:
        """Resources that must get a flavor: non-zero totals, plus ``pods``."""
        if count <= 0:
            return []
        out = [r for r, v in sorted(ps.requests.items()) if v > 0 and r != PODS]
        if self.covers(cq, PODS):
            out.append(PODS)
        return out

    def expected_usage(
        self, cq: ClusterQueue, ps: PodSet, count: int
    ) -> dict[str, int]:
        """Quota usage Kueue records for ``count`` pods of the pod set."""
        out = {r: v * count for r, v in ps.requests.items() if v > 0 and r != PODS}
        if self.covers(cq, PODS) and count > 0:
            out[PODS] = count
        return out

    def tas_flavor(
        self, adm: Admitted, ps: PodSet, psa: PodSetAssignment
    ) -> ResourceFlavor | None:
        """The TAS flavor a pod set was placed on.

        A pod set with no flavors (it requests nothing the queue covers)
        inherits its ``podSetGroupName`` group's TAS flavor, and in a queue
        with a single TAS flavor can only mean that one.
        """
        own = _tas_flavors(self, psa.flavors.values())
        if own or psa.flavors:
            return own[0] if own else None
        if adm.cluster_queue is None or not self.wants_tas(adm.cluster_queue, ps):
            return None
        if ps.topology.group:
            for other_ps, other in adm.pairs():
                if other_ps.topology.group == ps.topology.group and other is not psa:
                    found = _tas_flavors(self, other.flavors.values())
                    if found:
                        return found[0]
        if psa.topology_assignment is not None:
            in_cq = _tas_flavors(self, adm.cluster_queue.flavor_names)
            if len(in_cq) == 1:
                return in_cq[0]
        return None


def _tas_flavors(ctx: Context, names: Iterable[str]) -> list[ResourceFlavor]:
    out: list[ResourceFlavor] = []
    for name in sorted(set(names)):
        f = ctx.flavor(name)
        if f is not None and f.is_tas:
            out.append(f)
    return out


def running_tas_flavor(ctx: Context, psa: PodSetAssignment) -> ResourceFlavor | None:
    """TAS flavor of a running workload's pod set, from its admission."""
    found = _tas_flavors(ctx, psa.flavors.values())
    return found[0] if found else None
