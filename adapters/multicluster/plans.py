"""Plans over the combined snapshot, in the users' names, and their check.

A solver's plan names combined objects (``c1.team-a/job``, flavor
``c1/h100``).  :func:`user_plan` reads it back: each admission and
preemption in its worker's own names with ``cluster:``, one entry per
manager Workload (the copy that was admitted; or, pending, why it fits in
no cluster, cluster by cluster).  :func:`validate_clusters` is the other
direction: a user plan is cut into one slice per worker and each slice is
checked by the independent validator against that worker's own snapshot
with the manager's copies — nothing of the renaming is trusted — and across
slices every dispatched Workload is admitted at most once and accounted
for exactly once.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from placewise.adapters.multicluster.combine import Federation
from placewise.models.cluster import HOSTNAME_LABEL
from placewise.models.multicluster import (
    CLUSTER_LABEL,
    MultiSnapshot,
    split_key,
    split_name,
)
from placewise.models.plan import Plan, PlanAdmission, PlanPending, PlanPreemption
from placewise.models.snapshot import Snapshot
from placewise.models.validate import Violation, validate
from placewise.models.workload import (
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
)


def local_text(text: str, cluster: str) -> str:
    """A solver's message about one worker, in that worker's own names
    (``flavor east/h100`` -> ``flavor h100``, ``east.team-a/x`` -> ``team-a/x``)."""
    return re.sub(rf"(?<![\w.-]){re.escape(cluster)}[/.](?=[\w])", "", text)


def _assignment(ta: TopologyAssignment) -> TopologyAssignment:
    levels = ta.levels
    drop = 1 if levels and levels[0] == CLUSTER_LABEL else 0
    domains = tuple(
        TopologyDomain(
            values=tuple(
                split_name(v)[1] if level == HOSTNAME_LABEL else v
                for level, v in zip(levels[drop:], d.values[drop:], strict=False)
            ),
            count=d.count,
        )
        for d in ta.domains
    )
    return TopologyAssignment(levels=levels[drop:], domains=domains)


def _psa(psa: PodSetAssignment) -> PodSetAssignment:
    ta = psa.topology_assignment
    return psa.model_copy(
        update={
            "flavors": {r: split_name(f)[1] for r, f in psa.flavors.items()},
            "topology_assignment": None if ta is None else _assignment(ta),
        }
    )


def user_plan(snapshot: MultiSnapshot, plan: Plan) -> Plan:
    """A combined plan in the workers' own names, one entry per workload."""
    admissions = []
    admitted_groups: set[str] = set()
    for a in plan.admissions:
        cluster, key = split_key(a.workload)
        group = snapshot.group_of(a.workload)
        if group is not None:
            admitted_groups.add(group)
        admissions.append(
            PlanAdmission(
                workload=key,
                cluster=cluster,
                cluster_queue=split_name(a.cluster_queue)[1],
                pod_set_assignments=tuple(_psa(p) for p in a.pod_set_assignments),
                replaces=split_key(a.replaces)[1] if a.replaces else None,
            )
        )
    preemptions = [
        PlanPreemption(
            workload=split_key(p.workload)[1],
            cluster=split_key(p.workload)[0],
            preemptor=split_key(p.preemptor)[1],
            reason=p.reason,
        )
        for p in plan.preemptions
    ]
    pending: list[PlanPending] = []
    why: dict[str, list[str]] = defaultdict(list)
    for p in plan.pending:
        cluster, key = split_key(p.workload)
        group = snapshot.group_of(p.workload)
        if group is None:
            reason = local_text(p.reason, cluster)
            pending.append(PlanPending(workload=key, reason=reason, cluster=cluster))
        elif group not in admitted_groups:
            why[group].append(f"{cluster}: {local_text(p.reason, cluster)}")
    for group, reasons in why.items():
        pending.append(PlanPending(workload=group, reason="; ".join(reasons)))
    for key, reason in snapshot.facts.unplaced.items():
        pending.append(PlanPending(workload=key, reason=reason))
    return Plan(
        solver=plan.solver,
        admissions=tuple(
            sorted(admissions, key=lambda a: (a.workload, a.cluster or ""))
        ),
        preemptions=tuple(
            sorted(preemptions, key=lambda p: (p.workload, p.cluster or ""))
        ),
        pending=tuple(sorted(pending, key=lambda p: (p.workload, p.cluster or ""))),
    )


def validate_clusters(fed: Federation, plan: Plan) -> list[Violation]:
    """Every violation of a multi-cluster plan, per worker and across them."""
    out: list[Violation] = []
    workers = fed.workers
    entries: list[tuple[str, str | None, str]] = [
        ("admission", a.cluster, a.workload) for a in plan.admissions
    ] + [("preemption", p.cluster, p.workload) for p in plan.preemptions]
    for what, cluster, key in entries:
        if cluster is None:
            out.append(
                Violation(
                    "multicluster.cluster", key, f"a {what} must name its cluster"
                )
            )
        elif cluster not in workers:
            out.append(
                Violation(
                    "multicluster.cluster",
                    key,
                    f"{what} in cluster {cluster}, which is not one of "
                    f"{', '.join(workers)}",
                )
            )
    for p in plan.pending:
        if p.cluster is not None and p.cluster not in workers:
            out.append(
                Violation(
                    "multicluster.cluster",
                    p.workload,
                    f"pending in cluster {p.cluster}, which is not one of "
                    f"{', '.join(workers)}",
                )
            )
        elif p.cluster is None and p.workload not in fed.dispatched:
            out.append(
                Violation(
                    "multicluster.unknown-workload",
                    p.workload,
                    "pending without a cluster, but the manager dispatches no such "
                    "Workload (a worker's own workload names its cluster)",
                )
            )
    out += _accounted(fed, plan)
    for c, snap in workers.items():
        out += [
            Violation(v.rule, v.workload, f"in cluster {c}: {v.message}")
            for v in validate(snap, _slice(snap, plan, c))
        ]
    return out


def _accounted(fed: Federation, plan: Plan) -> list[Violation]:
    """Each dispatched Workload admitted once or pending once, never both."""
    out = []
    where: dict[str, list[str]] = defaultdict(list)
    for a in plan.admissions:
        if a.workload in fed.dispatched and a.cluster is not None:
            where[a.workload].append(a.cluster)
    listed = Counter(p.workload for p in plan.pending if p.cluster is None)
    for key in sorted(fed.dispatched):
        clusters = where.get(key, [])
        if len(clusters) > 1:
            out.append(
                Violation(
                    "multicluster.admitted-twice",
                    key,
                    f"admitted in {', '.join(clusters)}; a dispatched workload runs "
                    "in one cluster",
                )
            )
        total = len(clusters) + listed[key]
        if total == 0:
            out.append(
                Violation(
                    "multicluster.missing",
                    key,
                    "dispatched workload appears neither in admissions nor in pending",
                )
            )
        elif listed[key] and (clusters or listed[key] > 1):
            out.append(
                Violation(
                    "multicluster.duplicate",
                    key,
                    f"admitted {len(clusters)} time(s) and pending {listed[key]} "
                    "time(s); it must appear exactly once",
                )
            )
    return out


def _slice(snap: Snapshot, plan: Plan, cluster: str) -> Plan:
    """One worker's part of the plan; copies it does not admit are pending."""
    admitted = {a.workload for a in plan.admissions if a.cluster == cluster}
    pending = [
        PlanPending(workload=p.workload, reason=p.reason)
        for p in plan.pending
        if p.cluster == cluster
    ]
    pending += [
        PlanPending(workload=w.key, reason="dispatched elsewhere or pending")
        for w in snap.pending
        if w.exclusive is not None and w.key not in admitted
    ]
    return Plan(
        solver=plan.solver,
        admissions=tuple(
            a.model_copy(update={"cluster": None})
            for a in plan.admissions
            if a.cluster == cluster
        ),
        preemptions=tuple(
            p.model_copy(update={"cluster": None})
            for p in plan.preemptions
            if p.cluster == cluster
        ),
        pending=tuple(pending),
    )
