"""Stand-in for what Kueue's controllers do to a Workload after a decision.

Optional (``Emulator(kueue_controllers=KueueControllers(...))``, ``placewise
emulate --kueue-controllers``); off by default, so a test that plays Kueue
itself sees only its own writes.  Without it an evicted Workload keeps its
quota forever, as it would in a cluster with no Kueue running.

What it does, per Kueue's job reconciler (``jobframework/reconciler.go``,
"handle eviction") and ``pkg/workload`` (``UnsetQuotaReservationWithCondition``,
``SyncAdmittedCondition``, ``SetRequeuedCondition``), matched in behaviour,
not copied:

* **Eviction releases the reservation.**  A Workload with ``Evicted=True``
  that still holds a reservation has its job stopped; ``release_after``
  seconds after the stand-in first saw it evicted (the job's pods take that
  long to go), ``status.admission`` is removed, ``QuotaReserved`` becomes
  False (reason ``Pending``, the eviction's message), ``Admitted`` False
  (``NoReservation``) and ``Requeued`` True for a ``Preempted`` eviction
  (False otherwise).  ``Evicted`` and ``Preempted`` stay as they are until a
  new admission resets them.  The Workload is then pending again.
* **A finished job releases its quota.**  Kueue's cache stops counting a
  Workload once ``Finished=True`` and writes nothing else, so there is
  nothing to do for one a client finishes.  With ``finish_after`` set, the
  stand-in also plays the job: a Workload admitted (and not evicted) for that
  long gets ``Finished=True`` (reason ``Succeeded``).

Each change is one status write through the store, under its lock after a
re-read, so watchers see what a real controller's status update produces.
Deviations: no requeue backoff (``requeueState``), no deactivation handling,
times are the stand-in's own clock rather than condition timestamps.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from placewise.adapters.emulator.controllers import set_condition
from placewise.adapters.emulator.errors import ApiError
from placewise.adapters.emulator.store import Store
from placewise.adapters.emulator.strategies import rfc3339
from placewise.models.cluster import KUEUE_GROUP

JSON = dict[str, Any]
WORKLOADS = (KUEUE_GROUP, "workloads")
REQUEUED_ON = ("Preempted", "NodeFailures")
"""Eviction reasons after which Kueue sets Requeued=True."""


def _conditions(wl: JSON) -> dict[str, JSON]:
    out: dict[str, JSON] = {}
    for c in (wl.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type"):
            out[str(c["type"])] = c
    return out


def _true(conds: dict[str, JSON], kind: str) -> bool:
    return conds.get(kind, {}).get("status") == "True"


def _reserved(wl: JSON, conds: dict[str, JSON]) -> bool:
    return bool((wl.get("status") or {}).get("admission")) and _true(
        conds, "QuotaReserved"
    )


def _key(wl: JSON) -> tuple[str, str, str]:
    meta = wl.get("metadata") or {}
    return (str(meta.get("namespace")), str(meta.get("name")), str(meta.get("uid")))


def released(wl: JSON) -> JSON:
    """The Workload once its evicted job stopped: reservation cleared, requeued."""
    conds = _conditions(wl)
    evicted = conds.get("Evicted", {})
    reason = str(evicted.get("reason") or "")
    message = str(evicted.get("message") or "")
    gen = (wl.get("metadata") or {}).get("generation")
    extra: JSON = {"observedGeneration": gen} if gen is not None else {}
    now = rfc3339()
    status = dict(wl.get("status") or {})
    out = list(status.get("conditions") or [])
    out = set_condition(
        out,
        {
            "type": "Requeued",
            "status": "True" if reason in REQUEUED_ON else "False",
            "reason": reason or "Evicted",
            "message": message,
            "lastTransitionTime": now,
            **extra,
        },
    )
    out = set_condition(
        out,
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": message,
            "lastTransitionTime": now,
            **extra,
        },
    )
    if "Admitted" in conds:
        out = set_condition(
            out,
            {
                "type": "Admitted",
                "status": "False",
                "reason": "NoReservation",
                "message": "The workload has no reservation",
                "lastTransitionTime": now,
                **extra,
            },
        )
    status.pop("admission", None)
    status["conditions"] = out
    return {**wl, "status": status}


def finished(wl: JSON) -> JSON:
    """The Workload once its job succeeded."""
    gen = (wl.get("metadata") or {}).get("generation")
    status = dict(wl.get("status") or {})
    status["conditions"] = set_condition(
        list(status.get("conditions") or []),
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "Job finished successfully",
            "lastTransitionTime": rfc3339(),
            **({"observedGeneration": gen} if gen is not None else {}),
        },
    )
    return {**wl, "status": status}


class KueueControllers:
    """A background thread that finishes what Kueue's controllers would."""

    def __init__(
        self, release_after: float = 1.0, finish_after: float | None = None
    ) -> None:
        if release_after < 0 or (finish_after is not None and finish_after < 0):
            raise ValueError("kueue controller delays must not be negative")
        self.release_after = release_after
        self.finish_after = finish_after
        self.releases = 0
        self.finishes = 0
        self._store: Store | None = None
        self._seen_evicted: dict[tuple[str, str, str], float] = {}
        self._seen_admitted: dict[tuple[str, str, str], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, store: Store) -> KueueControllers:
        self._store = store
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="kueue-standin", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._store is not None:
            self._store.wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _run(self) -> None:
        assert self._store is not None
        store = self._store
        revision = store.revision
        wait = 0.0
        while not self._stop.is_set() and not store.closed:
            try:
                _, revision = store.wait_events(WORKLOADS, revision, wait)
            except ApiError:  # history compacted past us: just rescan
                revision = store.revision
            if self._stop.is_set():
                return
            wait = self.tick(time.monotonic())

    def tick(self, now: float) -> float:
        """One pass over every Workload; seconds until the next one is due."""
        assert self._store is not None
        store = self._store
        due = 1.0
        evicted: dict[tuple[str, str, str], float] = {}
        admitted: dict[tuple[str, str, str], float] = {}
        with store.lock:
            for wl in store.items(WORKLOADS):
                conds = _conditions(wl)
                if _true(conds, "Finished") or not _reserved(wl, conds):
                    continue
                key = _key(wl)
                if _true(conds, "Evicted"):
                    since = evicted[key] = self._seen_evicted.get(key, now)
                    left = since + self.release_after - now
                    if left <= 0:
                        store.put(WORKLOADS, released(wl))
                        self.releases += 1
                        del evicted[key]
                    else:
                        due = min(due, left)
                elif self.finish_after is not None and _true(conds, "Admitted"):
                    since = admitted[key] = self._seen_admitted.get(key, now)
                    left = since + self.finish_after - now
                    if left <= 0:
                        store.put(WORKLOADS, finished(wl))
                        self.finishes += 1
                        del admitted[key]
                    else:
                        due = min(due, left)
        self._seen_evicted, self._seen_admitted = evicted, admitted
        return max(due, 0.01)
