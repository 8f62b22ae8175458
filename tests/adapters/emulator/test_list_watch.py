"""List and watch: selectors, pagination, resourceVersions, bookmarks, expiry."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, watch

from placewise.adapters.emulator import Emulator
from tests.adapters.emulator.conftest import BASE_OBJECTS, pod


def _names(items) -> list[str]:
    return [i.metadata.name for i in items]


@pytest.fixture
def labelled(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("a", labels={"app": "train", "tier": "gpu"}))
    core.create_namespaced_pod("ml", pod("b", labels={"app": "train"}, nodeName="n1"))
    core.create_namespaced_pod("ml", pod("c", labels={"app": "serve", "tier": "cpu"}))
    core.create_namespaced_pod("default", pod("d", namespace="default"))


@pytest.mark.usefixtures("labelled")
@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=train", ["a", "b"]),
        ("app==train", ["a", "b"]),
        ("app!=train", ["c"]),
        ("app in (serve, other)", ["c"]),
        ("app notin (serve)", ["a", "b"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b"]),
        ("app=train,tier", ["a"]),
    ],
)
def test_label_selectors(
    core: client.CoreV1Api, selector: str, expected: list[str]
) -> None:
    assert (
        _names(core.list_namespaced_pod("ml", label_selector=selector).items)
        == expected
    )


@pytest.mark.usefixtures("labelled")
def test_field_selectors(core: client.CoreV1Api) -> None:
    assert _names(
        core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1").items
    ) == ["b"]
    unbound = core.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert _names(unbound.items) == ["d", "a", "c"]  # key order: default/d, ml/a, ml/c
    assert _names(
        core.list_pod_for_all_namespaces(
            field_selector="metadata.namespace=ml,status.phase=Running"
        ).items
    ) == ["b"]
    assert _names(
        core.list_namespaced_pod("ml", field_selector="metadata.name!=a").items
    ) == ["b", "c"]
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("ml", field_selector="spec.bogus=x")
    assert err.value.status == 400
    assert (
        json.loads(err.value.body)["message"] == "field label not supported: spec.bogus"
    )


def test_bad_label_selector_is_400(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_pod("ml", label_selector="app in ()")
    assert err.value.status == 400


def test_pagination_is_a_consistent_snapshot(core: client.CoreV1Api) -> None:
    for i in range(7):
        core.create_namespaced_config_map(
            "ml", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{i}"))
        )
    page = core.list_namespaced_config_map("ml", limit=3)
    assert _names(page.items) == ["cm-0", "cm-1", "cm-2"]
    assert page.metadata.remaining_item_count == 4
    # Writes between pages do not show up: the continue token pins the list revision.
    core.delete_namespaced_config_map("cm-4", "ml")
    core.create_namespaced_config_map(
        "ml", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm-3a"))
    )
    seen, pinned = _names(page.items), page.metadata.resource_version
    while page.metadata._continue:
        page = core.list_namespaced_config_map(
            "ml", limit=3, _continue=page.metadata._continue
        )
        seen += _names(page.items)
        assert page.metadata.resource_version == pinned
    assert seen == [f"cm-{i}" for i in range(7)]
    fresh = core.list_namespaced_config_map("ml")
    assert "cm-3a" in _names(fresh.items) and "cm-4" not in _names(fresh.items)


def test_expired_continue_token_is_410(
    emulator: Emulator, core: client.CoreV1Api
) -> None:
    for i in range(4):
        core.create_namespaced_config_map(
            "ml", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{i}"))
        )
    page = core.list_namespaced_config_map("ml", limit=2)
    core.create_namespaced_config_map(
        "ml", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
    )
    emulator.compact()
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_config_map(
            "ml", limit=2, _continue=page.metadata._continue
        )
    assert err.value.status == 410
    body = json.loads(err.value.body)
    assert body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old")


def test_watch_from_list_rv_sees_later_events_and_bookmarks(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("ml", pod("before"))
    listed = core.list_namespaced_pod("ml")
    rv = listed.metadata.resource_version
    core.create_namespaced_pod("ml", pod("after"))
    core.patch_namespaced_pod("after", "ml", {"metadata": {"labels": {"x": "1"}}})
    core.delete_namespaced_pod("after", "ml")
    w = watch.Watch()
    seen: list[tuple[str, str | None]] = []
    bookmark_rvs = []
    for ev in w.stream(
        core.list_namespaced_pod,
        "ml",
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=3,
    ):
        if ev["type"] == "BOOKMARK":
            bookmark_rvs.append(int(ev["raw_object"]["metadata"]["resourceVersion"]))
            w.stop()
            continue
        seen.append((ev["type"], ev["object"].metadata.name))
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "after")]
    assert bookmark_rvs and bookmark_rvs[0] > int(rv)


def test_watch_without_rv_replays_current_state(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("x"))
    w = watch.Watch()
    first = next(iter(w.stream(core.list_namespaced_pod, "ml", timeout_seconds=2)))
    w.stop()
    assert (first["type"], first["object"].metadata.name) == ("ADDED", "x")


def test_send_initial_events_ends_with_annotated_bookmark(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("ml", pod("x"))
    w = watch.Watch()
    events = []
    for ev in w.stream(
        core.list_namespaced_pod,
        "ml",
        send_initial_events=True,
        resource_version_match="NotOlderThan",
        allow_watch_bookmarks=True,
        timeout_seconds=2,
    ):
        events.append(ev)
        if ev["type"] == "BOOKMARK":
            w.stop()
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    annotations = events[1]["raw_object"]["metadata"]["annotations"]
    assert annotations == {"k8s.io/initial-events-end": "true"}


def test_selector_transitions_are_added_and_deleted(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", pod("p", labels={"app": "a"}))
    rv = created.metadata.resource_version
    core.patch_namespaced_pod("p", "ml", {"metadata": {"labels": {"app": "b"}}})
    core.patch_namespaced_pod("p", "ml", {"metadata": {"labels": {"app": "a"}}})
    w = watch.Watch()
    types = []
    for ev in w.stream(
        core.list_namespaced_pod,
        "ml",
        label_selector="app=a",
        resource_version=rv,
        timeout_seconds=1,
    ):
        types.append(ev["type"])
        if len(types) == 2:
            w.stop()
    assert types == ["DELETED", "ADDED"]


def test_compacted_rv_gives_410(core: client.CoreV1Api) -> None:
    """The window holds 3 events per resource; an RV older than it expires."""
    with Emulator(BASE_OBJECTS, history_limit=3) as emu:
        api = emu.api_client()
        v1 = client.CoreV1Api(api)
        old_rv = v1.list_namespaced_config_map("ml").metadata.resource_version
        for i in range(5):
            v1.create_namespaced_config_map(
                "ml", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{i}"))
            )
        resp = v1.list_namespaced_config_map(
            "ml",
            watch=True,
            resource_version=old_rv,
            timeout_seconds=1,
            _preload_content=False,
        )
        lines = [json.loads(x) for x in resp.data.splitlines() if x.strip()]
        assert resp.status == 200 and len(lines) == 1
        assert lines[0]["type"] == "ERROR"
        status = lines[0]["object"]
        assert (status["code"], status["reason"]) == (410, "Expired")
        assert status["message"].startswith(f"too old resource version: {old_rv} (")
        with pytest.raises(client.ApiException) as err:
            list(
                watch.Watch().stream(
                    v1.list_namespaced_config_map, "ml", resource_version=old_rv
                )
            )
        assert err.value.status == 410
        api.close()


def test_watch_follows_live_writes(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    writer = threading.Timer(0.2, lambda: core.create_namespaced_pod("ml", pod("live")))
    writer.start()
    w = watch.Watch()
    got = None
    for ev in w.stream(
        core.list_namespaced_pod, "ml", resource_version=rv, timeout_seconds=3
    ):
        got = (ev["type"], ev["object"].metadata.name)
        w.stop()
    writer.join()
    assert got == ("ADDED", "live")


def test_watch_timeout_closes_stream(core: client.CoreV1Api) -> None:
    rv = core.list_namespaced_pod("ml").metadata.resource_version
    resp = core.list_namespaced_pod(
        "ml", watch=True, resource_version=rv, timeout_seconds=1, _preload_content=False
    )
    assert resp.status == 200 and resp.data == b""
