"""Revisioned object storage: what etcd plus the watch cache give the apiserver.

One global revision counts every write, as etcd's does, and is each object's
``resourceVersion``. Each resource keeps a bounded history of its events (the
watch cache's sliding window); once an event falls out of the window, a watch
or paginated list from before it gets ``410 Expired``, which is the behaviour
reflectors must survive. Stored objects are never mutated after insertion, so
readers may serialise them without copying.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from placewise.adapters.emulator.errors import too_old

JSON = dict[str, Any]
StorageKey = tuple[str, str]  # (group, plural)
ObjectKey = tuple[str, str]  # (namespace, name)


@dataclass(frozen=True)
class Event:
    """One committed change; ``old`` is the state before it (None for ADDED)."""

    revision: int
    type: str
    namespace: str
    name: str
    obj: JSON
    old: JSON | None


def object_key(obj: JSON) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def with_revision(obj: JSON, revision: int) -> JSON:
    """A shallow copy whose metadata carries ``revision``; nested values are shared."""
    meta = dict(obj.get("metadata") or {})
    meta["resourceVersion"] = str(revision)
    return {**obj, "metadata": meta}


class Store:
    """Thread-safe storage; hold ``lock`` across a read-check-write sequence."""

    def __init__(self, history_limit: int = 5000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.history_limit = history_limit
        self.closed = False
        self._rev = 0
        self._objects: dict[StorageKey, dict[ObjectKey, JSON]] = {}
        self._history: dict[StorageKey, deque[Event]] = {}
        self._compacted: dict[StorageKey, int] = {}

    @property
    def revision(self) -> int:
        with self.lock:
            return self._rev

    def compacted(self, sk: StorageKey) -> int:
        with self.lock:
            return self._compacted.get(sk, 0)

    # -- reads -----------------------------------------------------------------------

    def get(self, sk: StorageKey, namespace: str, name: str) -> JSON | None:
        with self.lock:
            return self._objects.get(sk, {}).get((namespace, name))

    def items(self, sk: StorageKey, namespace: str | None = None) -> list[JSON]:
        """Objects in key order (namespace, name), as an etcd range read gives them."""
        with self.lock:
            bucket = self._objects.get(sk, {})
            keys = sorted(k for k in bucket if namespace is None or k[0] == namespace)
            return [bucket[k] for k in keys]

    def snapshot(
        self, sk: StorageKey, namespace: str | None, revision: int
    ) -> list[JSON]:
        """The objects as they were at ``revision``, rebuilt by undoing later events."""
        with self.lock:
            if revision < self._compacted.get(sk, 0):
                raise too_old(revision, self._compacted.get(sk, 0))
            state = dict(self._objects.get(sk, {}))
            for ev in reversed(self._history.get(sk, ())):
                if ev.revision <= revision:
                    break
                key = (ev.namespace, ev.name)
                if ev.old is None:
                    state.pop(key, None)
                else:
                    state[key] = ev.old
        keys = sorted(k for k in state if namespace is None or k[0] == namespace)
        return [state[k] for k in keys]

    def events_after(self, sk: StorageKey, revision: int) -> list[Event]:
        """Events after ``revision``; 410 if the window has moved past it."""
        with self.lock:
            oldest = self._compacted.get(sk, 0)
            if revision < oldest:
                raise too_old(revision, oldest)
            out: list[Event] = []
            for ev in reversed(self._history.get(sk, ())):
                if ev.revision <= revision:
                    break
                out.append(ev)
        out.reverse()
        return out

    # -- writes ----------------------------------------------------------------------

    def _record(self, sk: StorageKey, ev: Event) -> None:
        hist = self._history.setdefault(sk, deque())
        hist.append(ev)
        while len(hist) > self.history_limit:
            self._compacted[sk] = hist.popleft().revision
        self.changed.notify_all()

    def put(self, sk: StorageKey, obj: JSON) -> JSON:
        """Insert or replace; returns the stored object with its new resourceVersion."""
        with self.lock:
            self._rev += 1
            stored = with_revision(obj, self._rev)
            key = object_key(stored)
            bucket = self._objects.setdefault(sk, {})
            old = bucket.get(key)
            bucket[key] = stored
            self._record(
                sk,
                Event(
                    self._rev,
                    "MODIFIED" if old else "ADDED",
                    key[0],
                    key[1],
                    stored,
                    old,
                ),
            )
            return stored

    def remove(self, sk: StorageKey, namespace: str, name: str) -> JSON | None:
        """Delete; the DELETED event carries the last state at the deletion revision."""
        with self.lock:
            bucket = self._objects.get(sk, {})
            old = bucket.pop((namespace, name), None)
            if old is None:
                return None
            self._rev += 1
            gone = with_revision(old, self._rev)
            self._record(sk, Event(self._rev, "DELETED", namespace, name, gone, old))
            return gone

    def seed(self, sk: StorageKey, obj: JSON) -> JSON:
        """Insert without a watch event: the state the emulator starts from."""
        with self.lock:
            self._rev += 1
            stored = with_revision(obj, self._rev)
            self._objects.setdefault(sk, {})[object_key(stored)] = stored
            return stored

    def compact(self, sk: StorageKey | None = None) -> int:
        """Drop history up to now (all resources or one), like an etcd compaction."""
        with self.lock:
            keys = (
                [sk]
                if sk is not None
                else list(set(self._history) | set(self._objects))
            )
            for key in keys:
                self._history.pop(key, None)
                self._compacted[key] = self._rev
            self.changed.notify_all()
            return self._rev

    def wait_events(
        self, sk: StorageKey, revision: int, timeout: float
    ) -> tuple[list[Event], int]:
        """Events after ``revision``, waiting up to ``timeout`` for the first one.

        Returns the events and the revision the caller is now caught up to; the
        check and the wait happen under one lock so no write slips between them.
        """
        with self.changed:
            events = self.events_after(sk, revision)
            if not events and not self.closed and timeout > 0:
                self.changed.wait(timeout)
                events = self.events_after(sk, revision)
            return events, self._rev

    def wake(self) -> None:
        with self.changed:
            self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
