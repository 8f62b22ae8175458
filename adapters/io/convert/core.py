"""Decoders for core/v1 shapes: pod specs, selectors, taints, nodes, pods."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from placewise.adapters.io.convert.context import Ctx
from placewise.models.cluster import Namespace, Node, Pod
from placewise.models.errors import describe
from placewise.models.scheduling import (
    LabelSelector,
    NodeSelectorTerm,
    PodPlacement,
    Requirement,
    Taint,
    Toleration,
)

TAS_POD_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)
_GO_DURATION = re.compile(r"((?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+")
_GO_PART = re.compile(r"([0-9]*\.?[0-9]*)(ns|us|µs|ms|s|m|h)")
_GO_UNIT = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}
MAX_DURATION = 10 * 365 * 24 * 3600
"""Longest duration read (ten years): beyond it a value is a mistake."""
POD_WORKLOAD = "kueue.x-k8s.io/workload"
POD_GROUP = "kueue.x-k8s.io/pod-group-name"
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
_NODE_OPS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def string_map(ctx: Ctx, obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    """Labels, annotations, selectors: every value a string (see Ctx.text)."""
    raw = ctx.mapping(obj, key, path)
    if all(type(k) is str and type(v) is str for k, v in raw.items()):
        return dict(raw)  # the common case, nothing to convert or report
    out = {}
    for k, v in raw.items():
        text = ctx.text(v, f"{path}.{k}")
        if text is not None or v is None:
            out[str(k)] = text or ""
    return out


def taints(ctx: Ctx, raw: list[Any], path: str) -> tuple[Taint, ...]:
    out = []
    for i, t in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(t, Mapping) or not t.get("key"):
            ctx.error(where, "a taint needs a key")
            continue
        key = ctx.string(t, "key", f"{where}.key")
        value = ctx.string(t, "value", f"{where}.value", "")
        effect = ctx.string(t, "effect", f"{where}.effect", "")
        if key is None or value is None or effect is None:
            continue
        if effect not in _EFFECTS:
            ctx.error(f"{where}.effect", f"unknown taint effect {describe(effect)}")
            continue
        out.append(Taint(key=key, value=value, effect=effect))
    return tuple(out)


def tolerations(ctx: Ctx, raw: list[Any], path: str) -> tuple[Toleration, ...]:
    out = []
    for i, t in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(t, Mapping):
            ctx.error(where, "expected a mapping")
            continue
        fields = [
            ctx.string(t, name, f"{where}.{name}", "")
            for name in ("key", "operator", "value", "effect")
        ]
        key, op, value, effect = fields
        if key is None or op is None or value is None or effect is None:
            continue
        op = op or "Equal"
        if op not in ("Exists", "Equal"):
            ctx.error(
                f"{where}.operator", f"unknown toleration operator {describe(op)}"
            )
            continue
        out.append(Toleration(key=key, operator=op, value=value, effect=effect))
    return tuple(out)


def requirements(
    ctx: Ctx, raw: list[Any], path: str, ops: tuple[str, ...]
) -> tuple[Requirement, ...]:
    out = []
    for i, r in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(r, Mapping) or "key" not in r:
            ctx.error(where, "a requirement needs a key")
            continue
        key = ctx.string(r, "key", f"{where}.key")
        op = ctx.string(r, "operator", f"{where}.operator", "")
        values = texts(ctx, ctx.seq(r, "values", f"{where}.values"), f"{where}.values")
        if key is None or op is None or values is None:
            continue
        if op not in ops:
            ctx.error(f"{where}.operator", f"unknown operator {describe(op)}")
            continue
        out.append(Requirement(key=key, operator=op, values=values))
    return tuple(out)


def label_selector(ctx: Ctx, raw: object, path: str) -> LabelSelector | None:
    """``None`` stays None: a null namespaceSelector matches nothing in Kueue."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        ctx.error(path, "expected a label selector mapping")
        return None
    labels = string_map(ctx, raw, "matchLabels", f"{path}.matchLabels")
    exprs = requirements(
        ctx,
        ctx.seq(raw, "matchExpressions", f"{path}.matchExpressions"),
        f"{path}.matchExpressions",
        _SELECTOR_OPS,
    )
    return LabelSelector(
        match_labels=tuple(sorted(labels.items())), match_expressions=exprs
    )


def placement(ctx: Ctx, spec: Mapping[str, Any], path: str) -> PodPlacement:
    selector = string_map(ctx, spec, "nodeSelector", f"{path}.nodeSelector")
    terms = None
    affinity = ctx.mapping(spec, "affinity", f"{path}.affinity")
    node_aff = ctx.mapping(affinity, "nodeAffinity", f"{path}.affinity.nodeAffinity")
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    if isinstance(required, Mapping):
        rpath = (
            f"{path}.affinity.nodeAffinity"
            ".requiredDuringSchedulingIgnoredDuringExecution"
        )
        terms = tuple(
            NodeSelectorTerm(
                match_expressions=requirements(
                    ctx,
                    ctx.seq(t, "matchExpressions", f"{rpath}.nodeSelectorTerms[{i}]"),
                    f"{rpath}.nodeSelectorTerms[{i}].matchExpressions",
                    _NODE_OPS,
                ),
                match_fields=requirements(
                    ctx,
                    ctx.seq(t, "matchFields", f"{rpath}.nodeSelectorTerms[{i}]"),
                    f"{rpath}.nodeSelectorTerms[{i}].matchFields",
                    _NODE_OPS,
                ),
            )
            for i, t in enumerate(ctx.seq(required, "nodeSelectorTerms", rpath))
            if isinstance(t, Mapping)
        )
    return PodPlacement(
        node_selector=tuple(sorted(selector.items())),
        required_terms=terms,
        tolerations=tolerations(
            ctx,
            ctx.seq(spec, "tolerations", f"{path}.tolerations"),
            f"{path}.tolerations",
        ),
    )


def _container_requests(ctx: Ctx, c: Any, path: str) -> dict[str, int]:
    """Requests, defaulting each missing request to its limit (API defaulting)."""
    if not isinstance(c, Mapping):
        ctx.error(path, "expected a container mapping")
        return {}
    res = ctx.mapping(c, "resources", f"{path}.resources")
    limits = ctx.resources(res, "limits", f"{path}.resources.limits")
    requests = ctx.resources(res, "requests", f"{path}.resources.requests")
    for r, v in limits.items():
        requests.setdefault(r, v)
    return requests


def _add(acc: dict[str, int], other: Mapping[str, int]) -> dict[str, int]:
    out = dict(acc)
    for r, v in other.items():
        out[r] = out.get(r, 0) + v
    return out


def _max(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    return {r: max(a.get(r, 0), b.get(r, 0)) for r in set(a) | set(b)}


def effective_requests(ctx: Ctx, spec: Mapping[str, Any], path: str) -> dict[str, int]:
    """Kubernetes' effective pod request.

    max(app containers + all sidecars, each init container + the sidecars
    started before it) + overhead — what kube-scheduler and Kueue count.
    """
    app: dict[str, int] = {}
    for i, c in enumerate(ctx.seq(spec, "containers", f"{path}.containers")):
        for r, v in _container_requests(ctx, c, f"{path}.containers[{i}]").items():
            app[r] = app.get(r, 0) + v
    inits = ctx.seq(spec, "initContainers", f"{path}.initContainers")
    total = app
    if inits:
        # (Amounts are never negative, so without init containers the
        # max below would return ``app`` itself: most pods skip it.)
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for i, c in enumerate(inits):
            req = _container_requests(ctx, c, f"{path}.initContainers[{i}]")
            if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
                sidecars = _add(sidecars, req)
                init_peak = _max(init_peak, sidecars)
            else:
                init_peak = _max(init_peak, _add(req, sidecars))
        total = _max(_add(app, sidecars), init_peak)
    overhead = ctx.resources(spec, "overhead", f"{path}.overhead")
    if overhead:
        total = _add(total, overhead)
    return {r: total[r] for r in sorted(total)}


def texts(ctx: Ctx, raw: list[Any], path: str) -> tuple[str, ...] | None:
    """A list of strings; None (after recording) if any item is not one."""
    out = []
    for i, v in enumerate(raw):
        text = ctx.text(v, f"{path}[{i}]")
        if text is None:
            if v is None:
                ctx.error(f"{path}[{i}]", "expected a string, got None")
            return None
        out.append(text)
    return tuple(out)


def is_true(value: object) -> bool:
    """A condition status: "True" (or an unquoted YAML true)."""
    return value is True or value == "True"


def is_ready(ctx: Ctx, status: Mapping[str, Any]) -> bool:
    for cond in ctx.seq(status, "conditions", "status.conditions"):
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return is_true(cond.get("status"))
    return False


def decode_namespace(ctx: Ctx, obj: Mapping[str, Any]) -> Namespace:
    meta = ctx.mapping(obj, "metadata", "metadata")
    return Namespace(
        name=ctx.name, labels=string_map(ctx, meta, "labels", "metadata.labels")
    )


def decode_node(ctx: Ctx, obj: Mapping[str, Any]) -> Node:
    meta = ctx.mapping(obj, "metadata", "metadata")
    spec = ctx.mapping(obj, "spec", "spec")
    status = ctx.mapping(obj, "status", "status")
    return Node(
        name=ctx.name,
        labels=string_map(ctx, meta, "labels", "metadata.labels"),
        allocatable=ctx.resources(status, "allocatable", "status.allocatable"),
        taints=taints(ctx, ctx.seq(spec, "taints", "spec.taints"), "spec.taints"),
        unschedulable=ctx.boolean(spec, "unschedulable", "spec.unschedulable", False),
        ready=is_ready(ctx, status),
    )


def duration_seconds(text: str) -> int | None:
    """A Go duration (``1h30m``, ``90s``, ``1.5h``) or a whole number of
    seconds, rounded down to whole seconds; None when it is neither, or
    longer than :data:`MAX_DURATION`."""
    text = text.strip()
    if text.isdigit() and len(text) <= 12:
        seconds = Fraction(int(text))
    elif len(text) <= 64 and _GO_DURATION.fullmatch(text):
        seconds = sum(
            (Fraction(n) * _GO_UNIT[u] for n, u in _GO_PART.findall(text)),
            Fraction(0),
        )
    else:
        return None
    return int(seconds) if seconds <= MAX_DURATION else None


def owner_uids(ctx: Ctx, meta: Mapping[str, Any]) -> tuple[str, ...]:
    """UIDs of ``metadata.ownerReferences`` (a Job owns its Workload and
    its pods: that is how a pod's start time reaches its Workload)."""
    out = []
    refs = ctx.seq(meta, "ownerReferences", "metadata.ownerReferences")
    for i, ref in enumerate(refs):
        if isinstance(ref, Mapping):
            uid = ctx.string(ref, "uid", f"metadata.ownerReferences[{i}].uid")
            if uid:
                out.append(uid)
    return tuple(out)


def decode_pod(ctx: Ctx, obj: Mapping[str, Any]) -> Pod:
    meta = ctx.mapping(obj, "metadata", "metadata")
    spec = ctx.mapping(obj, "spec", "spec")
    status = ctx.mapping(obj, "status", "status")
    annotations = string_map(ctx, meta, "annotations", "metadata.annotations")
    labels = string_map(ctx, meta, "labels", "metadata.labels")
    group = annotations.get(POD_GROUP) or labels.get(POD_GROUP)
    return Pod(
        namespace=ctx.namespace,
        name=ctx.name,
        node_name=ctx.string(spec, "nodeName", "spec.nodeName"),
        requests=effective_requests(ctx, spec, "spec"),
        phase=ctx.string(status, "phase", "status.phase", "Pending") or "Pending",
        tas_managed=any(a in annotations for a in TAS_POD_ANNOTATIONS),
        start_time=ctx.timestamp(status.get("startTime"), "status.startTime"),
        created=ctx.timestamp(
            meta.get("creationTimestamp"), "metadata.creationTimestamp"
        ),
        workload=annotations.get(POD_WORKLOAD) or group or None,
        owner_uids=owner_uids(ctx, meta),
    )
