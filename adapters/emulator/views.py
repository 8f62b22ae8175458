"""One stored object, several served shapes: core/v1 and events.k8s.io/v1 Events.

The apiserver keeps a single Event storage and converts on the way in and out,
so an event a controller writes as ``events.k8s.io/v1`` is what ``kubectl get
events`` and ``kubectl describe`` read as ``v1``. The emulator stores the core
form (``apiVersion: v1``) and renames the fields the two versions spell
differently, as ``pkg/apis/events/v1`` conversion does; every other field,
known or not, passes through untouched so a round trip loses nothing.
"""

from __future__ import annotations

from typing import Any

from placewise.adapters.emulator.resources import ResourceType

JSON = dict[str, Any]

# (events.k8s.io/v1 field, core/v1 field) for the fields whose names differ.
_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_TO_CORE = dict(_RENAMES)
_TO_EVENTS = {core: ev for ev, core in _RENAMES}
CORE_EVENT_VERSION = "v1"


def is_events_view(rt: ResourceType) -> bool:
    return rt.group == "events.k8s.io" and rt.kind == "Event"


def _renamed(obj: JSON, names: dict[str, str], api_version: str) -> JSON:
    out: JSON = {"apiVersion": api_version, "kind": "Event"}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[names.get(key, key)] = value
    return out


def to_stored(rt: ResourceType, obj: JSON) -> JSON:
    """The storage form of an object written through ``rt``."""
    if is_events_view(rt) and obj.get("apiVersion") != CORE_EVENT_VERSION:
        return _renamed(obj, _TO_CORE, CORE_EVENT_VERSION)
    return obj


def to_served(rt: ResourceType, obj: JSON) -> JSON:
    """``obj`` (storage form) as ``rt`` serves it; the caller still sets apiVersion."""
    if is_events_view(rt) and obj.get("apiVersion") == CORE_EVENT_VERSION:
        return _renamed(obj, _TO_EVENTS, rt.api_version)
    return obj
