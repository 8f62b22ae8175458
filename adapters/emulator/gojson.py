"""JSON bytes as Go's encoding/json writes them, for kube-scheduler's extender calls.

kube-scheduler marshals Go structs: keys in struct-declaration order, no
spaces, ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, and zero-valued
non-omitempty fields present (``"creationTimestamp":null``, ``"status":{}``).
Objects from its informer cache carry no ``kind``/``apiVersion``. The extender
argument envelopes have no JSON tags, so their keys are the Go field names.

Only the structs that dominate Pod and Node are ordered here; deeper or rarer
structs keep the order the emulator stored (a documented deviation).
"""

from __future__ import annotations

import json
from typing import Any

from placewise.adapters.emulator.quantity import canonical_quantity

JSON = dict[str, Any]
MAP = "$map"  # a Go map: keys sorted
QUANTITIES = "$quantities"  # a ResourceList: sorted, values canonicalised

# struct -> (field order, zero values of non-omitempty fields, child struct per field)
_Struct = tuple[tuple[str, ...], JSON, dict[str, str]]

_COND_POD: _Struct = (
    (
        "type",
        "observedGeneration",
        "status",
        "lastProbeTime",
        "lastTransitionTime",
        "reason",
        "message",
    ),
    {"lastProbeTime": None, "lastTransitionTime": None},
    {},
)
_STRUCTS: dict[str, _Struct] = {
    "Pod": (
        ("kind", "apiVersion", "metadata", "spec", "status"),
        {"metadata": {}, "spec": {}, "status": {}},
        {"metadata": "ObjectMeta", "spec": "PodSpec", "status": "PodStatus"},
    ),
    "Node": (
        ("kind", "apiVersion", "metadata", "spec", "status"),
        {"metadata": {}, "spec": {}, "status": {}},
        {"metadata": "ObjectMeta", "spec": "NodeSpec", "status": "NodeStatus"},
    ),
    "ObjectMeta": (
        (
            "name",
            "generateName",
            "namespace",
            "selfLink",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "ownerReferences",
            "finalizers",
            "managedFields",
        ),
        {"creationTimestamp": None},
        {"labels": MAP, "annotations": MAP},
    ),
    "PodSpec": (
        (
            "volumes",
            "initContainers",
            "containers",
            "ephemeralContainers",
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "dnsPolicy",
            "nodeSelector",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "nodeName",
            "hostNetwork",
            "hostPID",
            "hostIPC",
            "shareProcessNamespace",
            "securityContext",
            "imagePullSecrets",
            "hostname",
            "subdomain",
            "affinity",
            "schedulerName",
            "tolerations",
            "hostAliases",
            "priorityClassName",
            "priority",
            "dnsConfig",
            "readinessGates",
            "runtimeClassName",
            "enableServiceLinks",
            "preemptionPolicy",
            "overhead",
            "topologySpreadConstraints",
            "setHostnameAsFQDN",
            "os",
            "hostUsers",
            "schedulingGates",
            "resourceClaims",
            "resources",
            "hostnameOverride",
            "workloadRef",
            "schedulingGroup",
            "evictionResponders",
        ),
        {"containers": None},
        {
            "initContainers": "Container",
            "containers": "Container",
            "tolerations": "Toleration",
            "nodeSelector": MAP,
            "overhead": QUANTITIES,
        },
    ),
    "Container": (
        (
            "name",
            "image",
            "command",
            "args",
            "workingDir",
            "ports",
            "envFrom",
            "env",
            "resources",
            "resizePolicy",
            "restartPolicy",
            "restartPolicyRules",
            "volumeMounts",
            "volumeDevices",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "imagePullPolicy",
            "securityContext",
            "stdin",
            "stdinOnce",
            "tty",
        ),
        {"name": "", "resources": {}},
        {"resources": "ResourceRequirements"},
    ),
    "ResourceRequirements": (
        ("limits", "requests", "claims"),
        {},
        {"limits": QUANTITIES, "requests": QUANTITIES},
    ),
    "Toleration": (("key", "operator", "value", "effect", "tolerationSeconds"), {}, {}),
    "Taint": (("key", "value", "effect", "timeAdded"), {"key": "", "effect": ""}, {}),
    "PodStatus": (
        (
            "observedGeneration",
            "phase",
            "conditions",
            "message",
            "reason",
            "nominatedNodeName",
            "hostIP",
            "hostIPs",
            "podIP",
            "podIPs",
            "startTime",
            "initContainerStatuses",
            "containerStatuses",
            "qosClass",
            "ephemeralContainerStatuses",
            "resize",
            "resourceClaimStatuses",
            "extendedResourceClaimStatus",
            "allocatedResources",
            "resources",
            "nodeAllocatableResourceClaimStatuses",
            "volumeHealth",
        ),
        {},
        {"conditions": "PodCondition"},
    ),
    "PodCondition": _COND_POD,
    "NodeSpec": (
        (
            "podCIDR",
            "podCIDRs",
            "providerID",
            "unschedulable",
            "taints",
            "configSource",
            "externalID",
            "podPreemptionPolicy",
        ),
        {},
        {"taints": "Taint"},
    ),
    "NodeStatus": (
        (
            "capacity",
            "allocatable",
            "phase",
            "conditions",
            "addresses",
            "daemonEndpoints",
            "nodeInfo",
            "images",
            "volumesInUse",
            "volumesAttached",
            "config",
            "runtimeHandlers",
            "features",
            "declaredFeatures",
        ),
        {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                k: ""
                for k in (
                    "machineID",
                    "systemUUID",
                    "bootID",
                    "kernelVersion",
                    "osImage",
                    "containerRuntimeVersion",
                    "kubeletVersion",
                    "kubeProxyVersion",
                    "operatingSystem",
                    "architecture",
                )
            },
        },
        {
            "conditions": "NodeCondition",
            "capacity": QUANTITIES,
            "allocatable": QUANTITIES,
        },
    ),
    "NodeCondition": (
        (
            "type",
            "status",
            "lastHeartbeatTime",
            "lastTransitionTime",
            "reason",
            "message",
        ),
        {"lastHeartbeatTime": None, "lastTransitionTime": None},
        {},
    ),
}


def go_order(value: JSON, struct: str) -> JSON:
    """Reorder ``value`` as Go marshals ``struct``; unknown keys follow in place."""
    fields, zero, children = _STRUCTS[struct]
    out: JSON = {}
    for name in fields:
        if name in value:
            item = value[name]
        elif name in zero:
            item = json.loads(json.dumps(zero[name]))
        else:
            continue
        child = children.get(name)
        if child == MAP and isinstance(item, dict):
            item = dict(sorted(item.items()))
        elif child == QUANTITIES and isinstance(item, dict):
            item = {k: _quantity(v) for k, v in sorted(item.items())}
        elif child and isinstance(item, dict):
            item = go_order(item, child)
        elif child and isinstance(item, list):
            item = [go_order(x, child) if isinstance(x, dict) else x for x in item]
        out[name] = item
    for name, item in value.items():
        if name not in out:
            out[name] = item
    return out


def _quantity(value: Any) -> Any:
    try:
        return canonical_quantity(value)
    except ValueError:
        return value


def informer_view(obj: JSON, struct: str) -> JSON:
    """An object as kube-scheduler's informer cache holds it: typed, no TypeMeta."""
    return go_order(
        {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}, struct
    )


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def marshal(value: Any) -> bytes:
    """``json.Marshal`` bytes: compact, UTF-8, HTML-safe escapes, integral floats."""
    text = json.dumps(_integral(value), separators=(",", ":"), ensure_ascii=False)
    for raw, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, esc)
    return text.encode("utf-8")


def extender_args(pod: JSON, nodes: list[JSON], node_cache_capable: bool) -> bytes:
    """``ExtenderArgs``: Pod, then Nodes (a NodeList) or NodeNames; the other null."""
    if node_cache_capable:
        names = [str((n.get("metadata") or {}).get("name", "")) for n in nodes]
        body: JSON = {
            "Pod": informer_view(pod, "Pod"),
            "Nodes": None,
            "NodeNames": names,
        }
    else:
        node_list = {"metadata": {}, "items": [informer_view(n, "Node") for n in nodes]}
        body = {"Pod": informer_view(pod, "Pod"), "Nodes": node_list, "NodeNames": None}
    return marshal(body)


def binding_args(pod: JSON, node: str) -> bytes:
    """``ExtenderBindingArgs``: PodName, PodNamespace, PodUID, Node."""
    meta = pod.get("metadata") or {}
    return marshal(
        {
            "PodName": meta.get("name", ""),
            "PodNamespace": meta.get("namespace", ""),
            "PodUID": meta.get("uid", ""),
            "Node": node,
        }
    )


def preemption_args(
    pod: JSON, victims: dict[str, tuple[list[JSON], int]], node_cache_capable: bool
) -> bytes:
    """``ExtenderPreemptionArgs``: exactly one of the two victim maps is non-null."""
    if node_cache_capable:
        meta_map = {
            node: {
                "Pods": [
                    {"UID": (p.get("metadata") or {}).get("uid", "")} for p in pods
                ],
                "NumPDBViolations": pdb,
            }
            for node, (pods, pdb) in sorted(victims.items())
        }
        body: JSON = {
            "Pod": informer_view(pod, "Pod"),
            "NodeNameToVictims": None,
            "NodeNameToMetaVictims": meta_map,
        }
    else:
        full = {
            node: {
                "Pods": [informer_view(p, "Pod") for p in pods],
                "NumPDBViolations": pdb,
            }
            for node, (pods, pdb) in sorted(victims.items())
        }
        body = {
            "Pod": informer_view(pod, "Pod"),
            "NodeNameToVictims": full,
            "NodeNameToMetaVictims": None,
        }
    return marshal(body)


def struct_fields(struct: str) -> tuple[str, ...]:
    """The JSON fields of a Go struct ordered here (empty for the others)."""
    known = _STRUCTS.get(struct)
    return known[0] if known is not None else ()
