"""kube-scheduler's extender wire types, read strictly and written exactly.

``k8s.io/kube-scheduler/extender/v1`` structs carry no json tags, so the keys
are the capitalized Go field names, in struct order, ``null`` for unset
pointers (cluster-protocols §1.2).  Keys are matched as Go's decoder does
(exact, else case-insensitive).  Values are checked as Go's decoder would
check them against the struct types, and rejected with the field's path:
any client can POST here, and a string where an object belongs must be a
clear refusal, not an exception halfway through a decision.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
MAX_DEPTH = 100
"""Deepest nesting accepted.  Kubernetes objects (managedFields included)
stay under 30 levels; Go's decoder stops at 10,000, but Python's parser and
encoder recurse, so the limit here is ours and explicit."""


class BadRequest(ValueError):
    """A body kube-scheduler would never send: not JSON, or the wrong shape."""


@dataclass(frozen=True)
class ExtenderArgs:
    """``ExtenderArgs`` (filter, prioritize) and ``ExtenderPreemptionArgs``."""

    pod: JSON
    namespace: str
    name: str
    node_names: list[str] | None
    """Set when the scheduler is ``nodeCacheCapable``."""
    nodes: list[JSON] | None
    """``Nodes.items`` otherwise; echoed back in the same shape."""
    offered: frozenset[str] = frozenset()
    """Preemption: the nodes of ``NodeNameTo(Meta)Victims``."""

    @property
    def candidates(self) -> list[str]:
        if self.node_names is not None:
            return self.node_names
        return [str(n["metadata"]["name"]) for n in self.nodes or []]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class BindingArgs:
    """``ExtenderBindingArgs``."""

    name: str
    namespace: str
    uid: str
    node: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def field(doc: JSON, name: str) -> Any:
    """A struct field as Go's decoder finds it: exact, else case-insensitive."""
    if name in doc:
        return doc[name]
    low = name.lower()
    return next((v for k, v in doc.items() if k.lower() == low), None)


_NAMES: dict[type, str] = {dict: "object", list: "array", str: "string"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return _NAMES.get(type(value), "number")


def _typed(doc: JSON, name: str, want: type, where: str) -> Any:
    value = field(doc, name)
    if value is not None and not isinstance(value, want):
        raise BadRequest(f"{where}{name}: expected {_NAMES[want]}, got {_kind(value)}")
    return value


def _string(doc: JSON, name: str, where: str, required: bool = False) -> str:
    value = _typed(doc, name, str, where)
    if required and not value:
        raise BadRequest(f"{where}{name}: required")
    return value or ""


def _too_deep(doc: Any) -> bool:
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values() if v and _nests(v))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if v and _nests(v))
    return False


def _nests(value: Any) -> bool:
    return isinstance(value, dict | list)


def decode(body: bytes) -> JSON:
    """The body as a JSON object, or BadRequest saying why not."""
    try:
        doc = json.loads(body)
    except RecursionError:
        raise BadRequest(f"JSON nested deeper than {MAX_DEPTH}") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise BadRequest(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise BadRequest(f"expected a JSON object, got {_kind(doc)}")
    if _too_deep(doc):
        raise BadRequest(f"JSON nested deeper than {MAX_DEPTH}")
    return doc


def _pod(doc: JSON) -> tuple[JSON, str, str]:
    pod = _typed(doc, "Pod", dict, "")
    if pod is None:
        raise BadRequest("Pod: required")
    meta = pod.get("metadata")
    if not isinstance(meta, dict):
        raise BadRequest(f"Pod.metadata: expected object, got {_kind(meta)}")
    name = _string(meta, "name", "Pod.metadata.", required=True)
    namespace = _string(meta, "namespace", "Pod.metadata.") or "default"
    _string(meta, "uid", "Pod.metadata.")
    return pod, namespace, name


def _node_names(doc: JSON) -> list[str] | None:
    names = _typed(doc, "NodeNames", list, "")
    if names is None:
        return None
    for i, n in enumerate(names):
        if not isinstance(n, str):
            raise BadRequest(f"NodeNames[{i}]: expected string, got {_kind(n)}")
    return list(names)


def _nodes(doc: JSON) -> list[JSON] | None:
    nodes = _typed(doc, "Nodes", dict, "")
    if nodes is None:
        return None
    items = _typed(nodes, "items", list, "Nodes.") or []
    for i, n in enumerate(items):
        meta = n.get("metadata") if isinstance(n, dict) else None
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str):
            raise BadRequest(f"Nodes.items[{i}]: expected a Node with metadata.name")
    return list(items)


def extender_args(body: bytes) -> ExtenderArgs:
    """Filter and prioritize requests."""
    doc = decode(body)
    pod, namespace, name = _pod(doc)
    return ExtenderArgs(pod, namespace, name, _node_names(doc), _nodes(doc))


def preemption_args(body: bytes) -> ExtenderArgs:
    doc = decode(body)
    pod, namespace, name = _pod(doc)
    offered: set[str] = set()
    for key in ("NodeNameToMetaVictims", "NodeNameToVictims"):
        victims = _typed(doc, key, dict, "") or {}
        for node, v in victims.items():
            if v is not None and not isinstance(v, dict):
                raise BadRequest(f"{key}.{node}: expected object, got {_kind(v)}")
            _typed(v or {}, "Pods", list, f"{key}.{node}.")
        offered |= set(victims)
    return ExtenderArgs(pod, namespace, name, None, None, frozenset(offered))


def binding_args(body: bytes) -> BindingArgs:
    doc = decode(body)
    return BindingArgs(
        name=_string(doc, "PodName", "", required=True),
        namespace=_string(doc, "PodNamespace", "", required=True),
        uid=_string(doc, "PodUID", ""),
        node=_string(doc, "Node", "", required=True),
    )


_GO_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def marshal(value: Any) -> bytes:
    """Go's ``json.Marshal``: compact, UTF-8, HTML-safe escapes, struct order as
    built (callers sort map keys, as Go does)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, esc in _GO_ESCAPES:
        text = text.replace(raw, esc)
    return text.encode()


def filter_result(
    args: ExtenderArgs | None,
    survivors: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
    error: str = "",
) -> bytes:
    """``ExtenderFilterResult`` in the shape the request used (names or Nodes)."""
    if args is not None and args.node_names is None and args.nodes is not None:
        keep = set(survivors)
        items = [n for n in args.nodes if n["metadata"]["name"] in keep]
        nodes: JSON | None = {"metadata": {}, "items": items}
        names = None
    else:
        nodes, names = None, survivors
    return marshal(
        {
            "Nodes": nodes,
            "NodeNames": names,
            "FailedNodes": dict(sorted(failed.items())),
            "FailedAndUnresolvableNodes": dict(sorted(unresolvable.items())),
            "Error": error,
        }
    )
