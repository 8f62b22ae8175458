"""Partitioned improvement search for instances too large to model whole.

Beyond ``LARGE_CELLS`` the full model neither builds nor searches within the
budget (10,000 hosts: 610,000 candidate cells).  The plan is improved instead
one part of the topology at a time, as POP partitions an allocation problem:
a round picks a few parts — domains of the shallowest topology level with
enough of them (blocks at 10,000 hosts) — and compiles a *small* problem
over the incumbent plan:

* its hosts are the parts' nodes only (a view of the snapshot), less the
  room of the incumbent's victims (their preemptors' room);
* it decides the incumbent's admissions that lie wholly on those hosts
  (never a preemptor), and every pending workload the incumbent leaves
  waiting;
* everything else is fixed: other admissions are ``decided`` (their quota
  counted, their room on the part's hosts taken), running work holds its
  room and quota and is no victim, the incumbent's victims stay evicted.

So a part's quota rows are the cluster's quota less what the rest of the
plan uses: quota stays coordinated across parts, and every plan of a part,
merged with the fixed rest, is a plan of the whole snapshot.  A plain
round repacks and admits; an *evicting* round (after plain rounds that
found nothing, :meth:`PartitionSearch.run`) also makes the running work
wholly on the part's hosts the model's victims, and its new evictions are
settled before its plan is taken.  The incumbent's own evictions stay as
they are (see :func:`_settle_part`).  Its model is searched stage by stage
(:func:`.stages.run_stages`, the rack search inside it, CP-SAT on at most
``PARTITION_WORKERS``) with the incumbent as hint, so no round ends below
it; a round whose stages end higher replaces the incumbent.
"""

from __future__ import annotations

import copy
import logging
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace

from placewise.models.cluster import HOSTNAME_LABEL
from placewise.models.plan import Plan, PlanAdmission
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSetAssignment
from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel, CpSatParams
from placewise.solver.cpsat.search.stages import run_stages
from placewise.solver.cpsat.tuning import (
    MIN_PARTS,
    MIN_ROUND_SECONDS,
    PARTITION_ROUND_SECONDS,
    PARTITION_WORKERS,
    ROUND_HOSTS,
)
from placewise.solver.kueue.workload import WlInfo, running_info
from placewise.solver.policy import Policy, accelerators, primary_vector
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import admitted_info, compile_data
from placewise.solver.problem.layout import build_layout
from placewise.solver.problem.pairs import add_pairs
from placewise.solver.settle import settle_preemptions

log = logging.getLogger("placewise.cpsat")

EVICTING_BUILD = 4.0
"""An evicting round's compile and build against a plain round's, until
one has run: its model holds the part's running work as victims (at 10,000
hosts 12,651-18,108 variables against 2,063-3,853, 4-7 s loaded)."""

Block = tuple[str, ...]
"""A part: a domain's path from the top level down (a block at 10,000
hosts, a (block, rack) pair on a one-block cluster)."""


@dataclass(slots=True)
class Partition:
    """The snapshot's TAS nodes grouped into parts."""

    blocks: list[Block]
    """The parts, sorted, so that a seed picks the same ones."""
    nodes: dict[Block, frozenset[str]]
    """Part -> its node names."""
    where: dict[tuple[str, tuple[str, ...]], frozenset[str]]
    """(flavor, topologyAssignment values) -> the nodes that domain names."""
    gpus: dict[Block, int]
    """Part -> its allocatable accelerators (to weight the picks)."""
    block_of: dict[str, Block]
    """Node name -> its part."""


def partition(snapshot: Snapshot, pol: Policy) -> Partition | None:
    """Each TAS flavor's nodes grouped by their domain at the shallowest
    level with at least MIN_PARTS domains (blocks at 10,000 hosts, racks on
    a one-block cluster); None without TAS or without enough parts."""
    nodes: dict[Block, set[str]] = defaultdict(set)
    where: dict[tuple[str, tuple[str, ...]], set[str]] = defaultdict(set)
    for name, flavor in sorted(snapshot.flavors.items()):
        topo = snapshot.topologies.get(flavor.topology_name or "")
        if topo is None:
            continue
        hostname = topo.levels[-1] == HOSTNAME_LABEL
        members = snapshot.flavor_nodes(flavor)
        paths = [tuple(n.labels[level] for level in topo.levels) for n in members]
        depth = next(
            (
                d
                for d in range(1, len(topo.levels) + 1)
                if len({p[:d] for p in paths}) >= MIN_PARTS
            ),
            len(topo.levels),
        )
        for node, path in zip(members, paths, strict=True):
            nodes[path[:depth]].add(node.name)
            where[(name, path[-1:] if hostname else path)].add(node.name)
    if len(nodes) < MIN_PARTS:
        return None
    gpus = {
        b: sum(accelerators(snapshot.nodes[n].allocatable, pol) for n in ns)
        for b, ns in nodes.items()
    }
    return Partition(
        sorted(nodes),
        {b: frozenset(ns) for b, ns in nodes.items()},
        {k: frozenset(v) for k, v in where.items()},
        gpus,
        {n: b for b, ns in nodes.items() for n in ns},
    )


def _hosts(part: Partition, adm: PlanAdmission) -> set[str]:
    """The nodes an admission's (or a running workload's) TAS pods hold."""
    out: set[str] = set()
    for psa in adm.pod_set_assignments:
        ta = psa.topology_assignment
        if ta is None:
            continue
        for d in ta.domains:
            for flavor in psa.flavors.values():
                out |= part.where.get((flavor, tuple(d.values)), frozenset())
    return out


def _view(snapshot: Snapshot, hosts: frozenset[str]) -> Snapshot:
    """The snapshot with only ``hosts`` as nodes: what a sub-problem places
    on.  A shallow copy: workloads, queues and the resolved references (its
    cached properties, computed once on the whole snapshot) are shared."""
    view = copy.copy(snapshot)
    view.nodes = {n: snapshot.nodes[n] for n in sorted(hosts)}
    return view


@dataclass(slots=True)
class SubProblem:
    """One round's problem and the hosts it places on."""

    problem: Problem
    hosts: frozenset[str]
    """The part's hosts (the victims' room it must not decide left out)."""


class Infos:
    """Quota holders as the tables count them, kept from round to round:
    the fixed part of a sub-problem is most of the plan (at 10,000 hosts,
    building them afresh took 0.6 s a round)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.running: dict[str, WlInfo] = {}
        self.admitted: dict[str, tuple[PlanAdmission, WlInfo]] = {}

    def of_running(self, key: str) -> WlInfo:
        info = self.running.get(key)
        if info is None:
            info = self.running[key] = running_info(
                self.snapshot, self.snapshot.workloads[key]
            )
        return info

    def of_admission(self, adm: PlanAdmission) -> WlInfo:
        got = self.admitted.get(adm.workload)
        if got is None or got[0] is not adm:
            got = self.admitted[adm.workload] = (
                adm,
                admitted_info(self.snapshot, adm),
            )
        return got[1]


def sub_problem(
    infos: Infos,
    part: Partition,
    hosts: frozenset[str],
    plan: Plan,
    running_hosts: dict[str, set[str]],
    whole: Problem,
    evict: bool = False,
) -> SubProblem:
    """The problem of ``hosts`` around ``plan`` (see the module docstring);
    with ``evict``, the running work wholly on the part's hosts is the
    model's to evict (its victims, where preemptible)."""
    snapshot = infos.snapshot
    unsupported = whole.data.unsupported
    spots = {a.workload: _hosts(part, a) for a in plan.admissions}
    evicted = {p.workload for p in plan.preemptions}
    hosts, movable = _settle_part(plan, spots, hosts, unsupported, running_hosts)
    inside = [a for a in plan.admissions if a.workload in movable]
    outside = [a for a in plan.admissions if a.workload not in movable]
    ours = (
        {k for k, held in running_hosts.items() if held and held <= hosts} - evicted
        if evict
        else set()
    )
    elsewhere = [
        w.key for w in snapshot.running if w.key not in evicted and w.key not in ours
    ]
    fixed = {a.workload: infos.of_admission(a) for a in outside}
    fixed.update({k: infos.of_running(k) for k in elsewhere})
    removed = frozenset(elsewhere) | frozenset(evicted)
    decided = {a.workload for a in inside}
    admitted = {a.workload for a in plan.admissions}
    free = [
        w for w in snapshot.admissible() if w.key in decided or w.key not in admitted
    ]
    view = _view(snapshot, hosts)
    data = compile_data(view, free, fixed, removed, dict(unsupported), outside)
    data.reservation = whole.data.reservation
    add_pairs(data)
    layout = build_layout(data)
    return SubProblem(Problem(data, layout), hosts)


def _settle_part(
    plan: Plan,
    spots: dict[str, set[str]],
    hosts: frozenset[str],
    unsupported: dict[str, str],
    running_hosts: dict[str, set[str]],
) -> tuple[frozenset[str], set[str]]:
    """(the part's hosts, the admissions it decides again).

    The part keeps the incumbent's preemptions as they are: their
    preemptors stay fixed and the victims' room leaves the part (it is its
    preemptor's), so a round never re-decides an eviction another round
    settled; only an evicting round's own victims are new."""
    preemptors = {p.preemptor for p in plan.preemptions}
    drop = {n for p in plan.preemptions for n in running_hosts.get(p.workload, ())}
    hosts = hosts - drop
    movable = (
        {k for k, held in spots.items() if held and held <= hosts}
        - unsupported.keys()
        - preemptors
    )
    return hosts, movable


def running_hosts(snapshot: Snapshot, part: Partition) -> dict[str, set[str]]:
    """Running workload key -> the nodes its TAS pods hold."""
    out: dict[str, set[str]] = {}
    for w in snapshot.running:
        assert w.admission is not None
        adm = PlanAdmission(
            workload=w.key,
            cluster_queue=w.admission.cluster_queue,
            pod_set_assignments=w.admission.pod_set_assignments,
        )
        out[w.key] = _hosts(part, adm)
    return out


class PartitionSearch:
    """Rounds of sub-problem solves over the incumbent until the budget ends."""

    def __init__(
        self,
        snapshot: Snapshot,
        whole: Problem,
        params: CpSatParams,
        part: Partition,
        reasons: dict[str, str],
    ) -> None:
        self.snapshot = snapshot
        self.whole = whole
        workers = min(params.workers or PARTITION_WORKERS, PARTITION_WORKERS)
        self.params = replace(params, deterministic_time=None, workers=workers)
        self.part = part
        self.reasons = reasons
        self.rng = random.Random(params.seed)
        self.running = running_hosts(snapshot, part)
        self.infos = Infos(snapshot)
        self.rounds = 0
        self.improved = 0
        self.evicting = 0
        """Improving rounds that evicted running work of their part."""
        self._held = self._running_gpus()
        self._weights: tuple[Plan, list[int]] | None = None

    def _running_gpus(self) -> dict[str, dict[Block, int]]:
        """Running workload -> accelerators it holds per part."""
        out: dict[str, dict[Block, int]] = {}
        for w in self.snapshot.running:
            assert w.admission is not None
            out[w.key] = self._gpus(w.admission.pod_set_assignments)
        return out

    def _gpus(self, psas: Iterable[PodSetAssignment]) -> dict[Block, int]:
        """Accelerators per part that pod set assignments hold on TAS hosts."""
        busy: dict[Block, int] = defaultdict(int)
        pol = self.params.policy
        for psa in psas:
            ta = psa.topology_assignment
            if ta is None or psa.count <= 0:
                continue
            per_pod = accelerators(psa.resource_usage, pol) // psa.count
            for d in ta.domains:
                for flavor in psa.flavors.values():
                    nodes = self.part.where.get((flavor, tuple(d.values)))
                    if nodes:
                        busy[self.part.block_of[min(nodes)]] += per_pod * d.count
                        break
        return busy

    def _idle(self, plan: Plan) -> list[int]:
        """Per part, the accelerators that neither the running work the plan
        keeps nor its admissions hold (computed once per incumbent)."""
        if self._weights is not None and self._weights[0] is plan:
            return self._weights[1]
        busy: dict[Block, int] = defaultdict(int)
        evicted = {p.workload for p in plan.preemptions}
        for key, held in self._held.items():
            if key not in evicted:
                for b, g in held.items():
                    busy[b] += g
        for adm in plan.admissions:
            for b, g in self._gpus(adm.pod_set_assignments).items():
                busy[b] += g
        idle = [max(0, self.part.gpus[b] - busy[b]) for b in self.part.blocks]
        self._weights = (plan, idle)
        return idle

    def _pick(self, plan: Plan) -> frozenset[str]:
        """Parts at random until ROUND_HOSTS hosts (at most half the parts),
        weighted by the accelerators the plan leaves idle there (plus one,
        so a full part may still be repacked)."""
        weights = [1 + idle for idle in self._idle(plan)]
        pool = list(range(len(self.part.blocks)))
        hosts: set[str] = set()
        most = max(1, len(pool) // 2)  # a round never spans most of the cluster
        while pool and len(pool) > len(self.part.blocks) - most:
            k = self.rng.choices(range(len(pool)), [weights[j] for j in pool])[0]
            hosts |= self.part.nodes[self.part.blocks[pool.pop(k)]]
            if len(hosts) >= ROUND_HOSTS:
                break
        return frozenset(hosts)

    def run(self, plan: Plan, budget: Budget) -> Plan:
        """The best plan the rounds reach from ``plan`` (``plan`` itself when
        no round improves it).  A round starts only while the time left
        covers the last round's compile and build plus a search."""
        build = {False: 0.0, True: 0.0}
        """Seconds the last round of each kind spent outside its search."""
        evict = False
        gap = 1
        """Plain rounds that must find nothing before an evicting one."""
        failed = 0
        """Plain rounds in a row that found nothing."""
        while budget.remaining() > build[False] + MIN_ROUND_SECONDS:
            # Until one has run, an evicting round's build is taken as
            # EVICTING_BUILD plain ones'; one that would not fit is plain.
            need = build[True] or EVICTING_BUILD * build[False]
            evict = evict and budget.remaining() > need + MIN_ROUND_SECONDS
            began = budget.spent()
            got = self.round(plan, self._pick(plan), budget, evict)
            build[evict] = budget.spent() - began - (got[1] if got else 0.0)
            self.rounds += 1
            new = got[0] if got is not None else None
            if new is not None:
                plan = new
                self.improved += 1
                self.evicting += evict
            # Evicting rounds come between plain rounds that find nothing,
            # ever more rarely while they find nothing either: their model
            # is several times larger, and where evictions do not pay
            # (256 hosts, 10,000) they cost the plain rounds' time.
            if evict:
                gap = 1 if new is not None else 2 * gap
                failed = 0
            else:
                failed = 0 if new is not None else failed + 1
            evict = failed >= gap
        log.info(
            "cpsat: partition search: %d rounds, %d improved (%d evicting)",
            self.rounds,
            self.improved,
            self.evicting,
        )
        return plan

    def round(
        self, plan: Plan, hosts: frozenset[str], budget: Budget, evict: bool = False
    ) -> tuple[Plan | None, float] | None:
        """One round on ``hosts``: (the better plan or None, seconds
        searched); None when the incumbent is not a plan of the part's model
        (nothing searched).  With ``evict`` the part's running work may be
        evicted (:func:`sub_problem`); the plan keeps the incumbent's
        evictions and adds the round's."""
        sub = sub_problem(
            self.infos, self.part, hosts, plan, self.running, self.whole, evict
        )
        model = CPModel(sub.problem, self.params)
        hint = model.hint(plan)
        if hint is None:
            log.debug("partition round: the incumbent is not a plan of the part")
            return None
        left = budget.remaining()
        span = budget.share(min(1.0, PARTITION_ROUND_SECONDS / max(left, 1e-9)))
        # The rack search inside the part: CP-SAT alone rarely leaves the
        # hint within a round's half second, even on 3,000 variables.
        searched = budget.spent()
        values, _ = run_stages(model, hint, span, lns=True)
        searched = budget.spent() - searched
        before = [st.value(hint) for st in model.stages]
        after = None if values is None else [st.value(values) for st in model.stages]
        log.debug(
            "partition round %d: %d hosts, %d variables, stages %s -> %s",
            self.rounds + 1,
            len(sub.hosts),
            model.size,
            before,
            after,
        )
        if values is None or after is None or after <= before:
            return None, searched
        found = model.plan(values, self.reasons)
        if not found.preemptions:
            return found.model_copy(update={"preemptions": plan.preemptions}), searched
        preemptions = tuple(
            sorted((*plan.preemptions, *found.preemptions), key=lambda p: p.workload)
        )
        merged = found.model_copy(update={"preemptions": preemptions})
        # The model may evict a victim its preemptor does not need (on the
        # 96-host instance one round in six did): settled here, once per
        # evicting round that gains, so later rounds build on a valid plan.
        settled = settle_preemptions(self.snapshot, merged)
        pol = self.params.policy
        if primary_vector(self.snapshot, settled, pol) < primary_vector(
            self.snapshot, plan, pol
        ):
            return None, searched
        return settled, searched
