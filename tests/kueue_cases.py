"""Kueue's own decisions (../shared/kueue-cases) as Plans, for any test.

:func:`expected_plan` builds a Plan from ``expected.yaml`` and the instance
alone — never from a solver — so that the validator can be checked against
what Kueue itself admitted, and solver tests can reuse the same reading of
the expectations.  Where the transcription leaves something out (usage,
flavors of ``topology`` cases, who preempted whom) it is derived from the
instance, as described on each function.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from placewise.models.cluster import ClusterQueue
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
from tests.shared import KUEUE_CASES

CASES = KUEUE_CASES
MORE = Path(__file__).resolve().parent / "data" / "kueue-cases-more"
"""Kueue cases transcribed inside the repository (issue 22): same layout and
provenance as ../shared/kueue-cases, present in every checkout."""

EXPECTED_MORE: dict[str, int] = {"afs": 8, "fairsharing": 6, "slices": 2, "tas": 22}
"""Cases per group of :data:`MORE`; a group may grow, never shrink unnoticed."""


def list_cases(root: Path = CASES) -> list[Path]:
    """Every case folder (``<group>/<case>``) under ``root``, sorted."""
    return sorted(p.parent for p in root.glob("*/*/expected.yaml"))


def case_id(case: Path) -> str:
    """``group/case`` (``more/group/case`` for :data:`MORE`): stable, readable
    pytest ids that cannot collide between the two sets."""
    short = f"{case.parent.name}/{case.name}"
    return f"more/{short}" if case.parent.parent == MORE else short


def load_expected(case: Path) -> dict[str, Any]:
    data = yaml.safe_load((case / "expected.yaml").read_text())
    assert isinstance(data, dict), f"{case}: expected.yaml is not a mapping"
    return data


def instance_path(case: Path) -> Path:
    return case / "instance.yaml"


def expected_plan(case: Path, snapshot: Snapshot) -> Plan:
    """Kueue's outcome of the case as a Plan over ``snapshot``.

    Admissions take clusterQueue, flavors, count and topologyAssignment from
    the expectation; a missing clusterQueue is resolved through the
    workload's LocalQueue, missing flavors (``topology`` cases) come from
    the queue's single TAS flavor, missing counts are the spec count, and
    resourceUsage is per-pod requests x count (plus ``pods`` when the queue
    covers it), as Kueue writes it.  Each preempted workload is attributed
    to a pending workload (see :func:`_preemptor`).  An elastic slice's
    admission replaces its running slice (``replaces``, else the instance's
    link): Kueue finishes the old slice on admission.
    """
    expected = load_expected(case)
    admitted: dict[str, Any] = expected.get("admitted") or {}
    admissions = [
        _admission(snapshot, key, spec or {}) for key, spec in sorted(admitted.items())
    ]
    waiting = [w for w in snapshot.pending if w.key not in admitted]
    preemptions = []
    for victim_key in expected.get("preempted") or []:
        victim = snapshot.workloads[victim_key]
        preemptor, reason = _preemptor(snapshot, victim, waiting)
        preemptions.append(
            PlanPreemption(workload=victim_key, preemptor=preemptor, reason=reason)
        )
    return Plan(
        solver=SolverInfo(name="kueue-expected", status="FEASIBLE"),
        admissions=tuple(admissions),
        preemptions=tuple(preemptions),
        pending=tuple(
            PlanPending(workload=w.key, reason="pending in Kueue's outcome")
            for w in waiting
        ),
    )


def _admission(snapshot: Snapshot, key: str, spec: dict[str, Any]) -> PlanAdmission:
    w = snapshot.workloads[key]
    cq_name = spec.get("clusterQueue") or snapshot.cluster_queue_of(w)
    assert cq_name, f"{key}: no ClusterQueue in the expectation or via LocalQueue"
    cq = snapshot.cluster_queues[cq_name]
    by_name = {p["name"]: p for p in spec.get("podSetAssignments") or []}
    psas = [_pod_set(snapshot, cq, ps, by_name.get(ps.name, {})) for ps in w.pod_sets]
    old = snapshot.replaced_slice(w)
    return PlanAdmission(
        workload=key,
        cluster_queue=cq_name,
        pod_set_assignments=tuple(psas),
        replaces=spec.get("replaces") or (old.key if old is not None else None),
    )


def _covered(cq: ClusterQueue, resource: str) -> bool:
    return cq.group_of(resource) is not None


def _pod_set(
    snapshot: Snapshot, cq: ClusterQueue, ps: PodSet, spec: dict[str, Any]
) -> PodSetAssignment:
    count = int(spec.get("count", ps.count))
    flavors = {str(r): str(f) for r, f in (spec.get("flavors") or {}).items()}
    if not flavors:
        tas = [
            f
            for f in cq.flavor_names
            if f in snapshot.flavors and snapshot.flavors[f].is_tas
        ]
        if len(tas) == 1:
            wanted = [r for r, v in ps.requests.items() if v > 0] + ["pods"]
            flavors = {r: tas[0] for r in wanted if _covered(cq, r)}
    usage = {r: v * count for r, v in ps.requests.items() if v > 0 and r != "pods"}
    if _covered(cq, "pods") and count > 0:
        usage["pods"] = count
    ta = None
    raw = spec.get("topologyAssignment")
    if raw:
        ta = TopologyAssignment(
            levels=tuple(raw["levels"]),
            domains=tuple(
                TopologyDomain(values=tuple(d["values"]), count=int(d["count"]))
                for d in raw["domains"]
            ),
        )
    return PodSetAssignment(
        name=ps.name,
        flavors=flavors,
        resource_usage=usage,
        count=count,
        topology_assignment=ta,
    )


def _root(snapshot: Snapshot, cq_name: str | None) -> str | None:
    cq = snapshot.cluster_queues.get(cq_name or "")
    return snapshot.root_of(cq) if cq is not None else None


def _cohorts(snapshot: Snapshot, cq_name: str | None) -> list[str]:
    """The queue's cohorts from the root down."""
    cq = snapshot.cluster_queues.get(cq_name or "")
    return list(reversed(snapshot.ancestors(cq))) if cq is not None else []


def _preemptor(
    snapshot: Snapshot, victim: Workload, waiting: list[Workload]
) -> tuple[str, PreemptionReason]:
    """Which of the still-pending workloads evicted ``victim``, and why.

    Kueue's tests do not record it, so it is read off the queues: a
    candidate whose ClusterQueue policy could reach the victim (its own
    queue with withinClusterQueue set, or a queue of the same cohort tree
    with reclaimWithinCohort set) beats one merely in the same tree; ties go
    to the queue closer to the victim's (deeper lowest common cohort), then
    the higher priority, then the earlier queue-order timestamp.  The
    reason is InClusterQueue for the victim's own queue, else
    InCohortReclamation.
    """
    assert victim.admission is not None, f"{victim.key} is not running"
    vcq = victim.admission.cluster_queue
    vroot = _root(snapshot, vcq)

    vcohorts = _cohorts(snapshot, vcq)

    def rank(w: Workload) -> tuple[int, int, int, datetime, str]:
        cq_name = snapshot.cluster_queue_of(w)
        cq = snapshot.cluster_queues.get(cq_name or "")
        if cq is None or snapshot.blocked_reason(w) is not None:
            tier = 3
        elif cq_name == vcq:
            tier = 0 if cq.preemption.within_cluster_queue != "Never" else 1
        elif _root(snapshot, cq_name) == vroot:
            tier = 0 if cq.preemption.reclaim_within_cohort != "Never" else 1
        else:
            tier = 2
        # Closer in the cohort tree first: the lowest common cohort's depth.
        shared = [c for c in _cohorts(snapshot, cq_name) if c in vcohorts]
        return tier, -len(shared), -w.priority, w.queue_order_timestamp, w.key

    assert waiting, f"{victim.key} preempted but nothing is pending"
    best = min(waiting, key=rank)
    same = snapshot.cluster_queue_of(best) == vcq
    return best.key, "InClusterQueue" if same else "InCohortReclamation"


def assert_feasible(snapshot: Snapshot, plan: Plan) -> None:
    """Fail with every violation if the independent validator rejects
    ``plan``; for any test that produces a plan, solver tests included."""
    violations = validate(snapshot, plan)
    assert not violations, "plan rejected by the validator:\n" + "\n".join(
        str(v) for v in violations
    )
