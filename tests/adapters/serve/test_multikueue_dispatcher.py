"""The dispatcher's rules, one round at a time, against emulated clusters:
conditional and idempotent writes, its own nominations pinned, a new
nomination after the timeout, inactive or unreachable workers left out,
followers silent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator
from placewise.adapters.serve import Kube
from placewise.adapters.serve.modes.multikueue import DispatchConfig, Dispatcher
from tests.adapters.serve.conftest import wait_for
from tests.multicluster_builders import job, manager, worker

JSON = dict[str, Any]
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


class Clusters:
    def __init__(self, manager_objs: list[JSON], workers: dict[str, list[JSON]]):
        self.emus = {"manager": Emulator(manager_objs, bookmark_interval=0.2)}
        self.emus.update(
            {w: Emulator(objs, bookmark_interval=0.2) for w, objs in workers.items()}
        )
        for e in self.emus.values():
            e.start()
        self.dispatchers: list[Dispatcher] = []

    def dispatcher(self, **kw: Any) -> Dispatcher:
        cfg = DispatchConfig(
            **{
                "solver": "cpsat",
                "time_limit": 1.0,
                "leader_elect": False,
                "probe_timeout": 0.5,
                "request_timeout": 2.0,
                **kw,
            }
        )
        d = Dispatcher(
            cfg,
            Kube(self.emus["manager"].api_client(), request_timeout=2.0),
            {
                w: Kube(e.api_client(), request_timeout=2.0)
                for w, e in self.emus.items()
                if w != "manager"
            },
        ).start(loop=False)
        self.dispatchers.append(d)
        wait_for(
            lambda: all(
                d.caches[c].synced(list(d.resources.get(c, {"x": 0}))) for c in d.caches
            ),
            what="caches synced",
        )
        return d

    def nominated(self, name: str) -> list[str]:
        api = client.CustomObjectsApi(self.emus["manager"].api_client())
        wl = api.get_namespaced_custom_object(GROUP, VERSION, "team", "workloads", name)
        return list((wl.get("status") or {}).get("nominatedClusterNames") or [])

    def stop(self) -> None:
        for d in self.dispatchers:
            d.stop()
        for e in self.emus.values():
            e.stop()


@pytest.fixture
def two() -> Iterator[Clusters]:
    """Two workers that both fit the one job; a first in cluster order."""
    c = Clusters(
        manager(["a", "b"], [job("j", 8)]),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    try:
        yield c
    finally:
        c.stop()


def test_writes_once_and_only_when_needed(two: Clusters) -> None:
    d = two.dispatcher()
    d.run_once()
    assert d.writes == 1
    chosen = two.nominated("j")
    assert len(chosen) == 1 and chosen[0] in ("a", "b")
    wait_for(
        lambda: (
            (d.caches["manager"].get("Workload", "team/j") or {})
            .get("status", {})
            .get("nominatedClusterNames")
        ),
        what="the write seen by the watch",
    )
    for _ in range(3):
        d.run_once()
    assert d.writes == 1 and two.nominated("j") == chosen


def test_nomination_is_pinned_then_renominated_after_timeout(two: Clusters) -> None:
    d = two.dispatcher(renominate_after=0.5)
    d.run_once()
    (first,) = two.nominated("j")
    wait_for(lambda: d.nominations.get("team/j"), what="recorded")
    d.run_once()
    assert two.nominated("j") == [first]  # pinned: nobody admitted it yet
    time.sleep(0.6)  # the nominated worker did not admit it in time
    wait_for(
        lambda: (d.run_once(), two.nominated("j") != [first])[1],
        timeout=5,
        what="a new nomination",
    )
    (second,) = two.nominated("j")
    assert second != first and d.tried["team/j"] == {first}


def test_never_an_inactive_worker() -> None:
    c = Clusters(
        manager(["a", "b"], [job("j", 8)], inactive=("a",)),
        {"a": worker("H100", 2), "b": worker("A100", 1)},
    )
    try:
        d = c.dispatcher()
        d.run_once()
        assert c.nominated("j") == ["b"]
    finally:
        c.stop()


def test_unreachable_worker_left_out(two: Clusters) -> None:
    d = two.dispatcher()
    two.emus["a"].stop()
    d.run_once()
    assert two.nominated("j") == ["b"]
    assert d.reachable == {"a": False, "b": True}


def test_follower_writes_nothing(two: Clusters) -> None:
    leader = two.dispatcher(
        leader_elect=True,
        identity="one",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=0.1,
    )
    wait_for(leader.leading, what="a leader")
    follower = two.dispatcher(
        leader_elect=True,
        identity="two",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=0.1,
    )
    time.sleep(0.3)
    assert not follower.leading()
    assert follower.run_once() is None and follower.writes == 0
    assert two.nominated("j") == []
    leader.run_once()
    assert leader.writes == 1


def test_a_malformed_object_is_left_out_not_fatal() -> None:
    """One worker Workload the decoder refuses (a negative count) is left out
    of the solve with a warning; dispatch goes on."""
    bad = job("broken", 8, dispatched=False)
    bad["spec"]["podSets"][0]["count"] = -1
    c = Clusters(
        manager(["a", "b"], [job("j", 8, model="A100")]),
        {"a": worker("H100", 1), "b": [*worker("A100", 1), bad]},
    )
    try:
        d = c.dispatcher()
        d.run_once()
        assert c.nominated("j") == ["b"]
    finally:
        c.stop()
