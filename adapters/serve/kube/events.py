"""Kubernetes Events (``events.k8s.io/v1``) written off the hot path.

Binds and extender replies must not wait for event writes, so events go
through a bounded queue to one writer thread.  A (object, reason, note) that
was written in the last ``dedupe_seconds`` is dropped: a gang pending for the
same reason on every re-solve yields one FailedScheduling per pod, not one per
solve.  Only the leader records (followers are observers, not actors).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from placewise.adapters.serve.kube.client import EVENTS, ApiError, Kube

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.events")


def micro_time(when: datetime | None = None) -> str:
    """metav1.MicroTime as the API server writes it."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def rfc3339(when: datetime | None = None) -> str:
    """metav1.Time (condition transition times): seconds precision."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def ref(obj: JSON) -> JSON:
    """An ObjectReference to a cached object."""
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj.get("kind", "Pod"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }


class Recorder:
    def __init__(
        self,
        kube: Kube,
        controller: str,
        instance: str,
        active: Callable[[], bool],
        dedupe_seconds: float = 300.0,
    ) -> None:
        self.kube, self.controller, self.instance = kube, controller, instance
        self.active = active
        self.dedupe = dedupe_seconds
        self._queue: queue.Queue[JSON | None] = queue.Queue(maxsize=10000)
        self._recent: dict[tuple[str, str, str], float] = {}
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="events", daemon=True)
        self.written = 0
        self._stopping = False

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Drop what is still queued and end the writer (shutdown must not wait
        on a possibly unreachable API server)."""
        self._stopping = True
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)

    def event(
        self,
        regarding: JSON,
        reason: str,
        note: str,
        *,
        action: str,
        type_: str = "Normal",
        related: JSON | None = None,
    ) -> None:
        """Queue one event about ``regarding`` (a cached object)."""
        if self._stopping or not self.active():
            return
        meta = regarding.get("metadata") or {}
        dedupe_key = (str(meta.get("uid") or meta.get("name")), reason, note)
        now = time.monotonic()
        with self._lock:
            if now - self._recent.get(dedupe_key, -1e9) < self.dedupe:
                return
            self._recent[dedupe_key] = now
            if len(self._recent) > 50000:
                self._recent = {
                    k: t for k, t in self._recent.items() if now - t < self.dedupe
                }
        body: JSON = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{meta.get('name')}.",
                "namespace": meta.get("namespace") or "default",
            },
            "eventTime": micro_time(),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "note": note[:1024],
            "type": type_,
            "regarding": ref(regarding),
        }
        if related is not None:
            body["related"] = ref(related)
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            log.warning("event queue full; dropped %s on %s", reason, meta.get("name"))

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            ns = str(body["metadata"]["namespace"])
            if not self.active():
                continue  # queued while leading, written only while still leading
            try:
                self.kube.create(EVENTS, ns, body)
                self.written += 1
            except ApiError as exc:
                log.info("could not write event %s: %s", body.get("reason"), exc)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until queued events are written (tests, shutdown)."""
        deadline = time.monotonic() + timeout
        while not self._queue.empty() and time.monotonic() < deadline:
            time.sleep(0.01)
