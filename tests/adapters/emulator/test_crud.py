"""Create / read / update / delete semantics, checked through the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator
from tests.adapters.emulator.conftest import BASE_OBJECTS, pod


def _status(exc: client.ApiException) -> dict:
    return json.loads(exc.body)


def test_create_assigns_system_metadata_and_pod_defaults(
    core: client.CoreV1Api,
) -> None:
    """A created pod gets uid, RV, timestamp, Pending phase and admission defaults."""
    created = core.create_namespaced_pod("ml", pod("p1", priorityClassName=None))
    meta = created.metadata
    assert meta.uid and meta.resource_version.isdigit() and meta.creation_timestamp
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "Burstable"
    assert created.spec.scheduler_name == "default-scheduler"
    assert created.spec.priority == 0
    assert {t.key for t in created.spec.tolerations} == {
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    }
    again = core.read_namespaced_pod("p1", "ml")
    assert again.metadata.resource_version == meta.resource_version


def test_priority_class_admission(
    core: client.CoreV1Api, api: client.ApiClient
) -> None:
    sched = client.SchedulingV1Api(api)
    sched.create_priority_class(
        client.V1PriorityClass(metadata=client.V1ObjectMeta(name="high"), value=1000)
    )
    created = core.create_namespaced_pod("ml", pod("p1", priorityClassName="high"))
    assert created.spec.priority == 1000
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("ml", pod("p2", priorityClassName="nope"))
    assert err.value.status == 403
    assert _status(err.value)["message"] == (
        'pods "p2" is forbidden: no PriorityClass with name nope was found'
    )
    names = {pc.metadata.name for pc in sched.list_priority_class().items}
    assert {"system-node-critical", "system-cluster-critical", "high"} <= names


def test_already_exists_and_not_found_are_status_objects(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("ml", pod("p1"))
    assert err.value.status == 409
    assert _status(err.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "p1" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "p1", "kind": "pods"},
        "code": 409,
    }
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_pod("ghost", "ml")
    assert err.value.status == 404
    body = _status(err.value)
    assert (body["reason"], body["message"]) == ("NotFound", 'pods "ghost" not found')


def test_namespace_must_exist(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("nowhere", pod("p1", namespace="nowhere"))
    assert err.value.status == 404
    assert _status(err.value)["message"] == 'namespaces "nowhere" not found'


def test_invalid_name_is_422(core: client.CoreV1Api) -> None:
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_pod("ml", pod("Bad_Name"))
    body = _status(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["message"].startswith(
        'Pod "Bad_Name" is invalid: metadata.name: Invalid value'
    )


def test_generate_name(core: client.CoreV1Api) -> None:
    body = pod("x")
    body["metadata"] = {"generateName": "worker-"}
    created = core.create_namespaced_pod("ml", body)
    assert created.metadata.name.startswith("worker-")
    assert len(created.metadata.name) == len("worker-") + 5


def test_stale_put_is_409_with_upstream_message(core: client.CoreV1Api) -> None:
    """Two writers read the same version; the second PUT loses."""
    core.create_namespaced_pod("ml", pod("p1"))
    first = core.read_namespaced_pod("p1", "ml")
    second = core.read_namespaced_pod("p1", "ml")
    first.metadata.labels = {"writer": "one"}
    updated = core.replace_namespaced_pod("p1", "ml", first)
    assert int(updated.metadata.resource_version) > int(
        second.metadata.resource_version
    )
    second.metadata.labels = {"writer": "two"}
    with pytest.raises(client.ApiException) as err:
        core.replace_namespaced_pod("p1", "ml", second)
    assert err.value.status == 409
    body = _status(err.value)
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "p1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert core.read_namespaced_pod("p1", "ml").metadata.labels == {"writer": "one"}


def test_noop_update_keeps_resource_version(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", pod("p1"))
    same = core.replace_namespaced_pod("p1", "ml", created)
    assert same.metadata.resource_version == created.metadata.resource_version


def test_pod_spec_is_immutable_and_gates_only_shrink(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1", schedulingGates=[{"name": "a"}]))
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod(
            "p1", "ml", {"spec": {"schedulingGates": [{"name": "b"}]}}
        )
    assert err.value.status == 422
    assert (
        "only deletion is allowed, but found new scheduling gate 'b'"
        in _status(err.value)["message"]
    )
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("p1", "ml", {"spec": {"nodeName": "n1"}})
    assert err.value.status == 422
    assert "pod updates may not change fields" in _status(err.value)["message"]
    # While gated, nodeSelector may be tightened (what Kueue TAS does).
    patched = core.patch_namespaced_pod(
        "p1", "ml", {"spec": {"nodeSelector": {"zone": "a"}}}
    )
    assert patched.spec.node_selector == {"zone": "a"}


def test_delete_returns_object_for_pods_and_status_for_configmaps(
    core: client.CoreV1Api,
) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    gone = core.delete_namespaced_pod("p1", "ml")
    assert gone.metadata.name == "p1"
    core.create_namespaced_config_map(
        "ml",
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"a": "b"}),
    )
    resp = core.delete_namespaced_config_map("cm", "ml", _preload_content=False)
    body = json.loads(resp.data)
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "cm" and body["details"]["kind"] == "configmaps"
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("cm", "ml")
    assert err.value.status == 404


def test_delete_preconditions(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    with pytest.raises(client.ApiException) as err:
        core.delete_namespaced_pod(
            "p1",
            "ml",
            body=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(uid="not-the-uid")
            ),
        )
    assert err.value.status == 409
    assert (
        "Precondition failed: UID in precondition: not-the-uid"
        in _status(err.value)["message"]
    )


def test_finalizers_hold_deletion_until_removed(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map(
        "ml",
        client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="cm", finalizers=["example.com/hold"])
        ),
    )
    core.delete_namespaced_config_map("cm", "ml")
    held = core.read_namespaced_config_map("cm", "ml")
    assert held.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("cm", "ml", {"metadata": {"finalizers": None}})
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("cm", "ml")
    assert err.value.status == 404


def test_bound_pod_deletes_gracefully(emulator, core: client.CoreV1Api) -> None:
    """The emulated kubelet confirms a graceful deletion at once."""
    core.create_namespaced_pod("ml", pod("p1", nodeName="n1"))
    assert core.read_namespaced_pod("p1", "ml").status.phase == "Running"
    terminating = core.delete_namespaced_pod("p1", "ml")
    assert terminating.metadata.deletion_timestamp is not None
    assert terminating.metadata.deletion_grace_period_seconds == 30
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("p1", "ml")


def test_namespace_deletion_removes_contents(core: client.CoreV1Api) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="tmp")))
    core.create_namespaced_pod("tmp", pod("p1", namespace="tmp"))
    deleted = core.delete_namespace("tmp", _preload_content=False)
    assert json.loads(deleted.data)["status"]["phase"] == "Terminating"
    assert core.list_namespaced_pod("tmp").items == []
    assert "tmp" not in {n.metadata.name for n in core.list_namespace().items}


def test_dry_run_does_not_persist(core: client.CoreV1Api) -> None:
    echoed = core.create_namespaced_pod("ml", pod("p1"), dry_run="All")
    assert echoed.metadata.name == "p1" and echoed.metadata.uid
    assert core.list_namespaced_pod("ml").items == []


def test_without_kubelet_pods_stay_pending_and_terminating() -> None:
    with Emulator(BASE_OBJECTS, kubelet=False) as emu:
        v1 = client.CoreV1Api(emu.api_client())
        v1.create_namespaced_pod("ml", pod("p1", nodeName="n1"))
        assert v1.read_namespaced_pod("p1", "ml").status.phase == "Pending"
        v1.delete_namespaced_pod("p1", "ml")
        stuck = v1.read_namespaced_pod("p1", "ml")
        assert stuck.metadata.deletion_timestamp is not None
        v1.delete_namespaced_pod("p1", "ml", grace_period_seconds=0)
        assert v1.list_namespaced_pod("ml").items == []


def test_delete_collection_with_selector(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("a", labels={"job": "x"}))
    core.create_namespaced_pod("ml", pod("b", labels={"job": "x"}))
    core.create_namespaced_pod("ml", pod("c", labels={"job": "y"}))
    core.delete_collection_namespaced_pod("ml", label_selector="job=x")
    assert [p.metadata.name for p in core.list_namespaced_pod("ml").items] == ["c"]


def test_requests_default_to_limits(core: client.CoreV1Api) -> None:
    body = pod("p1")
    body["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "2", "memory": "1Gi"}
    }
    created = core.create_namespaced_pod("ml", body)
    assert created.spec.containers[0].resources.requests == {
        "cpu": "2",
        "memory": "1Gi",
    }
    assert created.status.qos_class == "Guaranteed"
