"""The manager cluster's MultiKueue objects, and which Workloads it dispatches.

Kueue hands a Workload to the dispatcher (``workload.ShouldSkipClusterNomination``
and the incremental dispatcher's reconcile, read at the pinned commit) when
it holds a quota reservation in the manager, is not finished, its MultiKueue
admission check — an AdmissionCheck whose ``spec.controllerName`` is
``kueue.x-k8s.io/multikueue`` — is ``Pending``, and ``status.clusterName``
is not set yet.  The workers it may go to are the ``spec.clusters`` of the
MultiKueueConfig the check's ``spec.parameters`` names, in that order; a
MultiKueueCluster whose ``Active`` condition is False is not connected and
gets nothing.  The Kueue Configuration's ``multiKueue`` section gives the
dispatcher's name and the incremental dispatcher's step size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from placewise.adapters.io.convert.context import Ctx
from placewise.adapters.io.convert.core import is_true, texts
from placewise.adapters.io.loader import RawObject
from placewise.models.errors import Problem, describe
from placewise.models.multicluster import DEFAULT_STEP, MULTIKUEUE_CONTROLLER

KUEUE = "kueue.x-k8s.io"
VERSIONS = ("v1beta1", "v1beta2")
KINDS = ("AdmissionCheck", "MultiKueueConfig", "MultiKueueCluster")
CONFIG_GROUP = "config.kueue.x-k8s.io"


@dataclass(frozen=True, slots=True)
class CheckState:
    """One entry of a Workload's ``status.admissionChecks``."""

    name: str
    state: str


@dataclass(frozen=True, slots=True)
class WorkloadStatus:
    """The dispatch-related status of one manager Workload."""

    checks: tuple[CheckState, ...] = ()
    cluster_name: str | None = None
    nominated: tuple[str, ...] = ()


@dataclass
class ManagerFacts:
    checks: dict[str, str | None] = field(default_factory=dict)
    """MultiKueue AdmissionCheck name -> the MultiKueueConfig it names."""
    other_checks: set[str] = field(default_factory=set)
    """AdmissionChecks of other controllers (ProvisioningRequest, ...)."""
    configs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """MultiKueueConfig -> its clusters, in order."""
    active: dict[str, bool] = field(default_factory=dict)
    """MultiKueueCluster -> whether its Active condition is True."""
    status: dict[str, WorkloadStatus] = field(default_factory=dict)
    """manager Workload key -> its dispatch status."""
    dispatcher: str | None = None
    step: int = DEFAULT_STEP


def split(
    raws: list[RawObject], problems: list[Problem]
) -> tuple[list[RawObject], ManagerFacts]:
    """The MultiKueue kinds out of the manager's objects (the loader does not
    know them), read with located errors; the rest for the loader."""
    facts = ManagerFacts()
    rest: list[RawObject] = []
    for raw in raws:
        obj = raw.obj
        kind, api = obj.get("kind"), obj.get("apiVersion")
        group, _, version = str(api or "").rpartition("/")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        name = meta.get("name") if isinstance(meta, Mapping) else None
        ns = meta.get("namespace") if isinstance(meta, Mapping) else None
        if kind == "Workload" and group == KUEUE:
            ctx = Ctx(
                problems,
                raw.file,
                "Workload",
                str(ns or "default"),
                str(name),
                raw.line,
            )
            facts.status[f"{ctx.namespace}/{name}"] = _status(ctx, obj)
            rest.append(raw)
            continue
        if kind == "Configuration" and group == CONFIG_GROUP:
            where = Ctx(problems, raw.file, "Configuration", "", str(name), raw.line)
            _configuration(where, obj, facts)
            continue  # the manager's own queues are not solved: only multiKueue
        if kind not in KINDS or group != KUEUE:
            rest.append(raw)
            continue
        ctx = Ctx(problems, raw.file, str(kind), "", str(name or ""), raw.line)
        if version not in VERSIONS:
            ctx.error(
                "apiVersion",
                f"unsupported apiVersion {describe(api)} for {kind} "
                f"(supported: {', '.join(VERSIONS)})",
            )
            continue
        if not isinstance(name, str) or not name:
            ctx.error("metadata.name", "missing")
            continue
        if kind == "AdmissionCheck":
            _admission_check(ctx, obj, facts)
        elif kind == "MultiKueueConfig":
            spec = ctx.mapping(obj, "spec", "spec")
            clusters = texts(
                ctx, ctx.seq(spec, "clusters", "spec.clusters"), "spec.clusters"
            )
            if clusters is not None:
                if len(set(clusters)) != len(clusters):
                    ctx.error("spec.clusters", "cluster names must be unique")
                facts.configs[name] = clusters
        else:
            status = ctx.mapping(obj, "status", "status")
            active = False
            for cond in ctx.seq(status, "conditions", "status.conditions"):
                if isinstance(cond, Mapping) and cond.get("type") == "Active":
                    active = is_true(cond.get("status"))
            facts.active[name] = active
    return rest, facts


def _admission_check(ctx: Ctx, obj: Mapping[str, Any], facts: ManagerFacts) -> None:
    spec = ctx.mapping(obj, "spec", "spec")
    controller = ctx.string(spec, "controllerName", "spec.controllerName")
    if controller != MULTIKUEUE_CONTROLLER:
        facts.other_checks.add(ctx.name)
        return
    params = ctx.mapping(spec, "parameters", "spec.parameters")
    config = ctx.string(params, "name", "spec.parameters.name")
    kind = ctx.string(params, "kind", "spec.parameters.kind", "MultiKueueConfig")
    if config and kind != "MultiKueueConfig":
        ctx.error(
            "spec.parameters.kind", f"expected MultiKueueConfig, got {describe(kind)}"
        )
    facts.checks[ctx.name] = config or None


def _status(ctx: Ctx, obj: Mapping[str, Any]) -> WorkloadStatus:
    status = ctx.mapping(obj, "status", "status")
    checks = []
    for i, raw in enumerate(
        ctx.seq(status, "admissionChecks", "status.admissionChecks")
    ):
        where = f"status.admissionChecks[{i}]"
        if not isinstance(raw, Mapping):
            ctx.error(where, "expected a mapping")
            continue
        name = ctx.string(raw, "name", f"{where}.name")
        state = ctx.string(raw, "state", f"{where}.state", "Pending")
        if name:
            checks.append(CheckState(name, state or "Pending"))
    nominated = texts(
        ctx,
        ctx.seq(status, "nominatedClusterNames", "status.nominatedClusterNames"),
        "status.nominatedClusterNames",
    )
    return WorkloadStatus(
        checks=tuple(checks),
        cluster_name=ctx.string(status, "clusterName", "status.clusterName") or None,
        nominated=nominated or (),
    )


def _configuration(ctx: Ctx, obj: Mapping[str, Any], facts: ManagerFacts) -> None:
    mk = ctx.mapping(obj, "multiKueue", "multiKueue")
    facts.dispatcher = ctx.string(mk, "dispatcherName", "multiKueue.dispatcherName")
    inc = ctx.mapping(
        mk, "incrementalDispatcherConfig", "multiKueue.incrementalDispatcherConfig"
    )
    step = ctx.integer(
        inc,
        "stepSize",
        "multiKueue.incrementalDispatcherConfig.stepSize",
        minimum=1,
    )
    if step is not None:
        facts.step = step


def multikueue_check(facts: ManagerFacts, status: WorkloadStatus) -> CheckState | None:
    """The Workload's MultiKueue admission check state, if it has one."""
    for check in status.checks:
        if check.name in facts.checks:
            return check
    return None
