"""List-then-watch caches: the sidecar's only view of the cluster.

One thread per resource does what client-go's reflector does
(cluster-protocols §3.1): LIST (paginated) and replace the store atomically,
WATCH from the list's resourceVersion with bookmarks, follow the RV through
every event and bookmark, reconnect from it when a stream ends or drops,
and go back to LIST on 410 Gone.  All threads feed one :class:`Cache`, whose
generation counter tells the solve loop that something relevant changed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.kube.client import ApiError, Kube, Resource

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.informer")
EXPECTATION_TTL = 30.0
OWN_ANNOTATIONS = "placewise.io/"


def key_of(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace")
    return f"{ns}/{meta.get('name')}" if ns else str(meta.get("name"))


def _pod_fingerprint(pod: JSON) -> tuple[Any, ...]:
    """What about a pod can change a plan; kubelet status churn cannot, nor the
    annotations placewise itself writes when binding."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    annotations = {
        k: v
        for k, v in (meta.get("annotations") or {}).items()
        if not k.startswith(OWN_ANNOTATIONS)
    }
    return (
        meta.get("uid"),
        spec.get("nodeName"),
        phase in ("Succeeded", "Failed"),
        bool(meta.get("deletionTimestamp")),
        repr(meta.get("labels")),
        repr(sorted(annotations.items())),
        repr(spec.get("schedulingGates")),
        repr(spec.get("nodeSelector")),
    )


def _node_fingerprint(node: JSON) -> tuple[Any, ...]:
    """Kubelet heartbeats rewrite every node's status every few seconds; only
    labels, taints, schedulability, allocatable and readiness matter."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    status = node.get("status") or {}
    ready = next(
        (
            c.get("status")
            for c in status.get("conditions") or []
            if c.get("type") == "Ready"
        ),
        None,
    )
    return (
        repr(meta.get("labels")),
        repr(spec.get("taints")),
        bool(spec.get("unschedulable")),
        repr(status.get("allocatable")),
        ready,
    )


def _namespace_fingerprint(ns: JSON) -> Any:
    return repr((ns.get("metadata") or {}).get("labels"))


_FINGERPRINTS: dict[str, Callable[[JSON], Any]] = {
    "Pod": _pod_fingerprint,
    "Node": _node_fingerprint,
    "Namespace": _namespace_fingerprint,
}


def _version(obj: JSON) -> tuple[Any, int | None]:
    meta = obj.get("metadata") or {}
    try:
        rv = int(str(meta.get("resourceVersion")))
    except ValueError:
        rv = None
    return meta.get("uid"), rv


def is_older(new: JSON, cached: JSON | None) -> bool:
    """Is ``new`` an earlier version of the ``cached`` object?

    The cache takes the sidecar's own writes at once (each write's response,
    or the re-read after a conflict), so a watch event already on its way,
    or a list served before the write, can carry the object as it was before
    it.  Applied, it would undo the write in the cache: a Workload the loop
    re-admitted would read as still being evicted, no longer protected by
    :mod:`placewise.adapters.serve.engine.stability`, and a re-solve could
    take it back with nothing changed.  Versions of the same object (same
    UID) are compared as the integers every apiserver serves (etcd's
    revisions); one that is not an integer is never called older.
    """
    if cached is None:
        return False
    (uid_new, rv_new), (uid_old, rv_old) = _version(new), _version(cached)
    return (
        uid_new == uid_old
        and rv_new is not None
        and rv_old is not None
        and rv_new < rv_old
    )


class Cache:
    """Objects by kind and key; a change counter; our own writes as expectations.

    Expectations close the gap between a write and its watch event: a pod we
    bound counts as bound at once, so no later decision re-plans it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._objects: dict[str, dict[str, JSON]] = {}
        self._synced: set[str] = set()
        self.generation = 0
        self._bound: dict[str, tuple[str, float]] = {}

    def _bump(self) -> None:
        self.generation += 1
        self._cond.notify_all()

    def replace(self, kind: str, items: list[JSON]) -> None:
        with self._cond:
            old = self._objects.get(kind)
            fresh = {}
            for o in items:
                key = key_of(o)
                cached = (old or {}).get(key)
                fresh[key] = cached if cached is not None and is_older(o, cached) else o
            self._objects[kind] = fresh
            self._synced.add(kind)
            if (
                old is None
                or old.keys() != fresh.keys()
                or any(self._changed(kind, old[k], fresh[k]) for k in fresh)
            ):
                self._bump()

    def _changed(self, kind: str, old: JSON, new: JSON) -> bool:
        fp = _FINGERPRINTS.get(kind)
        if fp is None:
            return old is not new and old != new
        before, after = fp(old), fp(new)
        if before == after:
            return False
        if (
            kind == "Pod"
            and before[1] is None
            and after[1] is not None
            and before[:1] + before[2:] == after[:1] + after[2:]
        ):
            # Bound where we bound it: the plan already counts it there.
            hit = self._bound.get(str(after[0]))
            return hit is None or hit[0] != after[1]
        return True

    def apply(self, kind: str, event: str, obj: JSON) -> None:
        key = key_of(obj)
        with self._cond:
            table = self._objects.setdefault(kind, {})
            old = table.get(key)
            uid = (obj.get("metadata") or {}).get("uid")
            if event == "DELETED":
                self._bound.pop(str(uid), None)
                if old is not None and (uid is None or _version(old)[0] in (None, uid)):
                    del table[key]  # not a newer object of the same name
                    self._bump()
                return
            if is_older(obj, old):
                return
            table[key] = obj
            if old is None or self._changed(kind, old, obj):
                self._bump()

    def items(self, kind: str) -> list[JSON]:
        with self._cond:
            return list((self._objects.get(kind) or {}).values())

    def get(self, kind: str, key: str) -> JSON | None:
        with self._cond:
            return (self._objects.get(kind) or {}).get(key)

    def synced(self, kinds: list[str]) -> bool:
        with self._cond:
            return all(k in self._synced for k in kinds)

    def touch(self) -> None:
        """Ask for a re-solve although no object changed (e.g. a PDB refusal)."""
        with self._cond:
            self._bump()

    def nudge(self) -> None:
        """Wake every waiter without a change (a new plan to act on)."""
        with self._cond:
            self._cond.notify_all()

    def wait(self, generation: int, timeout: float) -> int:
        """Block until the generation moves past ``generation`` or timeout."""
        with self._cond:
            if self.generation == generation:
                self._cond.wait(timeout)
            return self.generation

    # -- expectations ---------------------------------------------------------

    def expect_bound(self, uid: str, node: str) -> None:
        """We bound ``uid`` to ``node``: count it there now, and do not treat its
        watch event as news (the plan already placed it there)."""
        with self._cond:
            self._bound[uid] = (node, time.monotonic())

    def forget_bound(self, uid: str) -> None:
        with self._cond:
            self._bound.pop(uid, None)

    def node_of(self, pod: JSON) -> str | None:
        """``spec.nodeName``, or where we bound it if the watch lags."""
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            return str(node)
        uid = str((pod.get("metadata") or {}).get("uid"))
        with self._cond:
            hit = self._bound.get(uid)
            if hit is None:
                return None
            if time.monotonic() - hit[1] > EXPECTATION_TTL:
                del self._bound[uid]
                return None
            return hit[0]


class Informer:
    """Keeps one resource of the cache in sync; a daemon thread."""

    def __init__(
        self,
        kube: Kube,
        res: Resource,
        cache: Cache,
        metrics: Metrics,
        watch_timeout: int = 300,
    ) -> None:
        self.kube, self.res, self.cache, self.metrics = kube, res, cache, metrics
        self.watch_timeout = watch_timeout
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"informer-{res.plural}", daemon=True
        )
        self._stream: Any = None

    def start(self) -> Informer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                items, rv = self.kube.list_all(self.res)
            except ApiError as exc:
                log.warning("list %s failed: %s", self.res.plural, exc)
                self.metrics.watch_restarts.labels(self.res.plural, "error").inc()
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            self.cache.replace(self.res.cache_kind, items)
            backoff = 0.1
            self._watch_from(rv)

    def _watch_from(self, rv: str) -> None:
        """Watch until 410 (return, so the caller re-lists) or stop."""
        backoff = 0.1
        while not self._stop.is_set():
            try:
                self._stream = self.kube.open_watch(self.res, rv, self.watch_timeout)
                for ev in self._stream:
                    kind, obj = ev.get("type"), ev.get("object") or {}
                    if kind == "ERROR":
                        code = int(obj.get("code") or 0)
                        raise ApiError(
                            code, str(obj.get("reason")), str(obj.get("message"))
                        )
                    rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                    if kind != "BOOKMARK":
                        obj.setdefault("apiVersion", self.res.api_version)
                        obj.setdefault("kind", self.res.kind)
                        self.cache.apply(self.res.cache_kind, str(kind), obj)
                    backoff = 0.1
            except ApiError as exc:
                if self._stop.is_set():
                    return
                if exc.status == 410:
                    log.info(
                        "watch %s: resourceVersion %s expired; re-listing",
                        self.res.plural,
                        rv,
                    )
                    self.metrics.watch_restarts.labels(self.res.plural, "gone").inc()
                    return
                log.info(
                    "watch %s broke (%s); reconnecting from %s",
                    self.res.plural,
                    exc,
                    rv,
                )
                self.metrics.watch_restarts.labels(self.res.plural, "error").inc()
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            finally:
                self._stream = None
