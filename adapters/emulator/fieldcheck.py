"""Server-side field validation: the ``fieldValidation`` query parameter.

The OpenAPI documents tell kubectl this server validates fields, so kubectl
skips its own schema check and sends ``fieldValidation=Strict``; a typo in a
manifest must then fail here, as a real apiserver's strict decoding fails it.
Unknown fields are found by walking the object against the same schemas
``/openapi/v3`` serves. ``Strict`` refuses the write (400 for a body, 422 for
the result of a patch, as ``handlers/create.go`` and ``patch.go`` answer),
``Warn`` (the default) answers with ``Warning`` headers, ``Ignore`` does
nothing. Custom resources preserve unknown fields, so nothing is unknown there.
"""

from __future__ import annotations

import json
from typing import Any

from placewise.adapters.emulator import errors
from placewise.adapters.emulator.openapi import PRESERVE, REF, OpenApi
from placewise.adapters.emulator.resources import ResourceType

JSON = dict[str, Any]
DIRECTIVES = ("Ignore", "Warn", "Strict")


def directive(query: dict[str, str]) -> str:
    """The request's directive; unset means Warn, anything unknown is a 400."""
    value = query.get("fieldValidation", "")
    if value == "":
        return "Warn"
    if value not in DIRECTIVES:
        raise errors.bad_request(
            f'fieldValidation: Unsupported value: "{value}": supported values: '
            '"", "Ignore", "Strict", "Warn"'
        )
    return value


def _resolve(schemas: dict[str, JSON], schema: JSON) -> JSON:
    for _ in range(64):  # refs chain through allOf wrappers, never in a loop
        if schema.get("allOf"):
            schema = schema["allOf"][0]
        elif "$ref" in schema:
            schema = schemas.get(str(schema["$ref"])[len(REF) :], {PRESERVE: True})
        else:
            return schema
    return {PRESERVE: True}


def _walk(
    schemas: dict[str, JSON], schema: JSON, value: Any, path: str, out: list[str]
) -> None:
    schema = _resolve(schemas, schema)
    if isinstance(value, dict):
        props = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, sub in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(props, dict) and key in props:
                _walk(schemas, props[key], sub, where, out)
            elif isinstance(extra, dict):
                _walk(schemas, extra, sub, where, out)
            elif isinstance(props, dict) and not schema.get(PRESERVE):
                out.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _walk(schemas, schema["items"], item, f"{path}[{i}]", out)


def unknown_fields(api: OpenApi, rt: ResourceType, obj: Any) -> list[str]:
    """Dotted paths (``spec.containers[0].imagee``) of fields ``rt`` does not have."""
    name, schemas = api.schema_of(rt)
    if not name:
        return []
    out: list[str] = []
    _walk(schemas, {"$ref": REF + name}, obj, "", out)
    return out


def _strict_text(fields: list[str]) -> str:
    return "strict decoding error: " + ", ".join(f'unknown field "{f}"' for f in fields)


def warning_header(fields: list[str]) -> dict[str, str]:
    """One ``299`` warning per field, joined as an HTTP list."""
    if not fields:
        return {}
    texts = [json.dumps(f'unknown field "{f}"') for f in fields]
    return {"Warning": ", ".join(f"299 - {t}" for t in texts)}


def check_body(api: OpenApi, rt: ResourceType, body: Any, mode: str) -> dict[str, str]:
    """Validate a create/update body; the response headers to add (Warn)."""
    if mode == "Ignore" or not isinstance(body, dict):
        return {}
    fields = unknown_fields(api, rt, body)
    if fields and mode == "Strict":
        kind = str(body.get("kind") or rt.kind)
        version = str(body.get("apiVersion") or rt.api_version).rpartition("/")[2]
        raise errors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {rt.kind}: '
            + _strict_text(fields)
        )
    return warning_header(fields)


def check_patched(
    api: OpenApi, rt: ResourceType, patch_body: Any, result: JSON, mode: str
) -> dict[str, str]:
    """Validate a patch's result; Strict failures are 422 on the ``patch`` field."""
    if mode == "Ignore":
        return {}
    fields = unknown_fields(api, rt, result)
    if fields and mode == "Strict":
        shown = json.dumps(patch_body, separators=(",", ":"), sort_keys=True)
        raise errors.invalid(
            "",
            "",
            [
                (
                    "patch",
                    "FieldValueInvalid",
                    f"Invalid value: {json.dumps(shown)}: {_strict_text(fields)}",
                )
            ],
        )
    return warning_header(fields)
