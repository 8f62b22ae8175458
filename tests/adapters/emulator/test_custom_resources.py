"""Kueue and gang kinds as custom resources, Leases, discovery, instance files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client, watch
from kubernetes.dynamic import DynamicClient

from placewise.adapters.emulator import Emulator
from placewise.adapters.io.loader import load_objects, objects_from_text
from tests.shared import KUEUE_CASES, requires_shared

KUEUE = ("kueue.x-k8s.io", "v1beta2")


def _workload(name: str) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "lq",
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                }
            ],
        },
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}]},
    }


def test_custom_object_status_subresource(custom: client.CustomObjectsApi) -> None:
    created = custom.create_namespaced_custom_object(
        *KUEUE, "ml", "workloads", _workload("w1")
    )
    assert "status" not in created, "status is dropped on create for CRDs with /status"
    assert created["metadata"]["generation"] == 1
    admitted = custom.patch_namespaced_custom_object_status(
        *KUEUE,
        "ml",
        "workloads",
        "w1",
        {
            "status": {
                "admission": {"clusterQueue": "cq"},
                "conditions": [{"type": "QuotaReserved", "status": "True"}],
            }
        },
    )
    assert admitted["status"]["admission"] == {"clusterQueue": "cq"}
    assert admitted["metadata"]["generation"] == 1
    # Status in a main-resource patch is ignored; a spec change bumps generation.
    patched = custom.patch_namespaced_custom_object(
        *KUEUE,
        "ml",
        "workloads",
        "w1",
        {"spec": {"active": False}, "status": {"admission": None}},
    )
    assert patched["status"]["admission"] == {"clusterQueue": "cq"}
    assert patched["metadata"]["generation"] == 2


def test_custom_object_put_needs_resource_version(
    custom: client.CustomObjectsApi,
) -> None:
    created = custom.create_namespaced_custom_object(
        *KUEUE, "ml", "workloads", _workload("w1")
    )
    del created["metadata"]["resourceVersion"]
    with pytest.raises(client.ApiException) as err:
        custom.replace_namespaced_custom_object(
            *KUEUE, "ml", "workloads", "w1", created
        )
    assert err.value.status == 422
    assert json.loads(err.value.body)["message"] == (
        'Workload.kueue.x-k8s.io "w1" is invalid: metadata.resourceVersion: '
        "Invalid value: 0x0: must be specified for an update"
    )


def test_same_objects_served_under_every_version(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_namespaced_custom_object(*KUEUE, "ml", "workloads", _workload("w1"))
    old = custom.list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta1", "ml", "workloads"
    )
    assert old["kind"] == "WorkloadList"
    assert [(i["apiVersion"], i["metadata"]["name"]) for i in old["items"]] == [
        ("kueue.x-k8s.io/v1beta1", "w1")
    ]


def test_watch_custom_objects(custom: client.CustomObjectsApi) -> None:
    rv = custom.list_cluster_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", "podgroups"
    )["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(
        "scheduling.x-k8s.io",
        "v1alpha1",
        "ml",
        "podgroups",
        {
            "apiVersion": "scheduling.x-k8s.io/v1alpha1",
            "kind": "PodGroup",
            "metadata": {"name": "gang"},
            "spec": {"minMember": 4},
        },
    )
    w = watch.Watch()
    for ev in w.stream(
        custom.list_cluster_custom_object,
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        resource_version=rv,
        timeout_seconds=2,
    ):
        assert ev["type"] == "ADDED"
        assert ev["object"]["spec"] == {"minMember": 4}
        w.stop()
    assert w.resource_version is not None and int(w.resource_version) > int(rv)


def test_leases_use_optimistic_concurrency(api: client.ApiClient) -> None:
    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease(
        "ml",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="placewise"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        ),
    )
    lease.spec.holder_identity = "b"
    renewed = coord.replace_namespaced_lease("placewise", "ml", lease)
    assert renewed.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"
    with pytest.raises(client.ApiException) as err:
        coord.replace_namespaced_lease("placewise", "ml", lease)
    assert err.value.status == 409
    assert (
        'on leases.coordination.k8s.io "placewise"'
        in json.loads(err.value.body)["message"]
    )


def test_dynamic_client_discovers_resources(
    api: client.ApiClient, tmp_path: Path
) -> None:
    dyn = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    cqs = dyn.resources.get(api_version="kueue.x-k8s.io/v1beta2", kind="ClusterQueue")
    assert cqs.namespaced is False and cqs.name == "clusterqueues"
    cqs.create(
        body={
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {"namespaceSelector": {}},
        }
    )
    assert [i.metadata.name for i in cqs.get().items] == ["cq"]
    pods = dyn.resources.get(api_version="v1", kind="Pod")
    assert "status" in pods.subresources
    pdb = dyn.resources.get(api_version="policy/v1", kind="PodDisruptionBudget")
    assert pdb.namespaced
    assert dyn.version["kubernetes"]["major"] == "1"


def test_unknown_kind_is_stored_under_a_derived_plural() -> None:
    objects = objects_from_text("""
apiVersion: example.com/v1
kind: GpuPolicy
metadata: {name: strict, namespace: ml}
spec: {mode: exclusive}
---
apiVersion: v1
kind: List
items:
- apiVersion: jobset.x-k8s.io/v1alpha2
  kind: JobSet
  metadata: {name: js, namespace: ml}
""")
    with Emulator(objects) as emu:
        custom = client.CustomObjectsApi(emu.api_client())
        got = custom.get_namespaced_custom_object(
            "example.com", "v1", "ml", "gpupolicies", "strict"
        )
        assert got["spec"] == {"mode": "exclusive"}
        assert (
            custom.list_namespaced_custom_object(
                "jobset.x-k8s.io", "v1alpha2", "ml", "jobsets"
            )["items"][0]["metadata"]["name"]
            == "js"
        )


@requires_shared
def test_loads_a_kueue_case_file() -> None:
    files = sorted(KUEUE_CASES.glob("preemption/*/instance.yaml"))[:1]
    objects = load_objects(files)
    workloads = [o for o in objects if o["kind"] == "Workload"]
    with Emulator(objects) as emu:
        custom = client.CustomObjectsApi(emu.api_client())
        served = custom.list_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta2", "workloads"
        )["items"]
        assert sorted(w["metadata"]["name"] for w in served) == sorted(
            w["metadata"]["name"] for w in workloads
        )
        admitted = [w for w in served if (w.get("status") or {}).get("admission")]
        assert admitted, "loaded objects keep their status"


def test_duplicates_across_files() -> None:
    """Verbatim repeats merge (every Kueue case declares Namespace default)."""
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
    rf = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf"},
        "spec": {},
    }
    with Emulator([ns, rf, dict(ns), dict(rf)]) as emu:
        names = [
            n.metadata.name
            for n in client.CoreV1Api(emu.api_client()).list_namespace().items
        ]
        assert names.count("default") == 1
    changed = {**rf, "spec": {"nodeLabels": {"a": "b"}}}
    with pytest.raises(ValueError, match="duplicate object ResourceFlavor rf"):
        Emulator([rf, changed])


def test_events_api(api: client.ApiClient) -> None:
    events = client.EventsV1Api(api)
    events.create_namespaced_event(
        "ml",
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(name="e1"),
            event_time="2026-01-01T00:00:00.000000Z",
            reason="Scheduled",
            action="Binding",
            note="Successfully assigned ml/p to n1",
            type="Normal",
            reporting_controller="placewise",
            reporting_instance="placewise-0",
            regarding=client.V1ObjectReference(kind="Pod", namespace="ml", name="p"),
        ),
    )
    listed = events.list_namespaced_event("ml").items
    assert [(e.reason, e.regarding.name) for e in listed] == [("Scheduled", "p")]
