"""Manager + workers -> one :class:`~placewise.models.multicluster.MultiSnapshot`.

Each worker is first resolved on its own (its warnings name it), its stale
MultiKueue copies are sorted out, and the manager's dispatchable Workloads
are added to it as pending copies queued in the worker's LocalQueue of the
same namespace/name — exactly the object MultiKueue would create there.
That per-worker snapshot is what ``validate --cluster`` checks a plan's
slice against; renamed into its cluster and merged with the others it is
the snapshot every solver works on.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.multicluster.manager import (
    ManagerFacts,
    multikueue_check,
    split,
)
from placewise.adapters.multicluster.rename import Renamer, merge
from placewise.models.errors import InstanceError, Location, Problem
from placewise.models.multicluster import (
    PREFERRED_ANNOTATION,
    Dispatch,
    Dispatching,
    MultiSnapshot,
    scoped_key,
)
from placewise.models.snapshot import Objects, Snapshot, build_snapshot
from placewise.models.workload import Workload
from placewise.solver.kueue.resources import ACCELERATORS

PREFERENCE_COST = 100
"""Default cost of admitting a workload outside its preferred clusters."""


@dataclass(frozen=True, slots=True)
class ClusterCosts:
    """The objective's cluster terms (``--policy``: ``clusterCosts``,
    ``preferenceCost``): per GPU admitted in a cluster, and per workload
    admitted outside the clusters its annotation prefers."""

    per_gpu: Mapping[str, int] = field(default_factory=dict)
    preference: int = PREFERENCE_COST


@dataclass
class Federation:
    """A manager, its workers, and the combined snapshot over them."""

    snapshot: MultiSnapshot
    manager: Snapshot
    workers: dict[str, Snapshot]
    """Each worker's own snapshot (its names) with the copies added."""
    dispatched: dict[str, Workload]
    """Dispatchable manager Workloads by key (including unplaced ones)."""
    warnings: list[Problem]


def in_cluster(problem: Problem, cluster: str) -> Problem:
    """A worker's problem, naming the worker."""
    loc = problem.location
    if loc.file:
        return Problem(
            replace(loc, file=f"cluster {cluster}: {loc.file}"), problem.message
        )
    return Problem(loc, f"cluster {cluster}: {problem.message}")


def decode_workers(
    workers: Mapping[str, Sequence[RawObject]], problems: list[Problem]
) -> tuple[dict[str, Objects], list[Problem]]:
    """Each worker's objects decoded; problems and warnings name the worker."""
    out: dict[str, Objects] = {}
    warnings: list[Problem] = []
    for name, raws in workers.items():
        own: list[Problem] = []
        objs, notes = decode_objects(list(raws), own)
        problems += [in_cluster(p, name) for p in own]
        warnings += [in_cluster(p, name) for p in notes]
        out[name] = objs
    return out, warnings


def federation_from_raws(
    manager: Sequence[RawObject],
    workers: Mapping[str, Sequence[RawObject]],
    costs: ClusterCosts | None = None,
    notes: Sequence[Problem] = (),
    allowed: Mapping[str, Collection[str]] | None = None,
) -> Federation:
    """Decode and combine; raises :class:`InstanceError` listing every problem
    of every cluster.  ``allowed``: manager key -> the only workers it may go
    to (the live dispatcher pins its own nominations and skips workers that
    did not admit in time)."""
    problems: list[Problem] = []
    rest, facts = split(list(manager), problems)
    mobjs, mnotes = decode_objects(rest, problems)
    wobjs, wnotes = decode_workers(workers, problems)
    if problems:
        raise InstanceError(problems)
    msnap = build_snapshot(mobjs, [*notes, *mnotes])
    return combine(msnap, facts, wobjs, costs or ClusterCosts(), wnotes, allowed)


class _Builder:
    def __init__(
        self, manager: Snapshot, facts: ManagerFacts, workers: dict[str, Objects]
    ) -> None:
        self.manager, self.facts, self.workers = manager, facts, workers
        self.warnings: list[Problem] = list(manager.warnings)
        self._warned: set[tuple[str, str, str, str]] = set()

    def warn(self, kind: str, name: str, message: str, namespace: str = "") -> None:
        if (kind, namespace, name, message) not in self._warned:
            self._warned.add((kind, namespace, name, message))
            loc = Location(kind=kind, namespace=namespace, name=name)
            self.warnings.append(Problem(loc, message))

    def order(self, check: str) -> tuple[str, ...]:
        """Workers a check dispatches to, in its MultiKueueConfig's order."""
        given = list(self.workers)
        config = self.facts.checks.get(check)
        if config is None or config not in self.facts.configs:
            what = "names no MultiKueueConfig"
            if config is not None:
                what = f"names MultiKueueConfig {config}, not in the manager files"
            self.warn(
                "AdmissionCheck",
                check,
                f"{what}; every worker given with --cluster is eligible, in that order",
            )
            listed = given
        else:
            listed = list(self.facts.configs[config])
            for c in listed:
                if c not in self.workers:
                    self.warn(
                        "MultiKueueConfig",
                        config,
                        f"lists cluster {c}, which was not given with --cluster: "
                        "nothing is dispatched there",
                    )
        out = []
        for c in listed:
            if c in self.workers and self.facts.active.get(c, True):
                out.append(c)
            elif c in self.workers:
                self.warn(
                    "MultiKueueCluster",
                    c,
                    "is not Active (not connected): nothing is dispatched there",
                )
        return tuple(out)

    def dispatchable(self) -> tuple[dict[str, Workload], dict[str, tuple[str, ...]]]:
        """Manager Workloads Kueue hands to a dispatcher, with their workers."""
        out: dict[str, Workload] = {}
        orders: dict[str, tuple[str, ...]] = {}
        mk_any = False
        for w in self.manager.workloads.values():
            status = self.facts.status.get(w.key)
            check = multikueue_check(self.facts, status) if status else None
            if status is None or check is None:
                continue
            mk_any = True
            if not w.is_running or check.state != "Pending" or status.cluster_name:
                continue
            out[w.key] = w
            orders[w.key] = self.order(check.name)
        if not mk_any and self.manager.workloads:
            self.warnings.append(
                Problem(
                    Location(),
                    "no manager Workload carries a MultiKueue admission check "
                    "(an AdmissionCheck with controllerName "
                    "kueue.x-k8s.io/multikueue): nothing is dispatched",
                )
            )
        return out, orders

    def multikueue_keys(self) -> set[str]:
        return {
            key
            for key, status in self.facts.status.items()
            if multikueue_check(self.facts, status) is not None
        }


def _copy(w: Workload) -> Workload:
    """What MultiKueue creates in a worker: the spec, pending, created now."""
    when = w.quota_reserved_at or w.creation_timestamp
    return w.model_copy(
        update={
            "admission": None,
            "quota_reserved": False,
            "quota_reserved_at": None,
            "evicted": False,
            "priority_set": True,
            "creation_timestamp": when,
            "queue_order_timestamp": when,
            "exclusive": w.key,
        }
    )


def _gpus(w: Workload) -> int:
    return sum(
        ps.count * ps.requests.get(r, 0) for ps in w.pod_sets for r in ACCELERATORS
    )


def combine(
    manager: Snapshot,
    facts: ManagerFacts,
    workers: dict[str, Objects],
    costs: ClusterCosts,
    notes: Sequence[Problem] = (),
    allowed: Mapping[str, Collection[str]] | None = None,
) -> Federation:
    b = _Builder(manager, facts, workers)
    b.warnings += notes
    dispatched, orders = b.dispatchable()
    for key, only in (allowed or {}).items():
        if key in orders:
            orders[key] = tuple(c for c in orders[key] if c in only)
    mk_keys = b.multikueue_keys()
    tables: dict[str, dict[str, Workload]] = {}
    for c, objs in workers.items():
        table = dict(objs.workloads)
        for key in sorted(mk_keys & set(table)):
            remote = table[key]
            if remote.is_running:
                if dispatched.pop(key, None) is not None:
                    b.warn(
                        "Workload",
                        remote.name,
                        f"already admitted by worker {c}; not dispatched again",
                        remote.namespace,
                    )
            else:
                del table[key]  # MultiKueue's stale or pending copy: ours replaces it
        tables[c] = table
    copies: dict[str, dict[str, str]] = {k: {} for k in dispatched}
    unplaced: dict[str, str] = {}
    for key, w in dispatched.items():
        for c in orders[key]:
            if f"{w.namespace}/{w.queue_name}" in workers[c].local_queues:
                tables[c][key] = _copy(w)
                copies[key][c] = scoped_key(c, key)
        if not orders[key]:
            unplaced[key] = (
                "no worker cluster is eligible (none Active, reachable and "
                "listed in its MultiKueueConfig, or each already tried)"
            )
        elif not copies[key]:
            unplaced[key] = (
                f"no worker cluster has LocalQueue {w.namespace}/{w.queue_name} "
                f"(eligible workers: {', '.join(orders[key])})"
            )
        if not copies[key]:
            b.warn("Workload", w.name, unplaced[key], w.namespace)
    own: dict[str, Snapshot] = {}
    parts = []
    for c, objs in workers.items():
        snap = build_snapshot(replace(objs, workloads=tables[c]))
        b.warnings += [in_cluster(p, c) for p in snap.warnings]
        own[c] = snap
        parts.append(Renamer(c).objects(snap.objects, snap.workloads))
    facts_out = Dispatching(
        clusters=tuple(workers),
        dispatch={
            k: Dispatch(
                workload=k,
                order=orders[k],
                copies=copies[k],
                nominated=facts.status[k].nominated,
            )
            for k in dispatched
            if k not in unplaced
        },
        unplaced=unplaced,
        costs=_costs(b, dispatched, copies, costs, tuple(workers)),
        step=facts.step,
    )
    combined = MultiSnapshot(merge(parts), facts_out)
    combined.warnings = b.warnings
    return Federation(combined, manager, own, dispatched, b.warnings)


def _costs(
    b: _Builder,
    dispatched: dict[str, Workload],
    copies: dict[str, dict[str, str]],
    costs: ClusterCosts,
    clusters: tuple[str, ...],
) -> dict[str, int]:
    out: dict[str, int] = {}
    for key, w in dispatched.items():
        raw = w.annotations.get(PREFERRED_ANNOTATION, "")
        preferred = [c.strip() for c in raw.split(",") if c.strip()]
        unknown = sorted(set(preferred) - set(clusters))
        if unknown:
            b.warn(
                "Workload",
                w.name,
                f"annotation {PREFERRED_ANNOTATION} names unknown clusters "
                f"{', '.join(unknown)}",
                w.namespace,
            )
        for c, copy_key in copies[key].items():
            cost = costs.per_gpu.get(c, 0) * _gpus(w)
            if preferred and c not in preferred:
                cost += costs.preference
            if cost:
                out[copy_key] = cost
    return out
