"""Content negotiation for the meta.k8s.io conversions a GET may ask for.

``kubectl get`` sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io,
...,application/json`` and prints the columns it gets back; controllers ask for
``PartialObjectMetadata(List)``. The server answers the first conversion it
supports, the plain object for a plain media type, and 406 when every
alternative is a conversion it cannot do. Table rows carry the object as
``includeObject`` says (default: its metadata only), and a Table watch sends
the column definitions with the first event only, as ``watchEmbeddedEncoder``
does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placewise.adapters.emulator import crd_columns, errors, listing, printers
from placewise.adapters.emulator.registry import Registry
from placewise.adapters.emulator.resources import ResourceType

JSON = dict[str, Any]
META_GROUP = "meta.k8s.io"
_VERSIONS = ("v1", "v1beta1")
_PLAIN_TYPES = ("application/json", "application/*", "*/*")
_ROW_COMPLETED = {
    "Succeeded": "The pod has completed successfully.",
    "Failed": "The pod failed.",
}


@dataclass(frozen=True)
class Target:
    """The conversion a request asked for: Table or PartialObjectMetadata[List]."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def not_acceptable() -> errors.ApiError:
    return errors.ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, "
        "application/json;as=Table;v=v1;g=meta.k8s.io, "
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, "
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    )


def negotiate(accept: str | None, mode: str) -> Target | None:
    """The conversion to serve for ``mode`` ("list", "get" or "watch"), None = plain.

    A clause without ``as=`` is answered with the plain object (the emulator
    speaks JSON only, as before); clauses are taken in the order sent.
    """
    if not accept or not accept.strip():
        return None
    partial = "PartialObjectMetadataList" if mode == "list" else "PartialObjectMetadata"
    for clause in accept.split(","):
        parts = [p.strip() for p in clause.split(";")]
        params = {}
        for p in parts[1:]:
            key, _, value = p.partition("=")
            params[key.strip()] = value.strip()
        as_kind = params.get("as")
        if as_kind is None:
            return None
        if (
            parts[0].lower() in _PLAIN_TYPES
            and params.get("g") == META_GROUP
            and params.get("v") in _VERSIONS
            and as_kind in ("Table", partial)
        ):
            return Target(as_kind, params["v"])
    raise not_acceptable()


def _partial(obj: JSON, target: Target) -> JSON:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": target.api_version,
        "metadata": obj.get("metadata") or {},
    }


def _include(query: dict[str, str]) -> str:
    include = query.get("includeObject", "") or "Metadata"
    if include not in ("None", "Metadata", "Object"):
        raise errors.bad_request(f'unrecognized includeObject value: "{include}"')
    return include


class Renderer:
    """Turns stored objects into the negotiated form for one request."""

    def __init__(
        self, reg: Registry, rt: ResourceType, target: Target, query: dict[str, str]
    ) -> None:
        self.reg, self.rt, self.target = reg, rt, target
        self.include = _include(query) if target.kind == "Table" else "Metadata"
        self.printer = printer_for(rt)
        self.headers = True
        self.now: Callable[[], float] = time.time

    def _row(self, obj: JSON, now: float) -> JSON:
        row: JSON = {"cells": self.printer.cells(obj, now)}
        phase = (obj.get("status") or {}).get("phase")
        if self.rt.storage == ("", "pods") and phase in _ROW_COMPLETED:
            row["conditions"] = [
                {
                    "type": "Completed",
                    "status": "True",
                    "reason": phase,
                    "message": _ROW_COMPLETED[phase],
                }
            ]
        if self.include == "Object":
            row["object"] = self.reg.present(self.rt, obj)
        elif self.include == "Metadata":
            row["object"] = _partial(obj, self.target)
        else:
            row["object"] = None
        return row

    def table(self, items: list[JSON], meta: JSON) -> JSON:
        """A Table of ``items``; column definitions only while ``headers`` holds."""
        now = self.now()
        columns = [c.definition() for c in self.printer.columns]
        return {
            "kind": "Table",
            "apiVersion": self.target.api_version,
            "metadata": meta,
            "columnDefinitions": columns if self.headers else None,
            "rows": [self._row(obj, now) for obj in items],
        }

    def one(self, obj: JSON) -> JSON:
        meta = {
            "resourceVersion": str((obj.get("metadata") or {}).get("resourceVersion"))
        }
        if self.target.kind == "Table":
            return self.table([obj], meta)
        return _partial(obj, self.target)

    def many(self, items: list[JSON], meta: JSON) -> JSON:
        if self.target.kind == "Table":
            return self.table(items, meta)
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": self.target.api_version,
            "metadata": meta,
            "items": [_partial(obj, self.target) for obj in items],
        }

    def watch_event(self, obj: JSON) -> JSON:
        """One watch event's object; later Table events omit the headers."""
        out = self.one(obj)
        self.headers = False
        return out


def printer_for(rt: ResourceType) -> printers.Printer:
    """The built-in printer, else the CRD's printer columns."""
    builtin = printers.BUILTIN.get((rt.group, rt.kind))
    return builtin if builtin is not None and rt.builtin else crd_columns.printer(rt)


def _stored(rt: ResourceType, obj: JSON, in_list: bool = False) -> JSON:
    return obj


def render_list(
    reg: Registry,
    rt: ResourceType,
    namespace: str | None,
    query: dict[str, str],
    target: Target,
) -> JSON:
    renderer = Renderer(reg, rt, target, query)
    listed = listing.list_objects(reg.store, rt, namespace, query, _stored)
    return renderer.many(listed["items"], listed["metadata"])


def render_get(
    reg: Registry,
    rt: ResourceType,
    namespace: str,
    name: str,
    query: dict[str, str],
    target: Target,
) -> JSON:
    return Renderer(reg, rt, target, query).one(reg.require(rt, namespace, name))
