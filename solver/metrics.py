"""Plan quality measured from the Plan and the Snapshot alone.

Every solver is scored by the same code reading only what the plan says
(admissions, their topology assignments, preemptions) against the instance,
never a solver's own bookkeeping, so a solver cannot report itself better
than its plan is.  The one exception is what a plan cannot express: pods a
non-gang baseline bound without admitting their workload
(:class:`placewise.solver.baselines.PartialGang`), passed in as ``held``.

Definitions (accelerators are ``nvidia.com/gpu``, ``amd.com/gpu``,
``google.com/tpu``; "GPUs" below):

* **admitted GPUs** — GPUs in the ``resourceUsage`` of the plan's admissions;
  **net GPUs** subtracts the GPUs of the running workloads it preempts;
* **GPUs after** — GPUs held by running workloads that stay plus admitted
  ones: the quantity :func:`placewise.solver.bound.lp_bound` bounds;
* **tier demand** — per priority value present in the instance, highest
  first, admitted minus preempted GPUs of that priority; plans are ranked by
  comparing these vectors lexicographically (the optimizer's first goal);
* **GPUs busy** — GPUs after plus the GPUs of bound pods outside any
  Workload (plain pods: no plan moves them, but they hold GPUs) and of
  ``held`` pods, on usable nodes, out of the **GPU capacity** (allocatable
  GPUs of Ready, schedulable nodes): the one total ``solve``'s table,
  ``--compare`` and ``bound`` print (:func:`busy_gpus`, :func:`capacity_gpus`);
* **GPU allocation %** — GPUs in use after the plan (bound non-workload pods,
  running workloads that stay, admissions, and ``held`` pods) over the
  allocatable GPUs of Ready, schedulable nodes;
* **stranded GPUs** — free GPUs on usable nodes where no pod shape of the
  instance's pending GPU workloads fits (all resources and ``pods`` counted,
  node selector, affinity and taints checked); the shapes are those of the
  *input*, so every solver is judged against the same demand;
* **gangs in domain** — admitted multi-pod pod sets with a required or
  preferred topology level whose pods all sit in one domain of that level,
  out of all such pod sets;
* **domains per gang** — mean number of distinct domains an admitted
  multi-pod TAS pod set spans, at its required/preferred level, or at the
  level just above the hosts when it has none;
* **fair shares** (instances with Kueue's fair sharing on) — each competing
  ClusterQueue's weighted dominant resource share after the plan (Kueue's
  DRS: per-mille of what its parent could lend it, over its weight; a queue
  competes when it is in a cohort and has pending work in the input), their
  **max/min ratio** (inf when one queue ends with nothing borrowed while
  another borrows) and **Jain's index** ``(sum x)^2 / (n sum x^2)``, 1 when
  all weighted shares are equal: the fairness measure plans are compared by.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from placewise.models.cluster import HOSTNAME_LABEL, PODS, Node
from placewise.models.plan import Plan
from placewise.models.scheduling import PodPlacement, Toleration, untolerated
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSet, PodSetAssignment, TopologyDomain, Workload
from placewise.solver.kueue.fairsharing import shares_after
from placewise.solver.kueue.resources import ACCELERATORS

NodeUsage = dict[str, dict[str, int]]
"""node name -> resource -> amount."""


@dataclass(frozen=True, slots=True)
class Held:
    """Pods bound outside any admission (a partial gang), per node."""

    workload: str
    pods_placed: int
    pods_total: int
    gpus: int
    nodes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fairness:
    """Weighted dominant resource shares after a plan (see the definitions)."""

    shares: tuple[tuple[str, float], ...]
    """(ClusterQueue, weighted share in per-mille), queues by name; a
    zero-weight queue that borrows has an infinite share."""
    max_min: float
    jain: float


@dataclass(frozen=True, slots=True)
class Metrics:
    admitted_workloads: int
    admitted_gpus: int
    preemptions: int
    preempted_gpus: int
    gpus_running_before: int
    gpus_after: int
    tier_demand: tuple[tuple[int, int], ...]
    gpu_capacity: int
    gpu_in_use: int
    stranded_gpus: int
    gpus_busy: int
    topology_gangs: int
    gangs_in_domain: int
    domains_per_gang: float | None
    partial_gangs: int = 0
    partial_gpus: int = 0
    fairness: Fairness | None = None

    @property
    def net_gpus(self) -> int:
        return self.admitted_gpus - self.preempted_gpus

    @property
    def gpu_alloc_pct(self) -> float:
        if self.gpu_capacity <= 0:
            return 0.0
        return 100.0 * self.gpu_in_use / self.gpu_capacity


def gpus_of(
    amounts: Mapping[str, int], accelerators: Sequence[str] = ACCELERATORS
) -> int:
    return sum(v for r, v in amounts.items() if r in accelerators)


def capacity_gpus(
    snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS
) -> int:
    """Allocatable GPUs of Ready, schedulable nodes."""
    return sum(
        gpus_of(n.allocatable, accelerators)
        for n in snapshot.nodes.values()
        if usable(n)
    )


def plain_gpus(snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS) -> int:
    """GPUs of bound pods outside any Workload on usable nodes: the same in
    every plan, so bounds and objectives leave them out, but they are busy."""
    return sum(
        gpus_of(snapshot.pod_usage_by_node.get(name, {}), accelerators)
        for name, n in snapshot.nodes.items()
        if usable(n)
    )


def busy_gpus(
    snapshot: Snapshot,
    workload_gpus: float,
    accelerators: Sequence[str] = ACCELERATORS,
) -> int:
    """GPUs busy when Workloads hold ``workload_gpus`` (a plan's GPUs after,
    or a bound on them): those plus :func:`plain_gpus`."""
    return int(workload_gpus) + plain_gpus(snapshot, accelerators)


def pod_set_gpus(psa: PodSetAssignment) -> int:
    """Accelerators that hold quota (a resource without a flavor holds none)."""
    usage = psa.resource_usage
    return sum(v for r, v in usage.items() if r in ACCELERATORS and r in psa.flavors)


def workload_gpus(w: Workload) -> int:
    if w.admission is None:
        return 0
    return sum(pod_set_gpus(p) for p in w.admission.pod_set_assignments)


def requested_gpus(w: Workload) -> int:
    """Accelerators its pod sets ask for, whole (admitted or not: what a
    queued workload waits for, unlike :func:`workload_gpus`)."""
    return sum(gpus_of(ps.requests) * ps.count for ps in w.pod_sets)


def admitted_pod_sets(
    snapshot: Snapshot, plan: Plan
) -> Iterator[tuple[Workload, PodSet, PodSetAssignment]]:
    """Each admitted pod set with its spec (entries naming nothing are skipped:
    the validator reports those)."""
    pending = {w.key: w for w in snapshot.pending}
    for a in plan.admissions:
        w = pending.get(a.workload)
        if w is None:
            continue
        for psa in a.pod_set_assignments:
            ps = w.pod_set(psa.name)
            if ps is not None:
                yield w, ps, psa


def usable(node: Node) -> bool:
    return node.ready and not node.unschedulable


def compute(snapshot: Snapshot, plan: Plan, held: Sequence[Held] = ()) -> Metrics:
    """All metrics of one plan (see the module docstring for definitions)."""
    pending = {w.key: w for w in snapshot.pending}
    running = {w.key: w for w in snapshot.running}
    evicted = {p.workload for p in plan.preemptions if p.workload in running}
    # An elastic slice's admission finishes the running slice it replaces:
    # only its growth is new (the old pods keep running within it).
    replaced = {a.replaces for a in plan.admissions if a.replaces in running}
    moved = {m.workload for m in plan.moves}  # still running: not admitted
    admitted_gpus = sum(
        pod_set_gpus(p)
        for a in plan.admissions
        if a.workload not in moved
        for p in a.pod_set_assignments
    ) - sum(workload_gpus(running[k]) for k in replaced if k is not None)
    preempted_gpus = sum(workload_gpus(running[k]) for k in evicted)
    before = sum(workload_gpus(w) for w in running.values())

    tiers: dict[int, int] = {
        w.priority: 0 for w in (*snapshot.pending, *snapshot.running)
    }
    for a in plan.admissions:
        w = pending.get(a.workload)
        if w is not None:
            tiers[w.priority] += sum(pod_set_gpus(p) for p in a.pod_set_assignments)
    for k in evicted | replaced:
        if k is not None:
            tiers[running[k].priority] -= workload_gpus(running[k])

    used, unplaced = node_usage(snapshot, plan, held)
    capacity = capacity_gpus(snapshot)
    in_use = unplaced
    for node in snapshot.nodes.values():
        if usable(node):
            in_use += gpus_of(used.get(node.name, {}))
    in_use += sum(h.gpus for h in held if not h.nodes)
    after = before - preempted_gpus + admitted_gpus

    gangs, in_domain, spans = topology_quality(snapshot, plan)
    partial = [h for h in held if 0 < h.pods_placed < h.pods_total]
    return Metrics(
        admitted_workloads=len(plan.admissions) - len(moved),
        admitted_gpus=admitted_gpus,
        preemptions=len(evicted),
        preempted_gpus=preempted_gpus,
        gpus_running_before=before,
        gpus_after=after,
        tier_demand=tuple(sorted(tiers.items(), reverse=True)),
        gpu_capacity=capacity,
        gpu_in_use=min(in_use, capacity) if capacity else in_use,
        stranded_gpus=stranded_gpus(snapshot, used),
        gpus_busy=busy_gpus(snapshot, after) + sum(h.gpus for h in held),
        topology_gangs=gangs,
        gangs_in_domain=in_domain,
        domains_per_gang=(sum(spans) / len(spans)) if spans else None,
        partial_gangs=len(partial),
        partial_gpus=sum(h.gpus for h in partial),
        fairness=fairness(snapshot, plan) if snapshot.fair_sharing.enable else None,
    )


# -- fair sharing --------------------------------------------------------------------


def fairness(snapshot: Snapshot, plan: Plan) -> Fairness | None:
    """Shares of the competing queues once the plan is carried out."""
    after = shares_after(snapshot, plan)
    if not after:
        return None
    competing = sorted(after)
    got = [after[cq] for cq in competing]
    values = [math.inf if s.infinite else float(s.weighted) for s in got]
    finite = [v for v in values if v != math.inf]
    top, low = max(values), min(values)
    max_min = 1.0 if top == low else (math.inf if low == 0 else top / low)
    squares = sum(v * v for v in finite)
    jain = (sum(finite) ** 2) / (len(finite) * squares) if squares else 1.0
    return Fairness(tuple(zip(competing, values, strict=True)), max_min, jain)


# -- node usage after the plan ---------------------------------------------------


def _hostname_leaves(snapshot: Snapshot, psa: PodSetAssignment) -> bool:
    ta = psa.topology_assignment
    return ta is not None and ta.levels[-1:] == (HOSTNAME_LABEL,)


def _add(acc: NodeUsage, node: str, per_pod: Mapping[str, int], pods: int) -> None:
    slot = acc.setdefault(node, {})
    for r, v in per_pod.items():
        slot[r] = slot.get(r, 0) + v * pods
    slot[PODS] = slot.get(PODS, 0) + pods


def node_usage(
    snapshot: Snapshot, plan: Plan, held: Sequence[Held] = ()
) -> tuple[NodeUsage, int]:
    """Per node, what is bound there after the plan; plus GPUs in use that no
    node can be named for (admissions without a hostname assignment)."""
    used: NodeUsage = {n: dict(u) for n, u in snapshot.pod_usage_by_node.items()}
    unplaced = 0
    evicted = {p.workload for p in plan.preemptions}
    evicted |= {a.replaces for a in plan.admissions if a.replaces}
    moved = {m.workload for m in plan.moves}
    placed = [
        w.admission.pod_set_assignments
        for w in snapshot.running
        if w.key not in evicted | moved and w.admission is not None
    ]
    # A moved workload runs on where the plan admits it again.
    placed += [a.pod_set_assignments for a in plan.admissions if a.workload in moved]
    for psas in placed:
        for psa in psas:
            if not _hostname_leaves(snapshot, psa) or psa.count <= 0:
                unplaced += pod_set_gpus(psa)
                continue
            per_pod = {
                r: v // psa.count for r, v in psa.resource_usage.items() if r != PODS
            }
            assert psa.topology_assignment is not None
            for d in psa.topology_assignment.domains:
                _add(used, d.values[-1], per_pod, d.count)
    for _, ps, psa in admitted_pod_sets(snapshot, plan):
        if not _hostname_leaves(snapshot, psa):
            unplaced += pod_set_gpus(psa)
            continue
        per_pod = {r: v for r, v in ps.requests.items() if r != PODS and v > 0}
        assert psa.topology_assignment is not None
        for d in psa.topology_assignment.domains:
            _add(used, d.values[-1], per_pod, d.count)
    for h in held:
        for node, amounts in h.nodes.items():
            slot = used.setdefault(node, {})
            for r, v in amounts.items():
                slot[r] = slot.get(r, 0) + v
    return used, unplaced


# -- stranding --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Shape:
    requests: tuple[tuple[str, int], ...]
    placement: PodPlacement


def pending_shapes(snapshot: Snapshot) -> list[_Shape]:
    """Distinct per-pod shapes of the input's pending pods that need GPUs."""
    seen: dict[_Shape, None] = {}
    for w in snapshot.pending:
        for ps in w.pod_sets:
            if gpus_of(ps.requests) > 0:
                reqs = tuple(sorted((r, v) for r, v in ps.requests.items() if v > 0))
                seen[_Shape(reqs, ps.placement)] = None
    return list(seen)


def _node_tolerations(snapshot: Snapshot, node: Node) -> tuple[Toleration, ...]:
    """Tolerations Kueue adds through any flavor whose labels select the node."""
    out: list[Toleration] = []
    for f in snapshot.flavors.values():
        labels = f.node_labels
        if labels and all(node.labels.get(k) == v for k, v in labels.items()):
            out.extend(f.tolerations)
    return tuple(out)


def stranded_gpus(snapshot: Snapshot, used: NodeUsage) -> int:
    """Free GPUs on usable nodes that fit no pending GPU pod shape."""
    shapes = pending_shapes(snapshot)
    total = 0
    for node in snapshot.nodes.values():
        if not usable(node):
            continue
        taken = used.get(node.name, {})
        free = {r: v - taken.get(r, 0) for r, v in node.allocatable.items()}
        idle = gpus_of({r: max(0, v) for r, v in free.items()})
        if idle <= 0:
            continue
        extra = _node_tolerations(snapshot, node)
        if not any(_fits(node, free, s, extra) for s in shapes):
            total += idle
    return total


def _fits(
    node: Node, free: Mapping[str, int], shape: _Shape, extra: tuple[Toleration, ...]
) -> bool:
    if free.get(PODS, 1) < 1:
        return False
    if any(free.get(r, 0) < v for r, v in shape.requests if r != PODS):
        return False
    if not shape.placement.matches_node(node.labels, node.name):
        return False
    return not untolerated(node.taints, shape.placement.tolerations + extra)


# -- topology quality ---------------------------------------------------------------


def _span_level(ps: PodSet, levels: tuple[str, ...]) -> str | None:
    wanted = ps.topology.required or ps.topology.preferred
    if wanted in levels:
        return wanted
    if len(levels) >= 2:
        return levels[-2]
    return levels[-1] if levels else None


def pod_set_span(
    snapshot: Snapshot, ps: PodSet, psa: PodSetAssignment
) -> tuple[str, list[str]] | None:
    """The level an admitted pod set is judged at (its required/preferred
    level, else the one above the hosts) and the domains of that level its
    pods occupy, sorted; None without a topology assignment."""
    ta = psa.topology_assignment
    if ta is None:
        return None
    level = _span_level(ps, _topology_levels(snapshot, psa))
    if level is None:
        return None
    return level, sorted(set(_domains(snapshot, ta.levels, ta.domains, level)))


def topology_quality(snapshot: Snapshot, plan: Plan) -> tuple[int, int, list[int]]:
    """(gangs with a level, of which within one domain, domains spanned each)."""
    gangs = in_domain = 0
    spans: list[int] = []
    for _, ps, psa in admitted_pod_sets(snapshot, plan):
        span = pod_set_span(snapshot, ps, psa) if psa.count > 1 else None
        if span is None:
            continue
        domains = span[1]
        spans.append(len(domains))
        if ps.topology.required or ps.topology.preferred:
            gangs += 1
            in_domain += len(domains) == 1
    return gangs, in_domain, spans


def _topology_levels(snapshot: Snapshot, psa: PodSetAssignment) -> tuple[str, ...]:
    for name in psa.flavors.values():
        f = snapshot.flavors.get(name)
        topo = snapshot.topologies.get(f.topology_name or "") if f else None
        if topo is not None:
            return topo.levels
    ta = psa.topology_assignment
    return ta.levels if ta is not None else ()


def _domains(
    snapshot: Snapshot,
    levels: tuple[str, ...],
    domains: Iterable[TopologyDomain],
    level: str,
) -> Iterable[str]:
    """The ``level`` value of every domain of an assignment."""
    for d in domains:
        values = d.values
        if level in levels:
            yield values[levels.index(level)]
        elif levels[-1:] == (HOSTNAME_LABEL,):
            node = snapshot.nodes.get(values[-1])
            yield node.labels.get(level, "") if node is not None else ""
        else:
            yield ",".join(values)


def compare_tiers(a: Sequence[tuple[int, int]], b: Sequence[tuple[int, int]]) -> int:
    """-1, 0 or 1 as tier vector ``a`` is lexicographically below, equal to or
    above ``b`` (the vectors must list the same tiers)."""
    va, vb = [v for _, v in a], [v for _, v in b]
    return (va > vb) - (va < vb)
