"""After the search: fill what still fits, and say why the rest is pending.

The quota tree and the leaves' free capacity are replayed with the plan's
admissions and evictions.  A pending workload that fits that final state as
it is (no eviction) only adds GPUs, so the search ran out of time before
it: it is admitted best-fit, highest priority first (never in a StrictFIFO
queue, whose order the search alone keeps).  Every other pending workload
gets the reason the final state gives — quota first, as Kueue reports it,
then room for its pods at its required level — describing the plan the user
reads, not the warm start it came from.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np

from placewise.models.plan import Plan, PlanAdmission
from placewise.models.quantity import format_units
from placewise.solver.cpsat.search.packing import (
    Leaves,
    admit,
    choose,
    group_usage,
)
from placewise.solver.cpsat.tuning import MAX_COMBINATIONS
from placewise.solver.kueue.order import queue_order
from placewise.solver.kueue.quota import FR, QuotaTree
from placewise.solver.problem.compile import Problem
from placewise.solver.problem.data import PodSetData, WorkloadData


def _final_state(problem: Problem, plan: Plan) -> tuple[QuotaTree, Leaves]:
    data = problem.data
    quota = QuotaTree(data.snapshot)
    lv = Leaves(data, problem.layout)
    evicted = {p.workload for p in plan.preemptions}
    for vd in data.victims:
        if vd.info.key not in evicted:
            continue
        quota.remove_usage(vd.info.cq, vd.info.usage)
        for spot, held in vd.leaf_usage.items():
            for r, q in held.items():
                if r in lv.col:
                    lv.free[spot, lv.col[r]] += q
    by_value = {f: t.by_value for f, t in data.topos.items()}
    for adm in plan.admissions:
        usage: dict[FR, int] = defaultdict(int)
        for psa in adm.pod_set_assignments:
            for r, q in psa.resource_usage.items():
                if r in psa.flavors:
                    usage[(psa.flavors[r], r)] += q
            ta = psa.topology_assignment
            f = next((fl for fl in psa.flavors.values() if fl in by_value), None)
            if ta is None or f is None or psa.count <= 0:
                continue
            for d in ta.domains:
                leaf = by_value[f].get(tuple(d.values))
                if leaf is None:
                    continue
                for r, q in psa.resource_usage.items():
                    if r in lv.col:
                        lv.free[leaf, lv.col[r]] -= q // psa.count * d.count
        if adm.cluster_queue in data.snapshot.cluster_queues:
            quota.add_usage(adm.cluster_queue, usage)
    return quota, lv


def fill(problem: Problem, plan: Plan) -> Plan:
    """``plan`` plus every pending workload that fits what it leaves free."""
    data, layout = problem.data, problem.layout
    quota, lv = _final_state(problem, plan)
    admitted = {a.workload for a in plan.admissions}
    taken = {  # exclusive groups (MultiKueue copies) with a copy admitted
        w.exclusive
        for key in admitted
        if (w := data.snapshot.workloads.get(key)) is not None and w.exclusive
    }
    added: list[PlanAdmission] = []
    for wd in sorted(data.workloads, key=lambda wd: queue_order(wd.obj)):
        if wd.key in admitted or wd.cq.queueing_strategy == "StrictFIFO":
            continue
        if wd.obj.exclusive is not None and wd.obj.exclusive in taken:
            continue
        got = admit(data, layout, lv, quota, wd)
        if got is not None:
            if wd.obj.exclusive is not None:
                taken.add(wd.obj.exclusive)
            added.append(
                PlanAdmission(
                    workload=wd.key,
                    cluster_queue=wd.cq.name,
                    pod_set_assignments=tuple(got[0]),
                )
            )
    if not added:
        return plan
    keys = {a.workload for a in added}
    return plan.model_copy(
        update={
            "admissions": tuple(
                sorted([*plan.admissions, *added], key=lambda a: a.workload)
            ),
            "pending": tuple(p for p in plan.pending if p.workload not in keys),
        }
    )


def explain(problem: Problem, plan: Plan) -> dict[str, str]:
    """Pending workload key -> why, for the workloads the model decided."""
    admitted = {a.workload for a in plan.admissions}
    quota, lv = _final_state(problem, plan)
    out: dict[str, str] = {}
    for wd in problem.data.workloads:
        if wd.key not in admitted:
            out[wd.key] = _why(problem, quota, lv, wd)
    return out


def _why(problem: Problem, quota: QuotaTree, lv: Leaves, wd: WorkloadData) -> str:
    data = problem.data
    short: str | None = None
    room: str | None = None
    for g in wd.groups:
        gd = data.groups[g]
        members = [data.pod_sets[p] for p in gd.pod_sets]
        rgs = sorted(gd.flavors)
        for combo in itertools.islice(
            itertools.product(*(gd.flavors[rg] for rg in rgs)), MAX_COMBINATIONS
        ):
            usage = group_usage(data, wd, members, dict(zip(rgs, combo, strict=True)))
            lacking = [
                (fr, q, quota.available(wd.cq.name, fr))
                for fr, q in sorted(usage.items())
                if quota.available(wd.cq.name, fr) < q
            ]
            if lacking:
                (f, r), q, left = lacking[0]
                short = short or (
                    f"after this plan ClusterQueue {wd.cq.name} has "
                    f"{format_units(r, left)} {r} of flavor {f} left to use "
                    f"(its cohort included), it needs {format_units(r, q)}"
                )
                continue
            blocked = _placement(problem, lv, members, combo)
            if blocked is None:
                return (
                    "fits the quota and hosts left after this plan, but its "
                    "StrictFIFO queue admits in order"
                    if wd.cq.queueing_strategy == "StrictFIFO"
                    else "fits the quota and hosts left after this plan, but was "
                    "not reached within the time limit"
                )
            room = room or blocked
    return short or room or "no flavor of its ClusterQueue can hold it"


def _placement(
    problem: Problem, lv: Leaves, members: list[PodSetData], combo: tuple[str, ...]
) -> str | None:
    """Why the TAS pod sets cannot be placed on what the plan leaves free."""
    data, layout = problem.data, problem.layout
    for pd in members:
        spec = next(
            (
                layout.specs[i]
                for i in layout.by_pod_set.get(pd.idx, [])
                if layout.specs[i].flavor in combo
            ),
            None,
        )
        if spec is None:
            continue
        shape = layout.shapes[spec.shape]
        need = np.zeros(lv.free.shape[1], dtype=np.int64)
        for r, q in shape.request:
            need[lv.col[r]] = q
        mask = layout.masks[spec.flavor][shape.signature]
        fit = lv.fit_now(spec.flavor, need, mask)
        units = pd.count // spec.unit
        if choose(lv, spec, units, fit) is None:
            topo = data.topos[spec.flavor]
            where = (
                f"one {topo.levels[spec.required]} domain"
                if spec.required is not None
                else "the hosts"
            )
            return (
                f"after this plan {where} of flavor {spec.flavor} cannot hold its "
                f"{pd.count} pod(s) of pod set {pd.ps.name}"
            )
    return None
