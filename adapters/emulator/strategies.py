"""Per-kind create/update rules: what the apiserver's REST strategies and admission do.

These decide what a client observes after a write: status reset on create,
status changes ignored on the main resource when a /status subresource exists
(and the reverse), ``metadata.generation`` bumps on spec changes, pod
defaulting and priority admission, and the pod-update validation that keeps a
bound pod's spec immutable and scheduling gates removable only.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from typing import Any

from placewise.adapters.emulator import errors
from placewise.adapters.emulator.quantity import resource_units
from placewise.adapters.emulator.resources import ResourceType
from placewise.adapters.emulator.store import Store

JSON = dict[str, Any]

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
SYSTEM_PRIORITY_CLASSES: list[JSON] = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "preemptionPolicy": "PreemptLowerPriority",
        "description": "Used for system critical pods that must not be moved from "
        "their current node."
        if "node" in name
        else "Used for system critical pods that must run in the cluster, but can "
        "be moved to another node if necessary.",
    }
    for name, value in (
        ("system-node-critical", 2000001000),
        ("system-cluster-critical", 2000000000),
    )
]
DEFAULT_TOLERATIONS = [
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
]

_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character "
    "(e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
    "'-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
    "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_POD_SPEC_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)

PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")


def rfc3339(ts: float | None = None) -> str:
    return time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if ts is None else ts)
    )


def rfc3339_micro(ts: float | None = None) -> str:
    t = time.time() if ts is None else ts
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"
    )


def validate_name(rt: ResourceType, name: str) -> None:
    if not name:
        raise errors.invalid(
            rt.kind_qualified,
            "",
            [
                (
                    "metadata.name",
                    "FieldValueRequired",
                    "Required value: name or generateName is required",
                )
            ],
        )
    label_only = rt.plural == "namespaces"
    ok = _LABEL.match(name) if label_only else _SUBDOMAIN.match(name)
    rule = _LABEL_MSG if label_only else _SUBDOMAIN_MSG
    if ok is None or len(name) > (63 if label_only else 253):
        raise errors.invalid(
            rt.kind_qualified,
            name,
            [
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    f'Invalid value: "{name}": {rule}',
                )
            ],
        )


def qos_class(pod: JSON) -> str:
    """Guaranteed / Burstable / BestEffort from container requests and limits."""
    containers = list((pod.get("spec") or {}).get("containers") or [])
    containers += list((pod.get("spec") or {}).get("initContainers") or [])
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = (
            resource_units(res.get("requests")),
            resource_units(res.get("limits")),
        )
        if req or lim:
            any_set = True
        for name in ("cpu", "memory"):
            if name not in lim or req.get(name, lim[name]) != lim[name]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod_defaults(rt: ResourceType, pod: JSON, store: Store, strict: bool) -> None:
    spec = pod.setdefault("spec", {})
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            res = c.get("resources") if isinstance(c, dict) else None
            if isinstance(res, dict) and isinstance(res.get("limits"), dict):
                # API defaulting: a request missing for a limited resource equals it.
                requests = res.setdefault("requests", {})
                for name, value in res["limits"].items():
                    requests.setdefault(name, value)
    tolerations = spec.setdefault("tolerations", [])
    for tol in DEFAULT_TOLERATIONS:
        if not any(
            t.get("key") == tol["key"] and t.get("effect") in (None, "", "NoExecute")
            for t in tolerations
        ):
            tolerations.append(dict(tol))
    name = str((pod.get("metadata") or {}).get("name", ""))
    class_name = spec.get("priorityClassName")
    value, policy = 0, "PreemptLowerPriority"
    if class_name:
        pc = store.get(PRIORITY_CLASSES, "", str(class_name))
        if pc is None and strict:
            raise errors.forbidden(
                "pods", "", name, f"no PriorityClass with name {class_name} was found"
            )
    else:
        defaults = [c for c in store.items(PRIORITY_CLASSES) if c.get("globalDefault")]
        pc = max(defaults, key=lambda c: int(c.get("value", 0)), default=None)
        if pc is not None and strict:
            spec["priorityClassName"] = (pc.get("metadata") or {}).get("name")
    if pc is not None:
        value = int(pc.get("value", 0))
        policy = str(pc.get("preemptionPolicy") or policy)
    if strict and spec.get("priority") is not None and spec["priority"] != value:
        raise errors.forbidden(
            "pods",
            "",
            name,
            (
                f"the integer value of priority ({spec['priority']}) must not be "
                f"provided in pod spec; priority admission controller computed {value} "
                "from the given PriorityClass name"
            ),
        )
    spec.setdefault("priority", value)
    spec.setdefault("preemptionPolicy", policy)


def prepare_create(rt: ResourceType, obj: JSON, store: Store, from_api: bool) -> JSON:
    """Fill system metadata and apply the create strategy to ``obj`` (caller-owned).

    Objects loaded from instance files keep their uid, creationTimestamp and
    status (they describe an existing cluster); API creates get fresh ones.
    """
    meta = obj.setdefault("metadata", {})
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    for key in ("resourceVersion", "selfLink"):
        meta.pop(key, None)
    if from_api:
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339()
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            meta.pop(key, None)
    else:
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", rfc3339())
    if rt.generation:
        meta.setdefault("generation", 1)
    if rt.storage == ("", "pods"):
        _pod_defaults(rt, obj, store, strict=from_api)
        # The API resets status on create; a loaded pod keeps what it has.
        status = {} if from_api else dict(obj.get("status") or {})
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", qos_class(obj))
        obj["status"] = status
    elif rt.storage == ("", "namespaces"):
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif from_api and rt.status and rt.storage != ("", "nodes"):
        if rt.builtin:
            obj["status"] = {}
        else:
            obj.pop("status", None)
    return obj


_SYSTEM_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def prepare_update(
    rt: ResourceType, old: JSON, new: JSON, subresource: str | None
) -> JSON:
    """Merge an incoming object with the stored one, as the update strategy does."""
    new["apiVersion"], new["kind"] = rt.api_version, rt.kind
    if rt.status and subresource == "status":
        if rt.builtin:
            status = new.get("status")
            merged = {k: v for k, v in old.items() if k not in ("metadata", "status")}
            merged.update(
                {
                    "apiVersion": rt.api_version,
                    "kind": rt.kind,
                    "metadata": new.get("metadata") or {},
                }
            )
            if status is not None:
                merged["status"] = status
            new = merged
        else:
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = new["status"]
            else:
                merged.pop("status", None)
            new = merged
    elif rt.status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    meta = new.setdefault("metadata", {})
    old_meta = old.get("metadata") or {}
    for key in _SYSTEM_META:
        if key in old_meta:
            meta[key] = old_meta[key]
        else:
            meta.pop(key, None)
    meta["name"] = old_meta.get("name")
    if old_meta.get("namespace"):
        meta["namespace"] = old_meta["namespace"]
    if rt.generation and _spec_changed(rt, old, new):
        meta["generation"] = int(old_meta.get("generation") or 0) + 1
    return new


def _spec_changed(rt: ResourceType, old: JSON, new: JSON) -> bool:
    skip = {"metadata", "status"} if rt.status else {"metadata"}
    keys = (set(old) | set(new)) - skip
    return any(old.get(k) != new.get(k) for k in keys)


def validate_update(rt: ResourceType, old: JSON, new: JSON) -> None:
    if rt.storage == ("", "pods"):
        _validate_pod_update(rt, old, new)


def _gate_names(spec: JSON) -> list[str]:
    return [
        str(g.get("name"))
        for g in spec.get("schedulingGates") or []
        if isinstance(g, dict)
    ]


def _comparable_pod_spec(spec: JSON, gated: bool) -> JSON:
    out = copy.deepcopy(spec)
    for key in (
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ):
        out.pop(key, None)
    for group in ("containers", "initContainers"):
        for c in out.get(group) or []:
            if isinstance(c, dict):
                c.pop("image", None)
    if gated:
        out.pop("nodeSelector", None)
        out.pop("affinity", None)
    return out


def _validate_pod_update(rt: ResourceType, old: JSON, new: JSON) -> None:
    name = str((old.get("metadata") or {}).get("name", ""))
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    old_gates = _gate_names(old_spec)
    added = [g for g in _gate_names(new_spec) if g not in old_gates]
    if added:
        raise errors.invalid(
            rt.kind_qualified,
            name,
            [
                (
                    "spec.schedulingGates",
                    "FieldValueForbidden",
                    "Forbidden: only deletion is allowed, but found new scheduling "
                    f"gate '{added[0]}'",
                )
            ],
        )
    gated = bool(old_gates)
    if gated:
        old_sel, new_sel = (
            old_spec.get("nodeSelector") or {},
            new_spec.get("nodeSelector") or {},
        )
        if any(new_sel.get(k) != v for k, v in old_sel.items()):
            raise errors.invalid(
                rt.kind_qualified,
                name,
                [
                    (
                        "spec.nodeSelector",
                        "FieldValueInvalid",
                        "Invalid value: only additions to spec.nodeSelector are "
                        "allowed (no mutations or deletions)",
                    )
                ],
            )
    old_tol, new_tol = (
        old_spec.get("tolerations") or [],
        new_spec.get("tolerations") or [],
    )
    spec_same = _comparable_pod_spec(old_spec, gated) == _comparable_pod_spec(
        new_spec, gated
    )
    if not spec_same or any(t not in new_tol for t in old_tol):
        raise errors.invalid(
            rt.kind_qualified,
            name,
            [("spec", "FieldValueForbidden", f"Forbidden: {_POD_SPEC_FORBIDDEN}")],
        )
