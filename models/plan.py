"""The Plan: what a solver decided, in the shape of Kueue's status.admission.

The wire shape is fixed by formats.md §2; :meth:`Plan.to_dict` and
:func:`plan_from_dict` are its only writer and reader so that every command
and test speaks exactly the same format.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from placewise.models.errors import InstanceError, Location, Problem, describe
from placewise.models.quantity import QuantityError, format_units, to_units
from placewise.models.scheduling import Frozen
from placewise.models.workload import (
    PodSetAssignment,
    TopologyAssignment,
    TopologyDomain,
)

API_VERSION = "placewise.io/v1alpha1"
SolveStatus = Literal["OPTIMAL", "FEASIBLE", "FALLBACK", "NO_SOLUTION"]
PreemptionReason = Literal[
    "InClusterQueue",
    "InCohortReclamation",
    "InCohortReclaimWhileBorrowing",
    "InCohortFairSharing",
]


class TierResult(Frozen):
    """One priority tier of a plan, in the units operators read."""

    priority: int
    gpus: int
    """Accelerators running after the plan from workloads of this priority."""
    bound: int | None = None
    """Proven upper bound on ``gpus``, given the tiers above it (None: none
    was proven, e.g. under the single-tier ``gpus`` objective)."""
    greedy: int | None = None
    """The same figure for Kueue's greedy plan, when the optimizer ran it."""


class SolverInfo(Frozen):
    name: str
    status: SolveStatus
    wall_seconds: float = 0.0
    objective: float | None = None
    bound: float | None = None
    tiers: tuple[TierResult, ...] = ()
    fallback: str | None = None
    """Why the optimizer returned its warm start (status FALLBACK), in words,
    for logs and metrics in the same process; not written to the plan file."""


class PlanAdmission(Frozen):
    workload: str
    cluster_queue: str
    pod_set_assignments: tuple[PodSetAssignment, ...]
    cluster: str | None = None
    """The worker cluster, in multi-cluster plans only (formats.md §3)."""
    replaces: str | None = None
    """The running workload slice this admission replaces (an elastic job's
    scale-up, Kueue's ElasticJobsViaWorkloadSlices): it is finished, not
    preempted, and its quota, capacity and placed pods pass to this one."""


class PlanPreemption(Frozen):
    workload: str
    preemptor: str
    reason: PreemptionReason
    cluster: str | None = None
    """The worker cluster of the victim, in multi-cluster plans only."""


BlockedBy = Literal["quota", "priority", "fragmentation"]
BLOCKED_BY: tuple[BlockedBy, ...] = ("quota", "priority", "fragmentation")


class PlanPending(Frozen):
    workload: str
    reason: str
    cluster: str | None = None
    """A worker's own pending workload, in multi-cluster plans (names repeat
    across clusters); None for the manager's dispatched workloads."""
    blocked_by: BlockedBy | None = None
    """What holds it back: quota, higher priority, or fragmentation (quota
    is free but no placement of its pods fits the idle capacity)."""
    fewest_moves: int | None = None
    """For fragmentation: the fewest moves that would admit it within the
    move budget; None when unknown or when no plan within the budget does."""


class PlanMove(Frozen):
    """A running workload evicted and admitted again in the same plan: its
    new placement is its entry in ``admissions``; it is no preemption."""

    workload: str
    from_hosts: tuple[str, ...]
    to_hosts: tuple[str, ...]
    lost_gpu_hours: float
    """Work thrown away (0 when annotated ``placewise.io/checkpointed``)."""


def _cluster(entry: dict[str, Any], cluster: str | None) -> dict[str, Any]:
    """``cluster`` right after ``workload`` and only when set, so single-cluster
    plans read exactly as before."""
    if cluster is None:
        return entry
    items = list(entry.items())
    return dict([items[0], ("cluster", cluster), *items[1:]])


class Plan(Frozen):
    solver: SolverInfo
    admissions: tuple[PlanAdmission, ...] = ()
    preemptions: tuple[PlanPreemption, ...] = ()
    pending: tuple[PlanPending, ...] = ()
    moves: tuple[PlanMove, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        solver: dict[str, Any] = {
            "name": self.solver.name,
            "status": self.solver.status,
            "wallSeconds": round(self.solver.wall_seconds, 3),
        }
        if self.solver.objective is not None:
            solver["objective"] = _number(self.solver.objective)
        if self.solver.bound is not None:
            solver["bound"] = _number(self.solver.bound)
        if self.solver.tiers:
            solver["tiers"] = [
                {"priority": t.priority, "gpus": t.gpus}
                | ({"bound": t.bound} if t.bound is not None else {})
                | ({"greedy": t.greedy} if t.greedy is not None else {})
                for t in self.solver.tiers
            ]
        return {
            "apiVersion": API_VERSION,
            "kind": "Plan",
            "solver": solver,
            "admissions": [
                _cluster(
                    {
                        "workload": a.workload,
                        "clusterQueue": a.cluster_queue,
                        "podSetAssignments": [
                            _psa_to_dict(p) for p in a.pod_set_assignments
                        ],
                    }
                    | ({"replaces": a.replaces} if a.replaces else {}),
                    a.cluster,
                )
                for a in self.admissions
            ],
            "preemptions": [
                _cluster(
                    {
                        "workload": p.workload,
                        "preemptor": p.preemptor,
                        "reason": p.reason,
                    },
                    p.cluster,
                )
                for p in self.preemptions
            ],
            "pending": [_cluster(_pending_to_dict(p), p.cluster) for p in self.pending],
        } | (
            {
                "moves": [
                    {
                        "workload": m.workload,
                        "from": list(m.from_hosts),
                        "to": list(m.to_hosts),
                        "lostGpuHours": _number(m.lost_gpu_hours),
                    }
                    for m in self.moves
                ]
            }
            if self.moves
            else {}
        )


def _pending_to_dict(p: PlanPending) -> dict[str, Any]:
    """The optional fields only when set, so plans without moves read as
    before."""
    out: dict[str, Any] = {"workload": p.workload, "reason": p.reason}
    if p.blocked_by is not None:
        out["blockedBy"] = p.blocked_by
    if p.fewest_moves is not None:
        out["fewestMoves"] = p.fewest_moves
    return out


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _psa_to_dict(psa: PodSetAssignment) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": psa.name,
        "flavors": dict(sorted(psa.flavors.items())),
        "resourceUsage": {
            r: format_units(r, v) for r, v in sorted(psa.resource_usage.items())
        },
        "count": psa.count,
    }
    if psa.topology_assignment is not None:
        ta = psa.topology_assignment
        out["topologyAssignment"] = {
            "levels": list(ta.levels),
            "domains": [
                {"values": list(d.values), "count": d.count} for d in ta.domains
            ],
        }
    return out


class _Reader:
    """Collects every problem of a plan file instead of stopping at the first."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def fail(self, where: str, message: str) -> None:
        self.problems.append(
            Problem(Location(file=self.source, kind="Plan", field=where), message)
        )

    def mapping(self, value: object, where: str) -> Mapping[str, Any]:
        if isinstance(value, Mapping):
            return value
        self.fail(where, f"expected a mapping, got {type(value).__name__}")
        return {}

    def seq(self, value: object, where: str) -> list[Any]:
        if value is None:
            return []
        if isinstance(value, list):
            return value
        self.fail(where, f"expected a list, got {type(value).__name__}")
        return []

    def string(self, value: object, where: str) -> str:
        if isinstance(value, str) and value:
            return value
        self.fail(where, f"expected a non-empty string, got {describe(value)}")
        return ""

    def text(self, value: object, where: str) -> str:
        """Optional free text: a string or nothing, never a ``str()``-ed tree."""
        if value is None or isinstance(value, str):
            return value or ""
        self.fail(where, f"expected a string, got {describe(value)}")
        return ""

    def integer(self, value: object, where: str) -> int:
        """A count: what Kubernetes can hold (int32), never negative."""
        if isinstance(value, int) and not isinstance(value, bool):
            if 0 <= value < 2**31:
                return value
            self.fail(where, f"must be in [0, 2^31), got {describe(value)}")
            return 0
        self.fail(where, f"expected an integer, got {describe(value)}")
        return 0

    def number(self, value: object, where: str) -> float | None:
        """An optional finite number (objective, bound, wallSeconds)."""
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                number = math.inf
            if math.isfinite(number):
                return number
        self.fail(where, f"expected a finite number, got {describe(value)}")
        return None


def plan_from_dict(data: object, source: str = "<plan>") -> Plan:
    """Parse a Plan document; raises :class:`InstanceError` listing all problems."""
    rd = _Reader(source)
    doc = rd.mapping(data, "")
    if doc and (doc.get("kind") != "Plan" or doc.get("apiVersion") != API_VERSION):
        rd.fail("kind", f"expected apiVersion {API_VERSION} kind Plan")
    solver_doc = rd.mapping(doc.get("solver", {}), "solver")
    status = solver_doc.get("status", "FEASIBLE")
    if status not in ("OPTIMAL", "FEASIBLE", "FALLBACK", "NO_SOLUTION"):
        rd.fail("solver.status", f"unknown status {describe(status)}")
        status = "FEASIBLE"
    solver = SolverInfo(
        name=rd.text(solver_doc.get("name"), "solver.name"),
        status=status,
        wall_seconds=rd.number(solver_doc.get("wallSeconds"), "solver.wallSeconds")
        or 0.0,
        objective=rd.number(solver_doc.get("objective"), "solver.objective"),
        bound=rd.number(solver_doc.get("bound"), "solver.bound"),
        tiers=_tiers(rd, solver_doc.get("tiers")),
    )
    admissions = []
    for i, raw in enumerate(rd.seq(doc.get("admissions"), "admissions")):
        where = f"admissions[{i}]"
        adm = rd.mapping(raw, where)
        psas = []
        for j, raw_psa in enumerate(
            rd.seq(adm.get("podSetAssignments"), f"{where}.podSetAssignments")
        ):
            psas.append(_psa_from_dict(rd, raw_psa, f"{where}.podSetAssignments[{j}]"))
        admissions.append(
            PlanAdmission(
                workload=rd.string(adm.get("workload"), f"{where}.workload"),
                cluster_queue=rd.string(
                    adm.get("clusterQueue"), f"{where}.clusterQueue"
                ),
                pod_set_assignments=tuple(psas),
                cluster=_optional(rd, adm, where),
                replaces=_optional(rd, adm, where, "replaces"),
            )
        )
    preemptions = []
    reasons = (
        "InClusterQueue",
        "InCohortReclamation",
        "InCohortReclaimWhileBorrowing",
        "InCohortFairSharing",
    )
    for i, raw in enumerate(rd.seq(doc.get("preemptions"), "preemptions")):
        where = f"preemptions[{i}]"
        pre = rd.mapping(raw, where)
        reason = pre.get("reason")
        if reason not in reasons:
            rd.fail(f"{where}.reason", f"unknown preemption reason {describe(reason)}")
            reason = "InClusterQueue"
        preemptions.append(
            PlanPreemption(
                workload=rd.string(pre.get("workload"), f"{where}.workload"),
                preemptor=rd.string(pre.get("preemptor"), f"{where}.preemptor"),
                reason=reason,
                cluster=_optional(rd, pre, where),
            )
        )
    pending = []
    for i, raw in enumerate(rd.seq(doc.get("pending"), "pending")):
        where = f"pending[{i}]"
        pen = rd.mapping(raw, where)
        blocked = pen.get("blockedBy")
        if blocked is not None and blocked not in BLOCKED_BY:
            rd.fail(f"{where}.blockedBy", f"expected one of {list(BLOCKED_BY)}")
            blocked = None
        fewest = pen.get("fewestMoves")
        pending.append(
            PlanPending(
                workload=rd.string(pen.get("workload"), f"{where}.workload"),
                reason=rd.text(pen.get("reason"), f"{where}.reason"),
                cluster=_optional(rd, pen, where),
                blocked_by=blocked,
                fewest_moves=None
                if fewest is None
                else rd.integer(fewest, f"{where}.fewestMoves"),
            )
        )
    moves = [
        _move_from_dict(rd, raw, f"moves[{i}]")
        for i, raw in enumerate(rd.seq(doc.get("moves"), "moves"))
    ]
    if rd.problems:
        raise InstanceError(rd.problems)
    return Plan(
        solver=solver,
        admissions=tuple(admissions),
        preemptions=tuple(preemptions),
        pending=tuple(pending),
        moves=tuple(moves),
    )


def _move_from_dict(rd: _Reader, raw: object, where: str) -> PlanMove:
    move = rd.mapping(raw, where)

    def host_list(key: str) -> tuple[str, ...]:
        return tuple(
            rd.string(h, f"{where}.{key}[{i}]")
            for i, h in enumerate(rd.seq(move.get(key), f"{where}.{key}"))
        )

    lost = rd.number(move.get("lostGpuHours"), f"{where}.lostGpuHours")
    if lost is None:
        rd.fail(f"{where}.lostGpuHours", "required: the GPU-hours the move loses")
    elif lost < 0:
        rd.fail(f"{where}.lostGpuHours", f"must not be negative, got {lost}")
    return PlanMove(
        workload=rd.string(move.get("workload"), f"{where}.workload"),
        from_hosts=host_list("from"),
        to_hosts=host_list("to"),
        lost_gpu_hours=lost or 0.0,
    )


def _optional(
    rd: _Reader, entry: Mapping[str, Any], where: str, key: str = "cluster"
) -> str | None:
    """An optional field of an entry (``cluster``, an admission's
    ``replaces``): absent, or a non-empty string."""
    if entry.get(key) is None:
        return None
    return rd.string(entry.get(key), f"{where}.{key}") or None


def _tiers(rd: _Reader, raw: object) -> tuple[TierResult, ...]:
    out = []
    for i, item in enumerate(rd.seq(raw, "solver.tiers")):
        where = f"solver.tiers[{i}]"
        tier = rd.mapping(item, where)
        bound, greedy = tier.get("bound"), tier.get("greedy")
        priority = tier.get("priority")
        if not isinstance(priority, int) or isinstance(priority, bool):
            rd.fail(
                f"{where}.priority", f"expected an integer, got {describe(priority)}"
            )
            priority = 0
        elif not -(2**31) <= priority < 2**31:
            rd.fail(f"{where}.priority", "must be an int32 priority")
            priority = 0
        out.append(
            TierResult(
                priority=priority,
                gpus=rd.integer(tier.get("gpus"), f"{where}.gpus"),
                bound=None if bound is None else rd.integer(bound, f"{where}.bound"),
                greedy=None
                if greedy is None
                else rd.integer(greedy, f"{where}.greedy"),
            )
        )
    return tuple(out)


def _psa_from_dict(rd: _Reader, raw: object, where: str) -> PodSetAssignment:
    psa = rd.mapping(raw, where)
    flavors = {
        str(k): rd.string(v, f"{where}.flavors.{k}")
        for k, v in rd.mapping(psa.get("flavors", {}), f"{where}.flavors").items()
    }
    usage = {}
    for r, q in rd.mapping(
        psa.get("resourceUsage", {}), f"{where}.resourceUsage"
    ).items():
        try:
            usage[str(r)] = to_units(str(r), q)
        except QuantityError as exc:
            rd.fail(f"{where}.resourceUsage.{r}", str(exc))
    ta = None
    if psa.get("topologyAssignment") is not None:
        raw_ta = rd.mapping(psa["topologyAssignment"], f"{where}.topologyAssignment")
        levels = tuple(
            rd.string(x, f"{where}.levels[{i}]")
            for i, x in enumerate(rd.seq(raw_ta.get("levels"), f"{where}.levels"))
        )
        domains = []
        for k, raw_d in enumerate(rd.seq(raw_ta.get("domains"), f"{where}.domains")):
            d = rd.mapping(raw_d, f"{where}.domains[{k}]")
            vpath = f"{where}.domains[{k}].values"
            values = tuple(  # node label values: a string, possibly empty
                rd.text(v, f"{vpath}[{i}]") if v is not None else rd.string(v, vpath)
                for i, v in enumerate(rd.seq(d.get("values"), vpath))
            )
            domains.append(
                TopologyDomain(
                    values=values,
                    count=rd.integer(d.get("count"), f"{where}.domains[{k}].count"),
                )
            )
        ta = TopologyAssignment(levels=levels, domains=tuple(domains))
    return PodSetAssignment(
        name=rd.string(psa.get("name"), f"{where}.name"),
        flavors=flavors,
        resource_usage=usage,
        count=rd.integer(psa.get("count"), f"{where}.count"),
        topology_assignment=ta,
    )
