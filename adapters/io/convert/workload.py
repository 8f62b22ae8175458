"""Decoder for Kueue Workloads, including both topologyAssignment forms."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from placewise.adapters.io.convert.context import EPOCH, Ctx
from placewise.adapters.io.convert.core import (
    duration_seconds,
    effective_requests,
    owner_uids,
    placement,
    string_map,
    texts,
)
from placewise.adapters.io.convert.core import is_true as condition_true
from placewise.adapters.io.documents import parse_json
from placewise.models.cluster import KUEUE_GROUP
from placewise.models.errors import describe
from placewise.models.snapshot import SLICE_REPLACEMENT_FOR
from placewise.models.timing import EXPECTED_DURATION
from placewise.models.workload import (
    Admission,
    PodSet,
    PodSetAssignment,
    PriorityRef,
    SliceLayer,
    TopologyAssignment,
    TopologyDomain,
    TopologyRequest,
    Workload,
)

_ANN = "kueue.x-k8s.io/"
_REQUEUE_ON_EVICTION = ("PodsReadyTimeout", "AdmissionCheck")


def topology_request(
    ctx: Ctx, raw: Mapping[str, Any], annotations: Mapping[str, str], path: str
) -> TopologyRequest:
    """``spec.podSets[].topologyRequest``, else the pod-template annotations."""

    def pick(field: str, ann: str) -> str | None:
        value = ctx.string(raw, field, f"{path}.{field}")
        return value if value else annotations.get(_ANN + ann) or None

    required = pick("required", "podset-required-topology")
    preferred = pick("preferred", "podset-preferred-topology")
    unconstrained_raw = raw.get("unconstrained")
    if unconstrained_raw is None:
        unconstrained_raw = annotations.get(_ANN + "podset-unconstrained-topology")
    unconstrained = ctx.boolean(
        {"u": unconstrained_raw}, "u", f"{path}.unconstrained", False
    )
    layers: list[SliceLayer] = []
    invalid = None
    constraints = raw.get("podsetSliceRequiredTopologyConstraints")
    if constraints is None and _ANN + "podset-slice-required-topology-constraints" in (
        annotations
    ):
        try:
            constraints = parse_json(
                annotations[_ANN + "podset-slice-required-topology-constraints"]
            )
        except ValueError as exc:
            ctx.error(
                f"{path}.podsetSliceRequiredTopologyConstraints",
                f"annotation is not valid JSON: {describe(str(exc), quote=False)}",
            )
    if isinstance(constraints, list):
        for i, c in enumerate(constraints):
            where = f"{path}.podsetSliceRequiredTopologyConstraints[{i}]"
            if not isinstance(c, Mapping) or not c.get("topology"):
                ctx.error(where, "needs topology and size")
                continue
            level = ctx.string(c, "topology", f"{where}.topology")
            size = ctx.integer(c, "size", f"{where}.size", minimum=1)
            if size is not None and level is not None:
                layers.append(SliceLayer(level=level, size=size))
    else:
        level = pick("podSetSliceRequiredTopology", "podset-slice-required-topology")
        size_raw: object = raw.get("podSetSliceSize")
        if size_raw is None:
            size_raw = annotations.get(_ANN + "podset-slice-size")
        if level is not None:
            size = ctx.integer(
                {"s": size_raw}, "s", f"{path}.podSetSliceSize", minimum=1
            )
            if size is None:
                invalid = "podSetSliceRequiredTopology requires podSetSliceSize"
            else:
                layers.append(SliceLayer(level=level, size=size))
    group = pick("podSetGroupName", "podset-group-name")
    return TopologyRequest(
        required=required,
        preferred=preferred,
        unconstrained=unconstrained,
        slices=tuple(layers),
        group=group,
        invalid=invalid,
    )


def pod_sets(ctx: Ctx, spec: Mapping[str, Any]) -> tuple[PodSet, ...]:
    out = []
    names: set[str] = set()
    raw_sets = ctx.seq(spec, "podSets", "spec.podSets")
    if not raw_sets:
        ctx.error("spec.podSets", "a Workload needs at least one pod set")
    for i, raw in enumerate(raw_sets):
        path = f"spec.podSets[{i}]"
        if not isinstance(raw, Mapping):
            ctx.error(path, "expected a mapping")
            continue
        name = ctx.string(raw, "name", f"{path}.name", "main") or "main"
        if name in names:
            ctx.error(f"{path}.name", f"duplicate pod set name {describe(name)}")
        names.add(name)
        count = ctx.integer(raw, "count", f"{path}.count", default=1, minimum=0)
        count = 1 if count is None else count
        min_count = ctx.integer(raw, "minCount", f"{path}.minCount", minimum=1)
        if min_count is not None and min_count > count:
            ctx.error(f"{path}.minCount", f"minCount {min_count} exceeds count {count}")
            min_count = None
        template = ctx.mapping(raw, "template", f"{path}.template")
        tmeta = ctx.mapping(template, "metadata", f"{path}.template.metadata")
        tspec = ctx.mapping(template, "spec", f"{path}.template.spec")
        annotations = string_map(
            ctx, tmeta, "annotations", f"{path}.template.metadata.annotations"
        )
        topo = topology_request(
            ctx,
            ctx.mapping(raw, "topologyRequest", f"{path}.topologyRequest"),
            annotations,
            f"{path}.topologyRequest",
        )
        for layer in topo.slices:
            if count and count % layer.size:
                ctx.error(
                    f"{path}.topologyRequest",
                    f"slice size {layer.size} does not divide count {count}",
                )
        for outer, inner in zip(topo.slices, topo.slices[1:], strict=False):
            if outer.size % inner.size:
                ctx.error(
                    f"{path}.topologyRequest",
                    f"inner slice size {inner.size} does not divide "
                    f"outer slice size {outer.size}",
                )
        out.append(
            PodSet(
                name=name,
                count=count,
                min_count=min_count,
                requests=effective_requests(ctx, tspec, f"{path}.template.spec"),
                placement=placement(ctx, tspec, f"{path}.template.spec"),
                topology=topo,
            )
        )
    return tuple(out)


def topology_assignment(
    ctx: Ctx, raw: Mapping[str, Any], path: str
) -> TopologyAssignment:
    levels = texts(ctx, ctx.seq(raw, "levels", f"{path}.levels"), f"{path}.levels")
    levels = levels or ()
    domains: list[TopologyDomain] = []
    for i, d in enumerate(ctx.seq(raw, "domains", f"{path}.domains")):
        where = f"{path}.domains[{i}]"
        if not isinstance(d, Mapping):
            ctx.error(where, "expected a mapping")
            continue
        values = texts(ctx, ctx.seq(d, "values", f"{where}.values"), f"{where}.values")
        count = ctx.integer(d, "count", f"{where}.count", minimum=0) or 0
        if values is None:
            continue
        if len(values) != len(levels):
            ctx.error(f"{where}.values", f"expected {len(levels)} values")
        domains.append(TopologyDomain(values=values, count=count))
    for i, s in enumerate(ctx.seq(raw, "slices", f"{path}.slices")):
        domains.extend(_decode_slice(ctx, s, len(levels), f"{path}.slices[{i}]"))
    return TopologyAssignment(levels=levels, domains=tuple(domains))


def _decode_slice(
    ctx: Ctx, raw: object, nlevels: int, path: str
) -> list[TopologyDomain]:
    """v1beta2 compressed form: per-level universal or prefix+roots+suffix.

    Everything is checked before a single domain is built: ``domainCount``
    is an int32, and a slice of only universal values (the same domain
    over and over) would otherwise expand a few bytes into millions.
    """
    if not isinstance(raw, Mapping):
        ctx.error(path, "expected a mapping")
        return []
    n = ctx.integer(raw, "domainCount", f"{path}.domainCount", minimum=1) or 0
    per_level = ctx.seq(raw, "valuesPerLevel", f"{path}.valuesPerLevel")
    if len(per_level) != nlevels:
        ctx.error(f"{path}.valuesPerLevel", f"expected {nlevels} levels")
        return []
    listed = False
    columns: list[list[str] | str] = []
    for li, lvl in enumerate(per_level):
        where = f"{path}.valuesPerLevel[{li}]"
        if isinstance(lvl, Mapping) and lvl.get("universal") is not None:
            value = ctx.string(lvl, "universal", f"{where}.universal")
            if value is None:
                return []
            columns.append(value)
        elif isinstance(lvl, Mapping) and isinstance(lvl.get("individual"), Mapping):
            ind = lvl["individual"]
            rpath = f"{where}.individual.roots"
            roots = texts(ctx, ctx.seq(ind, "roots", rpath), rpath)
            prefix = ctx.string(ind, "prefix", f"{where}.individual.prefix", "")
            suffix = ctx.string(ind, "suffix", f"{where}.individual.suffix", "")
            if roots is None or prefix is None or suffix is None:
                return []
            if len(roots) != n:
                ctx.error(rpath, f"expected {n} roots")
                return []
            listed = True
            columns.append([prefix + r + suffix for r in roots])
        else:
            ctx.error(where, "needs universal or individual")
            return []
    if not listed and n > 1:
        ctx.error(
            f"{path}.domainCount",
            f"{n} domains with only universal values would all be the same domain",
        )
        return []
    pc = ctx.mapping(raw, "podCounts", f"{path}.podCounts")
    if pc.get("universal") is not None:
        counts = [
            ctx.integer(pc, "universal", f"{path}.podCounts.universal", minimum=0) or 0
        ] * n
    else:
        ipath = f"{path}.podCounts.individual"
        items = ctx.seq(pc, "individual", ipath)
        if len(items) != n:
            ctx.error(f"{path}.podCounts", f"expected {n} pod counts")
            return []
        counts = [
            ctx.integer({"c": c}, "c", f"{ipath}[{i}]", minimum=0) or 0
            for i, c in enumerate(items)
        ]
    return [
        TopologyDomain(
            values=tuple(c if isinstance(c, str) else c[i] for c in columns),
            count=counts[i],
        )
        for i in range(n)
    ]


def admission(ctx: Ctx, raw: Mapping[str, Any]) -> Admission | None:
    cq = ctx.string(raw, "clusterQueue", "status.admission.clusterQueue")
    if not cq:
        ctx.error(
            "status.admission.clusterQueue", "an admission names its ClusterQueue"
        )
        return None
    psas = []
    for i, p in enumerate(
        ctx.seq(raw, "podSetAssignments", "status.admission.podSetAssignments")
    ):
        path = f"status.admission.podSetAssignments[{i}]"
        if not isinstance(p, Mapping):
            ctx.error(path, "expected a mapping")
            continue
        ta_raw = p.get("topologyAssignment")
        psas.append(
            PodSetAssignment(
                name=ctx.string(p, "name", f"{path}.name", "main") or "main",
                flavors=string_map(ctx, p, "flavors", f"{path}.flavors"),
                resource_usage=ctx.resources(
                    p, "resourceUsage", f"{path}.resourceUsage"
                ),
                count=ctx.integer(p, "count", f"{path}.count", default=-1, minimum=0)
                if p.get("count") is not None
                else -1,
                topology_assignment=topology_assignment(
                    ctx, ta_raw, f"{path}.topologyAssignment"
                )
                if isinstance(ta_raw, Mapping)
                else None,
            )
        )
    return Admission(cluster_queue=cq, pod_set_assignments=tuple(psas))


def _priority_ref(
    ctx: Ctx, spec: Mapping[str, Any], version: str
) -> PriorityRef | None:
    ref = spec.get("priorityClassRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        where = "spec.priorityClassRef"
        name = ctx.string(ref, "name", f"{where}.name")
        group = ctx.string(ref, "group", f"{where}.group", KUEUE_GROUP)
        kind = ctx.string(ref, "kind", f"{where}.kind", "WorkloadPriorityClass")
        if name is None:
            return None
        kueue = group == KUEUE_GROUP and kind == "WorkloadPriorityClass"
        return PriorityRef(name=name, kueue=kueue)
    name = ctx.string(spec, "priorityClassName", "spec.priorityClassName")
    if name:
        source = ctx.string(spec, "priorityClassSource", "spec.priorityClassSource", "")
        return PriorityRef(name=name, kueue=source != "scheduling.k8s.io/priorityclass")
    return None


def decode_workload(ctx: Ctx, obj: Mapping[str, Any], version: str) -> Workload:
    meta = ctx.mapping(obj, "metadata", "metadata")
    spec = ctx.mapping(obj, "spec", "spec")
    status = ctx.mapping(obj, "status", "status")
    created = ctx.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")
    created = created or EPOCH
    conditions: dict[str, Mapping[str, Any]] = {}
    times: dict[str, datetime | None] = {}
    stamps: list[datetime | None] = []
    if meta.get("creationTimestamp") is not None:
        stamps.append(created)
    for i, c in enumerate(ctx.seq(status, "conditions", "status.conditions")):
        if not isinstance(c, Mapping):
            continue
        path = f"status.conditions[{i}].lastTransitionTime"
        stamp = ctx.timestamp(c.get("lastTransitionTime"), path)
        stamps.append(stamp)
        if c.get("type"):
            kind = ctx.string(c, "type", f"status.conditions[{i}].type")
            if kind is not None:
                conditions[kind] = c
                times[kind] = stamp

    def is_true(kind: str) -> bool:
        return condition_true(conditions.get(kind, {}).get("status"))

    def when(kind: str) -> datetime | None:
        return times.get(kind)

    known = [t for t in stamps if t is not None]
    queue_ts = created
    if (
        is_true("Evicted")
        and conditions["Evicted"].get("reason") in _REQUEUE_ON_EVICTION
    ):
        queue_ts = when("Evicted") or created
    adm_raw = status.get("admission")
    reserved_at = when("QuotaReserved") if is_true("QuotaReserved") else None
    annotations = string_map(ctx, meta, "annotations", "metadata.annotations")
    priority = ctx.integer(spec, "priority", "spec.priority")
    psets = pod_sets(ctx, spec)
    adm = admission(ctx, adm_raw) if isinstance(adm_raw, Mapping) else None
    if adm is not None:
        adm = _default_counts(adm, psets)
    return Workload(
        namespace=ctx.namespace,
        name=ctx.name,
        uid=ctx.string(meta, "uid", "metadata.uid", "") or "",
        queue_name=ctx.string(spec, "queueName", "spec.queueName") or None,
        priority=priority or 0,
        priority_set=priority is not None,
        priority_class=_priority_ref(ctx, spec, version),
        creation_timestamp=created,
        queue_order_timestamp=queue_ts,
        pod_sets=psets,
        active=ctx.boolean(spec, "active", "spec.active", True),
        finished=is_true("Finished"),
        admission=adm,
        quota_reserved=is_true("QuotaReserved"),
        quota_reserved_at=reserved_at,
        running_since=(when("Admitted") if is_true("Admitted") else None)
        or reserved_at,
        max_execution_seconds=ctx.integer(
            spec,
            "maximumExecutionTimeSeconds",
            "spec.maximumExecutionTimeSeconds",
            minimum=1,
        ),
        past_execution_seconds=ctx.integer(
            status,
            "accumulatedPastExecutionTimeSeconds",
            "status.accumulatedPastExecutionTimeSeconds",
            default=0,
            minimum=0,
        )
        or 0,
        expected_seconds=_expected(ctx, annotations),
        owner_uids=owner_uids(ctx, meta),
        newest_timestamp=max(known) if known else None,
        evicted=is_true("Evicted"),
        labels=string_map(ctx, meta, "labels", "metadata.labels"),
        annotations=annotations,
        replaces=annotations.get(SLICE_REPLACEMENT_FOR) or None,
    )


def _expected(ctx: Ctx, annotations: Mapping[str, str]) -> int | None:
    """The ``placewise.io/expected-duration`` annotation in whole seconds."""
    raw = annotations.get(EXPECTED_DURATION)
    if raw is None:
        return None
    seconds = duration_seconds(raw)
    if seconds is None or seconds <= 0:
        ctx.error(
            f"metadata.annotations.{EXPECTED_DURATION}",
            f"{describe(raw)} is not a positive duration (a Go duration such "
            "as 90m or 1h30m, or whole seconds)",
        )
        return None
    return seconds


def _default_counts(adm: Admission, psets: tuple[PodSet, ...]) -> Admission:
    """A missing admission count means the pod set's spec count (Kueue)."""
    by_name = {p.name: p.count for p in psets}
    psas = tuple(
        p if p.count >= 0 else p.model_copy(update={"count": by_name.get(p.name, 0)})
        for p in adm.pod_set_assignments
    )
    return adm.model_copy(update={"pod_set_assignments": psas})
