"""The only place that maps between Plans and model variable values."""

from __future__ import annotations

from collections import defaultdict

from placewise.models.cluster import PODS
from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.workload import (
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
)
from placewise.solver.cpsat.decode.placement_io import decode, placement_values
from placewise.solver.cpsat.model.constraints import Constraints
from placewise.solver.cpsat.model.placement import Placement
from placewise.solver.cpsat.model.variables import Variables
from placewise.solver.problem.data import ModelData, PodSetData


def fallback(
    greedy: Plan,
    wall: float,
    objective: float | None = None,
    bound: float | None = None,
    why: str | None = None,
) -> Plan:
    """The greedy plan, returned by cpsat because it found nothing better."""
    return greedy.model_copy(
        update={
            "solver": greedy.solver.model_copy(
                update={
                    "name": "cpsat",
                    "status": "FALLBACK",
                    "wall_seconds": wall,
                    "objective": objective,
                    "bound": bound,
                    "fallback": why,
                }
            )
        }
    )


def decisions_from_plan(
    data: ModelData, v: Variables, pl: Placement, plan: Plan
) -> dict[int, int] | None:
    """Proto index -> value for admissions, flavors, counts, placements, victims.

    Who preempts whom (``S`` pairs) is left to :meth:`Constraints.credit`,
    which needs the derived indicators.  None when the plan uses something
    the model cannot express; the caller then starts cold.
    """
    out: dict[int, int] = {}
    admitted = {a.workload: a for a in plan.admissions}
    for wd in data.workloads:
        wv = v.workloads[wd.idx]
        adm = admitted.get(wd.key)
        out[wv.admit.index] = int(adm is not None)
        psas = {p.name: p for p in adm.pod_set_assignments} if adm else {}
        for gd_idx in wd.groups:
            gd = data.groups[gd_idx]
            for rg, flavors in gd.flavors.items():
                covered = gd.serves[rg]
                chosen = None
                for p in gd.pod_sets:
                    psa = psas.get(data.pod_sets[p].ps.name)
                    if psa is None:
                        continue
                    chosen = chosen or next(
                        (f for r, f in psa.flavors.items() if r in covered), None
                    )
                for f in flavors:
                    out[wv.flavor[(gd.idx, rg, f)].index] = int(
                        adm is not None and f == chosen
                    )
                if adm is not None and chosen not in flavors:
                    return None
        for p in wd.pod_sets:
            pd = data.pod_sets[p]
            var = v.pod_sets[p]
            psa = psas.get(pd.ps.name)
            count = psa.count if psa else 0
            if pd.min_count < pd.count:
                out[var.n.index] = count  # type: ignore[union-attr]
            elif psa is not None and count != pd.count:
                return None
            for (rg, f), u in var.u.items():
                covered = data.groups[pd.group].serves[rg]
                chosen = next(
                    (
                        fl
                        for r, fl in (psa.flavors.items() if psa else ())
                        if r in covered
                    ),
                    None,
                )
                if chosen is None and psa is not None:
                    # pod set requests nothing in this group: follow the group
                    chosen = next(
                        (
                            ff
                            for (g, rr, ff), x in v.workloads[wd.idx].flavor.items()
                            if rr == rg and out.get(x.index)
                        ),
                        None,
                    )
                out[u.index] = count if f == chosen else 0
    victims = {p.workload for p in plan.preemptions}
    for vd, x in zip(data.victims, v.victims, strict=True):
        out[x.index] = int(vd.info.key in victims)
    placed = placement_values(pl, plan)
    if placed is None:
        return None
    out.update(placed)
    return out


def pod_set_assignment(
    data: ModelData,
    pd: PodSetData,
    chosen: dict[int, str],
    n: int,
    leaves: tuple[str, dict[int, int]] | None,
) -> PodSetAssignment:
    """Kueue's podSetAssignment for ``n`` pods of ``pd`` under the chosen
    flavor per resource group, placed on ``leaves`` (flavor, leaf -> pods)."""
    flavors: dict[str, str] = {}
    for rg, f in chosen.items():
        for r in sorted(pd.requests):
            if r in data.groups[pd.group].serves[rg]:
                flavors[r] = f
    usage = {r: q * n for r, q in pd.requests.items() if r in flavors}
    if PODS in flavors:
        usage[PODS] = n
    topo = None
    if pd.tas and n > 0 and leaves is not None:
        topo = _topology(data, leaves[0], leaves[1])
    return PodSetAssignment(
        name=pd.ps.name,
        flavors=dict(sorted(flavors.items())),
        resource_usage=dict(sorted(usage.items())),
        count=n,
        topology_assignment=topo,
    )


def _topology(
    data: ModelData, flavor: str, counts: dict[int, int]
) -> TopologyAssignment:
    topo = data.topos[flavor]
    domains = []
    for leaf, c in counts.items():
        domains.append(TopologyDomain(values=topo.assignment_values(leaf), count=c))
    domains.sort(key=lambda d: d.values)
    levels = (topo.levels[-1],) if topo.hostname else topo.levels
    return TopologyAssignment(levels=levels, domains=tuple(domains))


def plan_from_values(
    data: ModelData,
    v: Variables,
    c: Constraints,
    values: dict[int, int],
    reasons: dict[str, str],
    named: dict[str, str] | None = None,
) -> Plan:
    admissions = []
    admitted_idx: set[int] = set()
    placed = decode(c.placement, values)
    for wd in data.workloads:
        wv = v.workloads[wd.idx]
        if not values[wv.admit.index]:
            continue
        admitted_idx.add(wd.idx)
        psas = []
        for p in wd.pod_sets:
            pd = data.pod_sets[p]
            var = v.pod_sets[p]
            n = values[var.n.index] if pd.min_count < pd.count else pd.count  # type: ignore[union-attr]
            gd = data.groups[pd.group]
            chosen = {
                rg: next(f for f in fl if values[wv.flavor[(gd.idx, rg, f)].index])
                for rg, fl in gd.flavors.items()
            }
            leaves = next(
                (
                    (f, per_leaf)
                    for (ps_idx, f), per_leaf in placed.items()
                    if ps_idx == p and per_leaf
                ),
                None,
            )
            psas.append(pod_set_assignment(data, pd, chosen, n, leaves))
        admissions.append(
            PlanAdmission(
                workload=wd.key,
                cluster_queue=wd.cq.name,
                pod_set_assignments=tuple(psas),
            )
        )
    preemptions = []
    on_leaves: dict[int, set[int]] = defaultdict(set)
    for (ps_idx, _), per_leaf in placed.items():
        on_leaves[data.pod_sets[ps_idx].wl].update(per_leaf)
    credit = c.credit(values, named or {}, on_leaves)
    for vd, x in zip(data.victims, v.victims, strict=True):
        if not values[x.index]:
            continue
        wd = data.workloads[credit[vd.idx]]
        reason = "InClusterQueue"
        if vd.info.cq != wd.cq.name:
            reason = "InCohortReclamation"
            if _borrows(data, c, values, wd.cq.name) and (
                wd.cq.preemption.borrow_within_cohort.policy != "Never"
            ):
                reason = "InCohortReclaimWhileBorrowing"
        preemptions.append(
            PlanPreemption(workload=vd.info.key, preemptor=wd.key, reason=reason)
        )
    admissions += data.fixed_admissions
    keys = {data.workloads[i].key for i in admitted_idx} | {
        a.workload for a in data.fixed_admissions
    }
    pending = tuple(
        PlanPending(
            workload=w.key,
            reason=reasons.get(w.key)
            or data.unsupported.get(w.key)
            or data.snapshot.blocked_reason(w)
            or "not admitted by the optimizer",
        )
        for w in data.snapshot.pending
        if w.key not in keys
    )
    return Plan(
        solver=SolverInfo(name="cpsat", status="FEASIBLE"),
        admissions=tuple(sorted(admissions, key=lambda a: a.workload)),
        preemptions=tuple(sorted(preemptions, key=lambda p: p.workload)),
        pending=pending,
    )


def _borrows(data: ModelData, c: Constraints, values: dict[int, int], cq: str) -> bool:
    node = data.tree.node(cq)
    for (q, fr), (terms, const, scale) in c.cq_usage.items():
        if q != cq:
            continue
        used = scale * sum(coef * values[x.index] for coef, x in terms) + const
        if used > node.nominal.get(fr, 0):
            return True
    return False
