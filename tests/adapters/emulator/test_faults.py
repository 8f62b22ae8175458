"""Injected faults, as an adapter under test will meet them through the client."""

from __future__ import annotations

import json
import threading
import time

import pytest
import urllib3
from kubernetes import client, watch

from placewise.adapters.emulator import Emulator
from tests.adapters.emulator.conftest import pod


def test_injected_500_then_recovery(emulator: Emulator, core: client.CoreV1Api) -> None:
    emulator.faults.fail(500, count=1, method="GET", path=r"/api/v1/nodes$")
    with pytest.raises(client.ApiException) as err:
        core.list_node()
    assert err.value.status == 500
    body = json.loads(err.value.body)
    assert (body["reason"], body["message"]) == (
        "InternalError",
        "Internal error occurred: injected fault",
    )
    assert len(core.list_node().items) == 3
    assert ("GET", "/api/v1/nodes") in emulator.faults.requests


def test_conflict_on_nth_write(emulator: Emulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    emulator.faults.conflict_on_write(nth=2, resource="pods")
    core.patch_namespaced_pod("p1", "ml", {"metadata": {"labels": {"n": "1"}}})
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("p1", "ml", {"metadata": {"labels": {"n": "2"}}})
    assert err.value.status == 409
    assert json.loads(err.value.body)["reason"] == "Conflict"
    core.patch_namespaced_pod("p1", "ml", {"metadata": {"labels": {"n": "3"}}})
    assert core.read_namespaced_pod("p1", "ml").metadata.labels == {"n": "3"}


def test_forced_410_on_watch(emulator: Emulator, core: client.CoreV1Api) -> None:
    """The client retries one 410 ERROR event by itself; a second one surfaces."""
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    emulator.faults.expire_next_watch(count=2, resource="pods")
    with pytest.raises(client.ApiException) as err:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, "ml", resource_version=rv
        ):
            pass
    assert err.value.status == 410


def test_forced_410_as_http_status(emulator: Emulator, core: client.CoreV1Api) -> None:
    emulator.faults.expire_next_watch(resource="pods", as_http=True)
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod(
            "ml", watch=True, resource_version="1", timeout_seconds=1
        )
    assert err.value.status == 410
    assert json.loads(err.value.body)["reason"] == "Expired"


def test_watch_dropped_mid_stream(emulator: Emulator, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("a"))
    core.create_namespaced_pod("ml", pod("b"))
    emulator.faults.drop_watches(after_events=1, resource="pods")
    seen = []
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for ev in watch.Watch().stream(
            core.list_namespaced_pod, "ml", timeout_seconds=5
        ):
            seen.append(ev["object"].metadata.name)
    assert seen == ["a"]


def test_drop_active_watches(emulator: Emulator, core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    outcome: list[BaseException] = []

    def consume() -> None:
        try:
            for _ in watch.Watch().stream(
                core.list_namespaced_pod, "ml", resource_version=rv, timeout_seconds=10
            ):
                pass
        except BaseException as exc:
            outcome.append(exc)

    t = threading.Thread(target=consume)
    t.start()
    time.sleep(0.3)
    emulator.faults.drop_active_watches()
    t.join(timeout=5)
    assert not t.is_alive()
    assert outcome and isinstance(outcome[0], urllib3.exceptions.ProtocolError)


def test_delay_triggers_client_timeout(
    emulator: Emulator, core: client.CoreV1Api
) -> None:
    """urllib3 retries an idempotent GET three times, so every attempt must be slow."""
    emulator.faults.delay(0.6, count=None, method="GET", path="/namespaces/ml/pods")
    with pytest.raises(urllib3.exceptions.MaxRetryError):
        core.list_namespaced_pod("ml", _request_timeout=0.2)
    emulator.faults.clear()
    assert core.list_namespaced_pod("ml", _request_timeout=2).items == []
