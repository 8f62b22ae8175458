"""Brute force over plans, written apart from the optimizer, judged by the validator.

It shares nothing with ``solver/``: candidate admissions are built straight
from the snapshot's objects (every flavor of the covering resource group,
every admissible count, every per-host split of a TAS pod set), the
validator alone decides which candidate plans are feasible, and the
objective is recomputed from the plan (:func:`demand_vector`).  The search
is a depth-first walk over workloads with two sound prunings: quota and
capacity violations never disappear when more is admitted (usage only grows),
and a branch whose most optimistic demand vector cannot beat the best one
found is cut.  Victims follow formats.md: every eviction names a preemptor
that the same plan admits.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from placewise.models.cluster import HOSTNAME_LABEL, ClusterQueue
from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    PreemptionReason,
    SolverInfo,
)
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.models.workload import (
    PodSet,
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
    Workload,
)

ACCELERATORS = ("nvidia.com/gpu", "amd.com/gpu", "google.com/tpu")
DEMAND_SCALE = 1000
"""Other demand in thousandths of cluster capacity, as the policy's default."""
PODS = "pods"

Vector = tuple[int, ...]


# -- the objective, recomputed from a plan -------------------------------------


def _capacity(snap: Snapshot) -> dict[str, int]:
    """Cluster-wide capacity per resource: node allocatable, or the largest
    nominal quota of any queue when that is larger (quota-only clusters)."""
    cap: dict[str, int] = defaultdict(int)
    for node in snap.nodes.values():
        for r, q in node.allocatable.items():
            cap[r] += q
    for cq in snap.cluster_queues.values():
        for g in cq.resource_groups:
            for fq in g.flavors:
                for rq in fq.resources:
                    cap[rq.name] = max(cap[rq.name], rq.nominal)
    return cap


def _other(req: dict[str, int], cap: dict[str, int]) -> int:
    """Non-accelerator demand in millionths of capacity, at least 1 per resource."""
    return sum(
        max(1, q * DEMAND_SCALE // max(cap.get(r, 1), 1))
        for r, q in req.items()
        if r not in ACCELERATORS and r != PODS and q > 0
    )


def tiers(snap: Snapshot) -> list[int]:
    return sorted(
        {w.priority for w in snap.pending} | {w.priority for w in snap.running},
        reverse=True,
    )


def demand_vector(snap: Snapshot, plan: Plan) -> Vector:
    """Per priority tier, highest first: (accelerators, other demand) running
    after the plan — the optimizer's primary objective, compared
    lexicographically.  Running workloads count by their quota usage, new
    admissions by per-pod requests times admitted pods."""
    cap = _capacity(snap)
    acc: dict[int, int] = defaultdict(int)
    other: dict[int, int] = defaultdict(int)
    evicted = {p.workload for p in plan.preemptions}
    for w in snap.running:
        if w.key in evicted:
            continue
        usage: dict[str, int] = defaultdict(int)
        for (_f, r), q in w.usage().items():
            usage[r] += q
        acc[w.priority] += sum(q for r, q in usage.items() if r in ACCELERATORS)
        other[w.priority] += _other(dict(usage), cap)
    for adm in plan.admissions:
        w = snap.workloads[adm.workload]
        for psa in adm.pod_set_assignments:
            ps = w.pod_set(psa.name)
            assert ps is not None
            acc[w.priority] += psa.count * sum(
                q for r, q in ps.requests.items() if r in ACCELERATORS
            )
            other[w.priority] += psa.count * _other(dict(ps.requests), cap)
    out: list[int] = []
    for t in tiers(snap):
        out += [acc[t], other[t]]
    return tuple(out)


# -- candidate admissions ------------------------------------------------------


def _tas_only(snap: Snapshot, cq: ClusterQueue) -> bool:
    names = cq.flavor_names
    return bool(names) and all(
        n in snap.flavors and snap.flavors[n].is_tas for n in names
    )


def _splits(count: int, hosts: Sequence[str]) -> Iterator[tuple[TopologyDomain, ...]]:
    """Every way to put ``count`` pods on ``hosts`` (hosts with 0 omitted)."""
    for cut in itertools.combinations_with_replacement(range(len(hosts)), count):
        per = [0] * len(hosts)
        for i in cut:
            per[i] += 1
        yield tuple(
            TopologyDomain(values=(h,), count=n)
            for h, n in zip(hosts, per, strict=True)
            if n
        )


def _pod_set_options(
    snap: Snapshot, cq: ClusterQueue, ps: PodSet
) -> list[PodSetAssignment] | None:
    """Every assignment of one pod set (None: it requests an uncovered resource)."""
    covers_pods = cq.group_of(PODS) is not None
    needed = [r for r, v in sorted(ps.requests.items()) if v > 0 and r != PODS]
    if covers_pods:
        needed.append(PODS)
    groups: dict[int, list[str]] = {}
    for r in needed:
        g = cq.group_of(r)
        if g is None:
            return None
        groups.setdefault(g, []).append(r)
    low = ps.min_count if ps.min_count is not None else ps.count
    tas_wanted = ps.topology.requests_tas or _tas_only(snap, cq)
    out: list[PodSetAssignment] = []
    group_ids = sorted(groups)
    choices = [[fq.name for fq in cq.resource_groups[g].flavors] for g in group_ids]
    for count in range(low, ps.count + 1):
        usage = {r: v * count for r, v in ps.requests.items() if v > 0 and r != PODS}
        if covers_pods:
            usage[PODS] = count
        for pick in itertools.product(*choices):
            flavors = {
                r: f for g, f in zip(group_ids, pick, strict=True) for r in groups[g]
            }
            tas = sorted(
                {f for f in pick if f in snap.flavors and snap.flavors[f].is_tas}
            )
            if not tas or not tas_wanted:
                out.append(
                    PodSetAssignment(
                        name=ps.name, flavors=flavors, resource_usage=usage, count=count
                    )
                )
                continue
            flavor = snap.flavors[tas[0]]
            topo = snap.topologies.get(flavor.topology_name or "")
            if topo is None or topo.levels[-1] != HOSTNAME_LABEL:
                continue  # the generated instances use hostname leaves only
            hosts = [n.name for n in snap.flavor_nodes(flavor)]
            for domains in _splits(count, hosts):
                out.append(
                    PodSetAssignment(
                        name=ps.name,
                        flavors=flavors,
                        resource_usage=usage,
                        count=count,
                        topology_assignment=TopologyAssignment(
                            levels=(HOSTNAME_LABEL,), domains=domains
                        ),
                    )
                )
    return out


def _plan(
    admissions: Sequence[PlanAdmission],
    preemptions: Sequence[PlanPreemption],
    pending: Sequence[str],
) -> Plan:
    return Plan(
        solver=SolverInfo(name="exhaustive", status="OPTIMAL"),
        admissions=tuple(admissions),
        preemptions=tuple(preemptions),
        pending=tuple(PlanPending(workload=k, reason="not admitted") for k in pending),
    )


PER_ADMISSION = ("podsets.", "eligibility.", "topology.", "bookkeeping.")
MONOTONE = ("quota.", "capacity.")


def admission_options(snap: Snapshot, w: Workload) -> list[PlanAdmission]:
    """Every admission of ``w`` the validator accepts on its own merits
    (pod sets, flavors, topology); quota and capacity are judged later,
    together with the other admissions."""
    name = snap.cluster_queue_of(w)
    if name is None or snap.blocked_reason(w) is not None:
        return []
    cq = snap.cluster_queues[name]
    per_ps: list[list[PodSetAssignment]] = []
    for ps in w.pod_sets:
        opts = _pod_set_options(snap, cq, ps)
        if not opts:
            return []
        per_ps.append(opts)
    out: list[PlanAdmission] = []
    others = [x.key for x in snap.pending if x.key != w.key]
    for combo in itertools.product(*per_ps):
        adm = PlanAdmission(
            workload=w.key, cluster_queue=name, pod_set_assignments=tuple(combo)
        )
        bad = [
            v
            for v in validate(snap, _plan([adm], [], others))
            if v.rule.startswith(PER_ADMISSION)
        ]
        if not bad:
            out.append(adm)
    return out


def option_count(snap: Snapshot) -> int:
    """Size of the raw search space (admissions x victim sets), before any
    pruning: the tests skip instances where it is too large."""
    total = 2 ** len(snap.running)
    for w in snap.pending:
        name = snap.cluster_queue_of(w)
        if name is None or snap.blocked_reason(w) is not None:
            continue
        n = 1
        for ps in w.pod_sets:
            opts = _pod_set_options(snap, snap.cluster_queues[name], ps)
            n *= len(opts or [])
        total *= 1 + n
    return total


# -- the search ----------------------------------------------------------------


@dataclass
class Result:
    vector: Vector
    plan: Plan
    validations: int


class SearchTooLarge(Exception):
    """The search needed more validator calls than allowed."""


def _may_preempt(snap: Snapshot, victim: Workload, w: Workload) -> bool:
    """The queue policy part of preemption, a necessary condition only (the
    validator decides): used to skip victim sets no plan can justify."""
    cq_name, vcq = snap.cluster_queue_of(w), victim.admission
    if cq_name is None or vcq is None:
        return False
    cq = snap.cluster_queues[cq_name]
    pv, pw = victim.priority, w.priority
    if vcq.cluster_queue == cq_name:
        within = cq.preemption.within_cluster_queue
        newer = w.queue_order_timestamp < victim.queue_order_timestamp
        return (within == "LowerPriority" and pv < pw) or (
            within == "LowerOrNewerEqualPriority" and (pv < pw or (pv == pw and newer))
        )
    reclaim = cq.preemption.reclaim_within_cohort
    theirs = snap.cluster_queues.get(vcq.cluster_queue)
    return (
        cq.cohort is not None
        and theirs is not None
        and theirs.cohort is not None
        and snap.root_of(cq) == snap.root_of(theirs)
        and (reclaim == "Any" or (reclaim == "LowerPriority" and pv < pw))
    )


def _reasons(snap: Snapshot, victim: Workload, w: Workload) -> list[PreemptionReason]:
    assert victim.admission is not None
    if victim.admission.cluster_queue == snap.cluster_queue_of(w):
        return ["InClusterQueue"]
    return ["InCohortReclamation", "InCohortReclaimWhileBorrowing"]


Key = Callable[[Snapshot, Plan], Vector]


class Search:
    def __init__(
        self, snap: Snapshot, max_validations: int = 4000, key: Key | None = None
    ) -> None:
        """``key``: what to maximise (default: the tier vector); it must add
        up over admissions, which the pruning assumes."""
        self.snap = snap
        self.key: Key = key or demand_vector
        self.max_validations = max_validations
        self.validations = 0
        self.tiers = tiers(snap)
        self.workloads = [w for w in snap.pending if snap.blocked_reason(w) is None]
        self.options = {w.key: admission_options(snap, w) for w in self.workloads}
        self.best: Result | None = None

    def _validate(self, plan: Plan) -> list[str]:
        self.validations += 1
        if self.validations > self.max_validations:
            raise SearchTooLarge(f"more than {self.max_validations} validations")
        return [f"{v.rule}|{v.workload}" for v in validate(self.snap, plan)]

    def _max_gain(self, w: Workload) -> Vector:
        """The most a workload can add to each entry (all pods admitted)."""
        base = self.key(self.snap, _plan([], [], []))
        best = [0] * len(base)
        for adm in self.options[w.key]:
            v = self.key(self.snap, _plan([adm], [], []))
            best = [max(b, x - y) for b, x, y in zip(best, v, base, strict=True)]
        return tuple(best)

    def run(self) -> Result:
        gains = [self._max_gain(w) for w in self.workloads]
        # Suffix sums: what all workloads from index k on could still add.
        rest = [tuple([0] * len(self.key(self.snap, _plan([], [], []))))]
        for g in reversed(gains):
            rest.append(tuple(a + b for a, b in zip(rest[-1], g, strict=True)))
        rest.reverse()
        self.rest = rest
        victims_all = list(self.snap.running)
        for k in range(len(victims_all) + 1):
            for victims in itertools.combinations(victims_all, k):
                if any(
                    not any(_may_preempt(self.snap, v, w) for w in self.workloads)
                    for v in victims
                ):
                    continue
                self._victims = victims
                self._dfs(0, [])
        assert self.best is not None, "the empty plan is always feasible"
        return Result(self.best.vector, self.best.plan, self.validations)

    def _partial(self, chosen: list[PlanAdmission]) -> Plan:
        """The chosen admissions with every victim evicted by a placeholder
        preemptor: preemption rules are checked only on complete plans."""
        placeholder = self.workloads[0].key if self.workloads else ""
        pre = [
            PlanPreemption(
                workload=v.key, preemptor=placeholder, reason="InClusterQueue"
            )
            for v in self._victims
        ]
        admitted = {a.workload for a in chosen}
        pending = [w.key for w in self.snap.pending if w.key not in admitted]
        return _plan(chosen, pre, pending)

    def _dfs(self, k: int, chosen: list[PlanAdmission]) -> None:
        current = self.key(self.snap, self._partial(chosen))
        optimistic = tuple(a + b for a, b in zip(current, self.rest[k], strict=True))
        if self.best is not None and optimistic <= self.best.vector:
            return
        if k == len(self.workloads):
            self._complete(chosen, current)
            return
        w = self.workloads[k]
        for adm in self.options[w.key]:
            trial = [*chosen, adm]
            bad = [
                v
                for v in self._validate(self._partial(trial))
                if v.startswith(MONOTONE)
            ]
            if not bad:
                self._dfs(k + 1, trial)
        self._dfs(k + 1, chosen)

    def _complete(self, chosen: list[PlanAdmission], vector: Vector) -> None:
        """Find preemptors (admitted by this plan) that justify every victim."""
        admitted = [self.snap.workloads[a.workload] for a in chosen]
        choices: dict[str, list[PlanPreemption]] = {}
        for v in self._victims:
            choices[v.key] = [
                PlanPreemption(workload=v.key, preemptor=w.key, reason=reason)
                for w in admitted
                if _may_preempt(self.snap, v, w)
                for reason in _reasons(self.snap, v, w)
            ]
            if not choices[v.key]:
                return
        admitted_keys = {a.workload for a in chosen}
        pending = [w.key for w in self.snap.pending if w.key not in admitted_keys]
        # Each victim's preemption rules depend only on the admissions and the
        # victim set, not on the other victims' preemptors: advance every
        # failing victim to its next choice until all pass or one runs out.
        at = dict.fromkeys(choices, 0)
        while True:
            pre = [choices[v.key][at[v.key]] for v in self._victims]
            found = self._validate(_plan(chosen, pre, pending))
            if not found:
                plan = _plan(chosen, pre, pending)
                self.best = Result(vector, plan, self.validations)
                return
            failing = {f.split("|", 1)[1] for f in found}
            if not failing <= set(at) or any(f.startswith(MONOTONE) for f in found):
                return  # something other than a victim's preemption is wrong
            for key in failing:
                at[key] += 1
                if at[key] >= len(choices[key]):
                    return


def exhaustive_optimum(
    snap: Snapshot, max_validations: int = 4000, key: Key | None = None
) -> Result:
    """The lexicographically best ``key`` (default: the demand vector) over
    validator-accepted plans."""
    return Search(snap, max_validations, key).run()
