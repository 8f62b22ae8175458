"""Watch streams: the event sequence a reflector sees, independent of HTTP.

A watch from resourceVersion N replays every event after N from the
resource's history window, then follows live writes. An RV that fell out of
the window gets a single ``ERROR`` event carrying a 410 ``Expired`` Status
(HTTP status stays 200, as the watch cache answers). Objects entering or
leaving the selector surface as ADDED / DELETED. Bookmarks carry the revision
the stream is caught up to.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from placewise.adapters.emulator import errors
from placewise.adapters.emulator.faults import Faults, WatchFault
from placewise.adapters.emulator.registry import Registry
from placewise.adapters.emulator.resources import ResourceType
from placewise.adapters.emulator.selectors import (
    Predicate,
    parse_field_selector,
    parse_label_selector,
    predicate,
)
from placewise.adapters.emulator.store import Event

JSON = dict[str, Any]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class WatchDropped(Exception):
    """The stream must be cut abruptly (an injected connection drop)."""


@dataclass
class WatchPlan:
    rt: ResourceType
    namespace: str | None
    match: Predicate
    cursor: int
    initial: bool
    initial_end_bookmark: bool
    bookmarks: bool
    timeout: float
    fault: WatchFault


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


def plan_watch(
    reg: Registry,
    rt: ResourceType,
    namespace: str | None,
    query: dict[str, str],
    faults: Faults,
    default_timeout: float,
) -> WatchPlan:
    """Validate a watch request; ApiError is raised before any byte is streamed."""
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(
        query.get("fieldSelector"), rt.field_labels(), rt.field_aliases
    )
    rv = query.get("resourceVersion", "")
    send_initial = query.get("sendInitialEvents")
    bookmarks = _truthy(query.get("allowWatchBookmarks"))
    if send_initial is not None:
        causes = []
        if query.get("resourceVersionMatch") != "NotOlderThan":
            causes.append(
                (
                    "sendInitialEvents",
                    "FieldValueForbidden",
                    "Forbidden: sendInitialEvents is forbidden for watch unless "
                    "resourceVersionMatch is set to NotOlderThan",
                )
            )
        if not bookmarks:
            causes.append(
                (
                    "allowWatchBookmarks",
                    "FieldValueRequired",
                    "Required value: allowWatchBookmarks must be set to true when "
                    "sendInitialEvents is set",
                )
            )
        if causes:
            raise errors.invalid("ListOptions.meta.k8s.io", "", causes)
    if rv not in ("", "0") and not rv.isdigit():
        raise errors.bad_request(f"invalid resource version: {rv}")
    timeout = float(query.get("timeoutSeconds") or default_timeout)
    fault = faults.on_watch_start(rt.plural)
    if fault.expire and fault.expire_as_http:
        raise errors.too_old(int(rv or 0), reg.store.revision)
    initial = _truthy(send_initial) if send_initial is not None else rv in ("", "0")
    return WatchPlan(
        rt,
        namespace,
        predicate(labels, fields),
        int(rv or 0),
        initial,
        initial and send_initial is not None,
        bookmarks,
        timeout,
        fault,
    )


def _line(kind: str, obj: JSON) -> bytes:
    event = {"type": kind, "object": obj}
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _bookmark(rt: ResourceType, revision: int, initial_end: bool = False) -> bytes:
    meta: JSON = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {INITIAL_EVENTS_END: "true"}
    return _line(
        "BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    )


def _translate(plan: WatchPlan, ev: Event) -> tuple[str, JSON] | None:
    """Apply namespace scope and selector transitions to one stored event."""
    if plan.namespace is not None and ev.namespace != plan.namespace:
        return None
    now = plan.match(ev.obj)
    before = ev.old is not None and plan.match(ev.old)
    if ev.type == "ADDED":
        return ("ADDED", ev.obj) if now else None
    if ev.type == "DELETED":
        return ("DELETED", ev.obj) if before else None
    if now and before:
        return ("MODIFIED", ev.obj)
    if now:
        return ("ADDED", ev.obj)
    if before:
        return ("DELETED", ev.obj)
    return None


def stream(
    reg: Registry,
    plan: WatchPlan,
    faults: Faults,
    alive: Callable[[], bool],
    bookmark_interval: float,
    render: Callable[[JSON], JSON] | None = None,
) -> Iterator[bytes]:
    """Yield NDJSON event lines until timeout, close, error or an injected drop.

    ``render`` shapes each stored object (default: served as ``plan.rt``); a
    Table watch passes its renderer.
    """
    rt, store = plan.rt, reg.store
    show = render or (lambda obj: reg.present(rt, obj))
    sent = 0

    def counted() -> None:
        nonlocal sent
        sent += 1
        if plan.fault.drop_after is not None and sent >= plan.fault.drop_after:
            raise WatchDropped

    if plan.fault.drop_after == 0:
        raise WatchDropped
    if plan.fault.expire:
        yield _line(
            "ERROR", errors.too_old(plan.cursor, store.compacted(rt.storage)).status()
        )
        return
    cursor = plan.cursor
    if plan.initial:
        with store.lock:
            items = store.items(rt.storage, plan.namespace)
            cursor = store.revision
        for obj in items:
            if plan.match(obj):
                yield _line("ADDED", show(obj))
                counted()
        if plan.initial_end_bookmark:
            yield _bookmark(rt, cursor, initial_end=True)
    generation = faults.drop_generation(rt.plural)
    start = time.monotonic()
    deadline = start + plan.timeout
    next_bookmark = start + bookmark_interval
    while True:
        if store.closed or not alive():
            return
        if faults.drop_generation(rt.plural) != generation:
            raise WatchDropped
        now = time.monotonic()
        wait = max(0.0, min(0.5, deadline - now, next_bookmark - now))
        try:
            events, caught_up = store.wait_events(rt.storage, cursor, wait)
        except errors.ApiError as exc:
            yield _line("ERROR", exc.status())
            return
        for ev in events:
            out = _translate(plan, ev)
            if out is not None:
                yield _line(out[0], show(out[1]))
                counted()
        cursor = caught_up
        now = time.monotonic()
        if plan.bookmarks and now >= next_bookmark:
            yield _bookmark(rt, cursor)
            next_bookmark = now + bookmark_interval
        if now >= deadline:
            return
