"""LIST semantics: selectors, resourceVersion matching, and paginated snapshots.

A paginated list is a consistent read at the revision of its first page: the
continue token carries that revision and the last key served, and later pages
are cut from the store's reconstruction of that revision. Once compaction has
passed it, the token is refused with 410, as etcd-backed lists are.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from placewise.adapters.emulator import errors
from placewise.adapters.emulator.resources import ResourceType
from placewise.adapters.emulator.selectors import (
    parse_field_selector,
    parse_label_selector,
    predicate,
)
from placewise.adapters.emulator.store import Store, object_key

JSON = dict[str, Any]
Present = Callable[..., JSON]

CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue "
    "token in this response to retrieve the remainder of the results. Continuing with "
    "the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may "
    "show up in the list."
)


def encode_continue(revision: int, last_key: tuple[str, str]) -> str:
    start = (f"{last_key[0]}/" if last_key[0] else "") + last_key[1] + "\x00"
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": start})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        start = str(raw["start"]).rstrip("\x00")
        ns, _, name = start.rpartition("/")
        return int(raw["rv"]), (ns, name)
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


def parse_rv(rv: str) -> int:
    try:
        return int(rv)
    except ValueError as exc:
        raise errors.bad_request(f"invalid resource version: {rv}") from exc


def too_large(requested: int, current: int) -> errors.ApiError:
    err = errors.timeout(f"Too large resource version: {requested}, current: {current}")
    assert err.details is not None
    err.details["causes"] = [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    return err


def list_objects(
    store: Store,
    rt: ResourceType,
    namespace: str | None,
    query: dict[str, str],
    present: Present,
) -> JSON:
    """The ``<Kind>List`` for a LIST request (``present`` shapes each item)."""
    labels = parse_label_selector(query.get("labelSelector"))
    fields = parse_field_selector(
        query.get("fieldSelector"), rt.field_labels(), rt.field_aliases
    )
    match = predicate(labels, fields)
    limit = int(query.get("limit") or 0)
    token, rv = query.get("continue"), query.get("resourceVersion", "")
    start: tuple[str, str] | None = None
    with store.lock:
        current = store.revision
        if token:
            if rv:
                raise errors.bad_request(
                    "specifying resource version is not allowed when using continue"
                )
            revision, start = decode_continue(token)
            try:
                items = store.snapshot(rt.storage, namespace, revision)
            except errors.ApiError as exc:
                raise errors.expired(CONTINUE_EXPIRED) from exc
        elif rv and rv != "0" and query.get("resourceVersionMatch") == "Exact":
            revision = parse_rv(rv)
            if revision > current:
                raise too_large(revision, current)
            items = store.snapshot(rt.storage, namespace, revision)
        else:
            if rv and rv != "0" and parse_rv(rv) > current:
                raise too_large(parse_rv(rv), current)
            revision, items = current, store.items(rt.storage, namespace)
    if start is not None:
        items = [o for o in items if object_key(o) > start]
    selected = [o for o in items if match(o)]
    meta: JSON = {"resourceVersion": str(revision)}
    if limit and len(selected) > limit:
        meta["continue"] = encode_continue(revision, object_key(selected[limit - 1]))
        if not labels and not fields:
            meta["remainingItemCount"] = len(selected) - limit
        selected = selected[:limit]
    return {
        "kind": rt.list_kind,
        "apiVersion": rt.api_version,
        "metadata": meta,
        "items": [present(rt, o, in_list=True) for o in selected],
    }
