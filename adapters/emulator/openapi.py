"""OpenAPI v3 documents for the resources the emulator serves.

kubectl reads ``/openapi/v3`` (an index of group-versions) and one document
per group-version: to decide that the server validates fields itself
(``fieldValidation`` on the PATCH operation of the kind's path), to compute a
client-side apply's strategic merge patch (``x-kubernetes-patch-strategy`` /
``-merge-key`` on the kind's schema, found by ``x-kubernetes-group-version-kind``)
and for ``kubectl explain``. Nothing is written by hand: the schemas of
built-in kinds come from the models of the official ``kubernetes`` client
(field names, types, descriptions, required fields), the strategic-merge
metadata from the one table the emulator's own patching uses
(``patch.schema_for``), so what kubectl computes is what the server applies.
Custom resources get what a CRD without a structural schema would: typed
metadata and ``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import threading
import typing
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s_client

from placewise.adapters.emulator import gojson, patch
from placewise.adapters.emulator.resources import ResourceTable, ResourceType

JSON = dict[str, Any]
REF = "#/components/schemas/"
PRESERVE = "x-kubernetes-preserve-unknown-fields"
GVK = "x-kubernetes-group-version-kind"

_PRIMITIVES: dict[str, JSON] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
    # IntOrString, RawExtension, JSON: anything goes, nothing below is checked.
    "object": {PRESERVE: True},
}
_MODEL_NAME = re.compile(r"^([A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def _pascal(text: str) -> str:
    return text[:1].upper() + text[1:]


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def model_for(rt: ResourceType) -> type | None:
    """The client's model class for a built-in row, from its API class's read method.

    ``CoreV1Api.read_namespaced_pod`` returns ``V1Pod``: the API class pins the
    group, so same-named kinds of other groups cannot be confused.
    """
    if not rt.builtin:
        return None
    group = rt.group.split(".")[0] if rt.group else "core"
    api = getattr(k8s_client, f"{_pascal(group)}{_pascal(rt.version)}Api", None)
    scope = "namespaced_" if rt.namespaced else ""
    method = getattr(api, f"read_{scope}{_snake(rt.kind)}", None)
    if method is None:
        return None
    hint = typing.get_type_hints(method).get("return")
    return hint if inspect.isclass(hint) else None


def definition_name(model: type) -> str:
    """``V1PodSpec`` -> ``io.k8s.api.v1.PodSpec`` (explain shows the last part)."""
    m = _MODEL_NAME.match(model.__name__)
    if m is None:
        return f"io.k8s.api.{model.__name__}"
    prefix = f"{m.group(1).lower()}." if m.group(1) else ""
    return f"io.k8s.api.{prefix}{m.group(2).lower()}.{m.group(3)}"


def _description(model: type, attr: str) -> str:
    fields = getattr(model, "model_fields", {})
    info = fields.get(attr)
    return str(getattr(info, "description", "") or "")


def _required(model: type) -> list[str]:
    fields = getattr(model, "model_fields", {})
    names = getattr(model, "attribute_map", {})
    return sorted(
        names[attr]
        for attr, info in fields.items()
        if attr in names and info.is_required()
    )


@dataclass
class _Builder:
    """Collects the component schemas reachable from the models it is given."""

    schemas: dict[str, JSON] = field(default_factory=dict)

    def type_schema(self, type_name: str) -> JSON:
        list_m = re.match(r"^List\[(.+)\]$", type_name)
        if list_m:
            return {"type": "array", "items": self.type_schema(list_m.group(1))}
        dict_m = re.match(r"^Dict\[str, (.+)\]$", type_name)
        if dict_m:
            values = self.type_schema(dict_m.group(1))
            return {"type": "object", "additionalProperties": values}
        if type_name in _PRIMITIVES:
            return dict(_PRIMITIVES[type_name])
        model = getattr(k8s_client.models, type_name, None)
        if not inspect.isclass(model) or not hasattr(model, "openapi_types"):
            return {PRESERVE: True}
        return {"allOf": [{"$ref": REF + self.model(model)}]}

    def model(self, model: type) -> str:
        """Add ``model`` and everything it refers to (each once); its name."""
        name = definition_name(model)
        if name in self.schemas:
            return name
        schema: JSON = {
            "type": "object",
            "description": inspect.cleandoc(model.__doc__ or "").split("\n")[0],
            "properties": {},
        }
        required = _required(model)
        if required:
            schema["required"] = required
        self.schemas[name] = schema
        types: dict[str, str] = getattr(model, "openapi_types", {})
        names: dict[str, str] = getattr(model, "attribute_map", {})
        for attr, type_name in types.items():
            prop = self.type_schema(type_name)
            doc = _description(model, attr)
            if doc:
                prop["description"] = doc
            schema["properties"][names.get(attr, attr)] = prop
        for extra in gojson.struct_fields(name.rpartition(".")[2]):
            # Fields of the Kubernetes versions the emulator also speaks (1.35's
            # PodSpec.workloadRef) that this client release no longer models.
            schema["properties"].setdefault(extra, {PRESERVE: True})
        return name

    def annotate(self, name: str, path: str, merge: dict[str, str]) -> None:
        """Put the merge metadata of ``merge`` (dotted paths) on the definitions.

        Upstream the tags sit on Go struct fields, so a definition shared by
        several kinds (PodSpec in Pod and Job) carries the union of their paths.
        """
        for json_name, prop in self.schemas[name]["properties"].items():
            sub = f"{path}.{json_name}" if path else json_name
            if sub in merge:
                _annotate(prop, merge[sub])
            if not any(k.startswith(sub + ".") for k in merge):
                continue
            inner = prop.get("items") or prop
            for ref in inner.get("allOf") or []:
                self.annotate(str(ref["$ref"])[len(REF) :], sub, merge)


def _annotate(prop: JSON, key: str) -> None:
    """The struct tags as OpenAPI extensions (``patch.REPLACE`` is a replace map)."""
    if key == patch.REPLACE:
        prop["x-kubernetes-patch-strategy"] = "replace"
        return
    prop["x-kubernetes-patch-strategy"] = "merge"
    if key:
        prop["x-kubernetes-patch-merge-key"] = key


def _ref(name: str) -> JSON:
    return {"$ref": REF + name}


def _gvk(rt: ResourceType, kind: str | None = None) -> JSON:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


def _param(name: str, where: str = "query", required: bool = False) -> JSON:
    out: JSON = {"name": name, "in": where, "schema": {"type": "string"}}
    if required:
        out["required"] = True
    return out


_WRITE_PARAMS = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation")]
_LIST_PARAMS = [
    _param(p)
    for p in (
        "allowWatchBookmarks",
        "continue",
        "fieldSelector",
        "labelSelector",
        "limit",
        "resourceVersion",
        "resourceVersionMatch",
        "sendInitialEvents",
        "timeoutSeconds",
        "watch",
    )
]


def _op(rt: ResourceType, action: str, response: str, **extra: Any) -> JSON:
    op: JSON = {
        "operationId": f"{action}{_pascal(rt.version)}{rt.kind}",
        "x-kubernetes-action": action,
        GVK: _gvk(rt),
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": _ref(response)}},
            }
        },
    }
    op.update(extra)
    return op


def _body(name: str, types: list[str]) -> JSON:
    return {"content": {t: {"schema": _ref(name)} for t in types}, "required": True}


class OpenApi:
    """Builds (and caches until the resource table grows) the v3 documents."""

    def __init__(self, table: ResourceTable) -> None:
        self.table = table
        self._lock = threading.Lock()
        self._docs: dict[str, JSON] = {}
        self._kinds: dict[ResourceType, tuple[str, dict[str, JSON]]] = {}
        self._rows: tuple[ResourceType, ...] = ()

    def _group_versions(self) -> dict[str, list[ResourceType]]:
        rows = tuple(self.table.snapshot())
        with self._lock:
            if rows != self._rows:
                self._rows, self._docs, self._kinds = rows, {}, {}
        out: dict[str, list[ResourceType]] = {}
        for row in rows:
            key = f"apis/{row.group}/{row.version}" if row.group else "api/v1"
            out.setdefault(key, []).append(row)
        return out

    def index(self) -> JSON:
        """``/openapi/v3``: each group-version's document, addressed by its hash."""
        paths = {}
        for key in self._group_versions():
            digest = hashlib.sha512(
                json.dumps(self.document(key), sort_keys=True).encode()
            ).hexdigest()[:64]
            url = f"/openapi/v3/{key}?hash={digest.upper()}"
            paths[key] = {"serverRelativeURL": url}
        return {"paths": paths}

    def document(self, key: str) -> JSON | None:
        """``/openapi/v3/api/v1`` or ``/openapi/v3/apis/{group}/{version}``."""
        rows = self._group_versions().get(key)
        if rows is None:
            return None
        with self._lock:
            doc = self._docs.get(key)
        if doc is None:
            doc = _document(rows)
            with self._lock:
                self._docs[key] = doc
        return doc

    def schema_of(self, rt: ResourceType) -> tuple[str, dict[str, JSON]]:
        """The kind's component name and the components to resolve it against."""
        key = f"apis/{rt.group}/{rt.version}" if rt.group else "api/v1"
        doc = self.document(key) or {}
        with self._lock:
            known = self._kinds.get(rt)
        if known is not None:
            return known
        schemas: dict[str, JSON] = (doc.get("components") or {}).get("schemas") or {}
        found = next((n for n, s in schemas.items() if _gvk(rt) in s.get(GVK, [])), "")
        with self._lock:
            self._kinds[rt] = (found, schemas)
        return found, schemas


def _kind_schema(builder: _Builder, rt: ResourceType) -> str:
    model = model_for(rt)
    if model is not None:
        name = builder.model(model)
        builder.annotate(name, "", patch.schema_for(rt.kind))
    else:
        meta = builder.model(k8s_client.V1ObjectMeta)
        builder.annotate(meta, "metadata", patch.schema_for(""))
        if rt.builtin:
            name = f"io.k8s.api.{rt.group or 'core'}.{rt.version}.{rt.kind}"
        else:  # as the apiextensions server names a CRD's schema
            reverse = ".".join(reversed(rt.group.split(".")))
            name = f"{reverse}.{rt.version}.{rt.kind}"
        builder.schemas[name] = {
            "type": "object",
            "description": f"{rt.kind} ({rt.api_version}); fields are not checked.",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"allOf": [_ref(meta)]},
            },
            PRESERVE: True,
        }
    builder.schemas[name][GVK] = [_gvk(rt)]
    return name


def _document(rows: list[ResourceType]) -> JSON:
    builder = _Builder()
    status = builder.model(k8s_client.V1Status)
    delete_opts = builder.model(k8s_client.V1DeleteOptions)
    list_meta = builder.model(k8s_client.V1ListMeta)
    paths: dict[str, JSON] = {}
    for rt in rows:
        kind = _kind_schema(builder, rt)
        list_name = f"{kind}List"
        builder.schemas[list_name] = {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"allOf": [_ref(list_meta)]},
                "items": {"type": "array", "items": {"allOf": [_ref(kind)]}},
            },
            "required": ["items"],
            GVK: [_gvk(rt, rt.list_kind)],
        }
        base = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
        ns_params = [_param("namespace", "path", True)] if rt.namespaced else []
        scope = "/namespaces/{namespace}" if rt.namespaced else ""
        collection = f"{base}{scope}/{rt.plural}"
        ptypes = patch.accepted_patch_types(rt.builtin)
        paths[collection] = {
            "parameters": ns_params,
            "get": _op(rt, "list", list_name, parameters=_LIST_PARAMS),
            "post": _op(
                rt,
                "post",
                kind,
                parameters=_WRITE_PARAMS,
                requestBody=_body(kind, ["application/json", "application/yaml"]),
            ),
            "delete": _op(rt, "deletecollection", status, parameters=_LIST_PARAMS),
        }
        item = {
            "get": _op(rt, "get", kind),
            "put": _op(
                rt,
                "put",
                kind,
                parameters=_WRITE_PARAMS,
                requestBody=_body(kind, ["application/json", "application/yaml"]),
            ),
            "patch": _op(
                rt,
                "patch",
                kind,
                parameters=[*_WRITE_PARAMS, _param("force")],
                requestBody=_body(kind, ptypes),
            ),
        }
        paths[f"{collection}/{{name}}"] = {
            "parameters": [_param("name", "path", True), *ns_params],
            **item,
            "delete": _op(
                rt,
                "delete",
                status,
                requestBody=_body(delete_opts, ["application/json"]),
            ),
        }
        if "status" in rt.subresources:
            paths[f"{collection}/{{name}}/status"] = {
                "parameters": [_param("name", "path", True), *ns_params],
                **item,
            }
        if rt.namespaced:
            paths[f"{base}/{rt.plural}"] = {
                "get": _op(rt, "list", list_name, parameters=_LIST_PARAMS)
            }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": builder.schemas},
    }
