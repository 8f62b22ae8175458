"""The elector's own rules, against an in-memory Lease store (fast; the
two-process SIGSTOP test is test_lease_fencing.py)."""

from __future__ import annotations

import copy
import time
from typing import Any

from placewise.adapters.serve.kube.client import ApiError
from placewise.adapters.serve.kube.leader import LeaderElector

JSON = dict[str, Any]


class Leases:
    """get/create/replace of one Lease with resourceVersion checks; a PUT
    is applied at once and its reply held ``reply_delay`` seconds."""

    def __init__(self) -> None:
        self.lease: JSON | None = None
        self.version = 0
        self.reply_delay = 0.0
        self.writes: list[str] = []

    def get(self, res: Any, ns: str, name: str) -> JSON | None:
        return copy.deepcopy(self.lease)

    def create(self, res: Any, ns: str, body: JSON) -> JSON:
        if self.lease is not None:
            raise ApiError(409, "AlreadyExists")
        return self._store(body)

    def replace(self, res: Any, ns: str, name: str, body: JSON) -> JSON:
        assert self.lease is not None
        if body["metadata"].get("resourceVersion") != str(self.version):
            raise ApiError(409, "Conflict")
        stored = self._store(body)
        time.sleep(self.reply_delay)
        return stored

    def _store(self, body: JSON) -> JSON:
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        self.writes.append(str(body["spec"]["holderIdentity"]))
        return copy.deepcopy(self.lease)

    def take_over(self, holder: str) -> None:
        """Another replica writes the Lease (as after our Lease expired)."""
        assert self.lease is not None
        self.lease["spec"].update(holderIdentity=holder, renewTime=f"t{self.version}")
        self.version += 1
        self.lease["metadata"]["resourceVersion"] = str(self.version)


def elector(kube: Leases) -> LeaderElector:
    return LeaderElector(kube, "default", "l", "a", 1.0, 0.5, 0.1)


def test_a_renewal_counts_from_when_its_round_started():
    """A renewal whose reply came back after the renew deadline renewed
    nothing usable: the replica does not lead on it (dated from its reply it
    would lead for another renew deadline)."""
    kube = Leases()
    e = elector(kube)
    e._round_once()
    assert e.holds_lease() and e.confirm()
    kube.reply_delay = 0.6  # > renew_deadline
    e._round_once()
    assert kube.writes == ["a", "a"]  # the renewal was applied
    assert not e.holds_lease()


def test_an_overdue_renewal_is_settled_through_the_api_before_a_write():
    kube = Leases()
    e = elector(kube)
    e._round_once()
    e._renewed_at -= 0.6  # paused past the renew deadline (no thread runs)
    assert not e.holds_lease()
    assert e.confirm()  # still ours: confirm renewed it
    assert kube.writes == ["a", "a"] and e.holds_lease()

    e._renewed_at -= 0.6
    kube.take_over("b")
    assert not e.confirm()  # another holds it: no write, and no renewal
    assert kube.writes == ["a", "a"]
    assert not e.holds_lease()


def test_a_stopped_elector_confirms_nothing():
    kube = Leases()
    e = elector(kube)
    e._round_once()
    e._stop.set()
    assert not e.confirm()
