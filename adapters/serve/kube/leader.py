"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go does it.

Expiry is judged on our own clock from when we last saw the record change,
never on the holder's ``renewTime`` (no trust in clock sync between
replicas).  A leader that could not renew within ``renew_deadline`` stops
acting before anyone else may take over at ``lease_duration``
(renew_deadline < lease_duration), so two replicas never act at once.  Every
write is a PUT conditioned on the resourceVersion read: a lost race is a 409.

A renewal counts from when its round *started*, not from when its reply was
read: a process paused (SIGSTOP, a long GC, a frozen VM) after its PUT was
applied but before it read the reply would otherwise wake up believing it
had just renewed, while another replica took the Lease over meanwhile.
Writers ask :meth:`LeaderElector.confirm` right before each write; when the
last renewal is too old it re-checks through the API (a conditional renew)
rather than trusting what it last believed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from placewise.adapters.serve.kube.client import LEASES, ApiError, Kube
from placewise.adapters.serve.kube.events import micro_time

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.leader")


class LeaseSettings(Protocol):
    """What a sidecar's configuration says about leader election."""

    @property
    def leader_elect(self) -> bool: ...
    @property
    def lease_namespace(self) -> str: ...
    @property
    def lease_name(self) -> str: ...
    @property
    def identity(self) -> str: ...
    @property
    def lease_duration(self) -> float: ...
    @property
    def renew_deadline(self) -> float: ...
    @property
    def retry_period(self) -> float: ...


def elector(
    kube: Kube,
    cfg: LeaseSettings,
    on_change: Callable[[bool], None] | None = None,
    follow: bool = False,
) -> LeaderElector | None:
    """The elector ``cfg`` asks for, or None when leader election is off."""
    if not cfg.leader_elect:
        return None
    return LeaderElector(
        kube,
        cfg.lease_namespace,
        cfg.lease_name,
        cfg.identity,
        cfg.lease_duration,
        cfg.renew_deadline,
        cfg.retry_period,
        on_change=on_change,
        follow=follow,
    )


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        on_change: Callable[[bool], None] | None = None,
        follow: bool = False,
    ) -> None:
        self.kube, self.namespace, self.name = kube, namespace, name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.on_change = on_change
        self.follow = follow
        """Read-only: lead exactly when kube-scheduler (same pod) holds its own
        Lease, whose holderIdentity is ``<hostname>_<uuid>``; never write it."""
        self._renewed_at = -1e9
        """Monotonic time our last successful round started (its GET was sent)."""
        self._round = threading.Lock()  # one acquire-or-renew round at a time
        self._observed: tuple[str, str] | None = None  # (holder, renewTime)
        self._observed_at = 0.0
        self._leading = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader", daemon=True)
        self.holder = ""

    def holds_lease(self) -> bool:
        """True only while our last renewal is younger than the renew deadline:
        cheap, no API call (health, metrics, the extender's refusals)."""
        return self._leading and self._fresh()

    def _fresh(self) -> bool:
        return time.monotonic() - self._renewed_at < self.renew_deadline

    def confirm(self) -> bool:
        """May this replica write now?  Asked right before each admission,
        eviction, binding or nomination.  A fresh renewal answers at once; an
        overdue one (we were paused, or the API was slow) is settled through
        the API with one acquire-or-renew round, so a stale leader never acts
        on what it last believed."""
        if self._stop.is_set():
            return False  # stopping: never renew behind stop()'s release
        if self.holds_lease():
            return True
        if not self._leading:
            return False  # a follower: the elector's loop acquires, not writers
        self._round_once(wait=self.retry_period)
        return self.holds_lease()

    def start(self) -> LeaderElector:
        self._thread.start()
        return self

    def stop(self, release: bool = True) -> None:
        """Stop; ``release`` hands the lease over at once (graceful shutdown)."""
        self._stop.set()
        self._thread.join(timeout=5)
        if release and self._leading and not self.follow:
            try:
                lease = self.kube.get(LEASES, self.namespace, self.name)
                if (
                    lease
                    and (lease.get("spec") or {}).get("holderIdentity") == self.identity
                ):
                    lease["spec"] = {
                        **lease["spec"],
                        "holderIdentity": "",
                        "leaseDurationSeconds": 1,
                    }
                    self.kube.replace(LEASES, self.namespace, self.name, lease)
            except ApiError as exc:
                log.info("could not release the lease: %s", exc)
        self._set(False)

    def _set(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            log.info(
                "%s %s leadership of lease %s/%s",
                self.identity,
                "acquired" if leading else "lost",
                self.namespace,
                self.name,
            )
            if self.on_change is not None:
                self.on_change(leading)

    def _round_once(self, wait: float | None = None) -> None:
        """One acquire-or-renew round, dated from before its first request.

        ``wait``: give up after this long if another round is in flight (a
        writer must not hang on a renewal whose reply is slow; it skips)."""
        if not self._round.acquire(timeout=-1 if wait is None else wait):
            return
        try:
            started = time.monotonic()
            try:
                ok = self._try()
            except ApiError as exc:
                log.info("lease %s/%s: %s", self.namespace, self.name, exc)
                ok = False
            if ok:
                self._renewed_at = started
                # A round slower than the deadline renewed nothing usable.
                self._set(self._fresh())
            elif not self.holds_lease():
                self._set(False)
        finally:
            self._round.release()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._round_once()
            self._stop.wait(self.retry_period)

    def _spec(self, old: JSON | None) -> JSON:
        now = micro_time()
        spec = dict((old or {}).get("spec") or {})
        taking_over = spec.get("holderIdentity") != self.identity
        spec.update(
            holderIdentity=self.identity,
            leaseDurationSeconds=max(1, round(self.lease_duration)),
            renewTime=now,
        )
        if taking_over:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if old else 0
            )
        return spec

    def _follow(self, lease: JSON | None) -> bool:
        """Leading iff the holder is us (or our pod's kube-scheduler) and the
        record is fresh on our clock."""
        if lease is None:
            return False
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        self.holder = holder
        record = (holder, str(spec.get("renewTime") or ""))
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        mine = holder == self.identity or holder.startswith(self.identity + "_")
        return mine and now - self._observed_at < duration

    def _try(self) -> bool:
        """One acquire-or-renew round; True if we hold the lease after it."""
        lease = self.kube.get(LEASES, self.namespace, self.name)
        if self.follow:
            return self._follow(lease)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(None),
            }
            try:
                self.kube.create(LEASES, self.namespace, body)
            except ApiError as exc:
                if exc.status == 409:
                    return False
                raise
            self.holder = self.identity
            return True
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        now = time.monotonic()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        self.holder = holder
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now - self._observed_at < duration:
            return False  # someone else holds an unexpired lease
        lease["spec"] = self._spec(lease)
        try:
            self.kube.replace(LEASES, self.namespace, self.name, lease)
        except ApiError as exc:
            if exc.status == 409:
                return False
            raise
        self.holder = self.identity
        return True
