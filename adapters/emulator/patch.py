"""The apiserver's three patch types: JSON patch, merge patch, strategic merge.

Strategic merge needs to know, per field, whether a list is merged by a key
(``containers`` by ``name``), merged as a set of primitives (``finalizers``),
or replaced whole (``tolerations``: no merge key in the Go types, so a patch
replaces the list, exactly as a real cluster does). That knowledge lives in the
Go struct tags upstream; here it is a table for the kinds adapters touch.
"""

from __future__ import annotations

import copy
from typing import Any

from placewise.adapters.emulator.errors import ApiError, bad_request, patch_not_applied

JSON = dict[str, Any]

# -- RFC 6902 JSON patch -------------------------------------------------------------


class PatchFailed(Exception):
    """A JSON-patch operation did not apply (mapped to the apiserver's generic 422)."""


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchFailed(f"invalid pointer {pointer!r}")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(token: str, size: int, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return size
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchFailed(f"invalid array index {token!r}")
    idx = int(token)
    if idx > size or (idx == size and not allow_end):
        raise PatchFailed(f"array index {idx} out of range")
    return idx


def _parent(doc: Any, tokens: list[str]) -> Any:
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict):
            if tok not in cur:
                raise PatchFailed(f"missing key {tok!r}")
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_index(tok, len(cur), False)]
        else:
            raise PatchFailed("path traverses a scalar")
    return cur


def _get(doc: Any, pointer: str) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return doc
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"missing key {last!r}")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(last, len(parent), False)]
    raise PatchFailed("path traverses a scalar")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _tokens(pointer)
    if not tokens:
        return value
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(last, len(parent), True), value)
    else:
        raise PatchFailed("path traverses a scalar")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    tokens = _tokens(pointer)
    if not tokens:
        raise PatchFailed("cannot remove the whole document")
    parent, last = _parent(doc, tokens), tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchFailed(f"missing key {last!r}")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(last, len(parent), False))
    raise PatchFailed("path traverses a scalar")


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's ==, ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(
            json_equal(x, y) for x, y in zip(a, b, strict=True)
        )
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def apply_json_patch(doc: JSON, ops: Any) -> JSON:
    """Apply RFC 6902 operations to a copy; malformed is 400, not applicable 422."""
    if not isinstance(ops, list):
        raise bad_request(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
        )
    out: Any = copy.deepcopy(doc)
    try:
        for op in ops:
            if not isinstance(op, dict) or "op" not in op or "path" not in op:
                raise bad_request(
                    "Unexpected kind: missing op or path in JSON patch operation"
                )
            kind, path = op["op"], str(op["path"])
            if kind in ("add", "replace", "test") and "value" not in op:
                raise bad_request(f"Unexpected kind: missing value for {kind}")
            if kind == "add":
                out = _add(out, path, copy.deepcopy(op["value"]))
            elif kind == "remove":
                out, _ = _remove(out, path)
            elif kind == "replace":
                _get(out, path)
                if path == "":
                    out = copy.deepcopy(op["value"])
                else:
                    out, _ = _remove(out, path)
                    out = _add(out, path, copy.deepcopy(op["value"]))
            elif kind == "move":
                src = str(op.get("from", ""))
                if path.startswith(src + "/"):
                    raise PatchFailed("cannot move a value into its own child")
                out, value = _remove(out, src)
                out = _add(out, path, value)
            elif kind == "copy":
                out = _add(out, path, copy.deepcopy(_get(out, str(op.get("from", "")))))
            elif kind == "test":
                if not json_equal(_get(out, path), op["value"]):
                    raise PatchFailed(f"testing value {path} failed")
            else:
                raise bad_request(f"Unexpected kind: {kind}")
    except PatchFailed as exc:
        raise patch_not_applied() from exc
    if not isinstance(out, dict):
        raise patch_not_applied()
    return out


# -- RFC 7386 merge patch ------------------------------------------------------------


def apply_merge_patch(doc: Any, patch: Any) -> Any:
    """JSON merge patch: maps merge recursively, ``null`` deletes, the rest replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = apply_merge_patch(out.get(key), value)
    return out


# -- strategic merge patch ------------------------------------------------------------

# Dotted field paths (list indices dropped) -> merge key; "" marks a primitive list
# merged as a set. Lists absent from the schema are replaced whole (no patchStrategy
# tag upstream, even where the list is a listType=map for server-side apply).
# Checked against kubernetes/api core/v1, policy/v1 and scheduling/v1beta1 tags.
_CONTAINER = {
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}
REPLACE = "$replace"  # a map field whose patchStrategy is replace (PDB selector)
_POD_SPEC = {
    "volumes": "name",
    "initContainers": "name",
    "containers": "name",
    "ephemeralContainers": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "schedulingGates": "name",
    "resourceClaims": "name",
    "topologySpreadConstraints": "topologyKey",
    "evictionResponders": "name",
}
_META = {"ownerReferences": "uid", "finalizers": ""}
_CONDITIONS = {"conditions": "type"}


def _prefixed(prefix: str, table: dict[str, str]) -> dict[str, str]:
    return {f"{prefix}.{k}" if prefix else k: v for k, v in table.items()}


def _pod_spec_at(prefix: str) -> dict[str, str]:
    out = _prefixed(prefix, _POD_SPEC)
    # ObjectMeta's tags hold wherever it is embedded, ephemeral volumes' PVC too.
    out.update(
        _prefixed(f"{prefix}.volumes.ephemeral.volumeClaimTemplate.metadata", _META)
    )
    for containers in ("initContainers", "containers", "ephemeralContainers"):
        out.update(_prefixed(f"{prefix}.{containers}", _CONTAINER))
    return out


def _template(spec_prefix: str) -> dict[str, str]:
    meta = spec_prefix.rsplit(".", 1)[0] + ".metadata"
    return {**_pod_spec_at(spec_prefix), **_prefixed(meta, _META)}


_KIND_SCHEMAS: dict[str, dict[str, str]] = {
    "Pod": {
        **_pod_spec_at("spec"),
        "status.conditions": "type",
        "status.podIPs": "ip",
        "status.hostIPs": "ip",
        "status.resourceClaimStatuses": "name",
        "status.nodeAllocatableResourceClaimStatuses": "resourceClaimName",
    },
    "Node": {
        "spec.podCIDRs": "",
        "status.conditions": "type",
        "status.addresses": "type",
    },
    "Namespace": {"status.conditions": "type"},
    "Service": {"spec.ports": "port", "status.conditions": "type"},
    "PodTemplate": _template("template.spec"),
    "PodDisruptionBudget": {"spec.selector": REPLACE, "status.conditions": "type"},
    "Job": {**_template("spec.template.spec"), "status.conditions": "type"},
    "CronJob": _template("spec.jobTemplate.spec.template.spec"),
    "PodGroup": {
        "spec.resourceClaims": "name",
        "status.conditions": "type",
        "status.resourceClaimStatuses": "name",
    },
}
for _kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
    _KIND_SCHEMAS[_kind] = {
        **_template("spec.template.spec"),
        "status.conditions": "type",
    }


def schema_for(kind: str) -> dict[str, str]:
    return {**_META_AT_ROOT, **_KIND_SCHEMAS.get(kind, {})}


_META_AT_ROOT = _prefixed("metadata", _META)

_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_ORDER = "$setElementOrder/"


def _merge_key_error(key: str) -> ApiError:
    return bad_request(f"map does not contain declared merge key: {key}")


def _merge_map(
    original: JSON, patch: JSON, schema: dict[str, str], path: str
) -> JSON | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    body = {k: v for k, v in patch.items() if k not in ("$patch", "$retainKeys")}
    if directive == "replace":
        replaced: JSON = _strip(body)
        return replaced
    if directive not in (None, "merge"):
        raise bad_request(f"Unknown patch type: {directive} in map: {patch}")
    out = dict(original)
    orders: dict[str, list[Any]] = {}
    for key, value in body.items():
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE) :]
            drop = value if isinstance(value, list) else []
            if isinstance(out.get(name), list):
                out[name] = [v for v in out[name] if v not in drop]
            continue
        if key.startswith(_ORDER):
            orders[key[len(_ORDER) :]] = value if isinstance(value, list) else []
            continue
        sub = f"{path}.{key}" if path else key
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and schema.get(sub) == REPLACE:
            out[key] = _strip(value)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            merged = _merge_map(out[key], value, schema, sub)
            if merged is None:
                out.pop(key, None)
            else:
                out[key] = merged
        elif isinstance(value, list) and schema.get(sub, REPLACE) != REPLACE:
            out[key] = _merge_list(out.get(key), value, schema, sub)
        elif isinstance(value, dict):
            merged = _merge_map({}, value, schema, sub)
            if merged is not None:
                out[key] = merged
        else:
            out[key] = _strip(value)
    for name, order in orders.items():
        out[name] = _apply_order(
            out.get(name), order, schema.get(f"{path}.{name}" if path else name)
        )
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def _strip(value: Any) -> Any:
    """Drop directives from values that are set wholesale."""
    if isinstance(value, dict):
        return {
            k: _strip(v)
            for k, v in value.items()
            if not (
                k.startswith("$")
                and (
                    k in ("$patch", "$retainKeys")
                    or k.startswith((_ORDER, _DELETE_PRIMITIVE))
                )
            )
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _merge_list(
    original: Any, patch: list[Any], schema: dict[str, str], path: str
) -> list[Any]:
    key = schema[path]
    base = list(original) if isinstance(original, list) else []
    if key == "":
        return base + [_strip(v) for v in patch if v not in base]
    if any(
        isinstance(e, dict) and e.get("$patch") == "replace" and len(e) == 1
        for e in patch
    ):
        return [
            _strip(e) for e in patch if not (isinstance(e, dict) and e.get("$patch"))
        ]
    out = base
    for elem in patch:
        if not isinstance(elem, dict):
            raise bad_request(
                f"strategic merge patch of {path}: list elements must be maps"
            )
        if key not in elem:
            raise _merge_key_error(key)
        at = next(
            (
                i
                for i, e in enumerate(out)
                if isinstance(e, dict) and e.get(key) == elem[key]
            ),
            None,
        )
        if elem.get("$patch") == "delete":
            if at is not None:
                out.pop(at)
            continue
        if at is None:
            out.append(_strip({k: v for k, v in elem.items() if k != "$patch"}))
        else:
            merged = _merge_map(out[at], elem, schema, path)
            if merged is None:
                out.pop(at)
            else:
                out[at] = merged
    return out


def _apply_order(items: Any, order: list[Any], key: str | None) -> Any:
    if not isinstance(items, list):
        return items

    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [ident(o) if isinstance(o, dict) else o for o in order]
    ranked = {w: i for i, w in enumerate(wanted) if not isinstance(w, dict | list)}
    return sorted(items, key=lambda it: ranked.get(ident(it), len(ranked)))


def apply_strategic_merge_patch(doc: JSON, patch: Any, kind: str) -> JSON:
    """Strategic merge of ``patch`` into a copy of ``doc`` by ``kind``'s merge keys."""
    if not isinstance(patch, dict):
        raise bad_request(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    merged = _merge_map(copy.deepcopy(doc), patch, schema_for(kind), "")
    return merged if merged is not None else {}


PATCH_TYPES_CRD = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
]
PATCH_TYPES_BUILTIN = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]


def accepted_patch_types(builtin: bool) -> list[str]:
    """What this server applies: no server-side apply (it keeps no managedFields)."""
    listed = PATCH_TYPES_BUILTIN if builtin else PATCH_TYPES_CRD
    return [t for t in listed if t != "application/apply-patch+yaml"]
