"""The three patch types as the official client sends them (list body = JSON patch,
dict body = strategic merge for built-ins, merge patch for custom objects)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.adapters.emulator.conftest import pod


def _two_container_pod() -> dict:
    body = pod(
        "p1",
        labels={"app": "x"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    )
    body["spec"]["containers"].append(
        {"name": "side", "image": "envoy", "env": [{"name": "A", "value": "1"}]}
    )
    body["metadata"]["finalizers"] = ["example.com/a"]
    return body


def test_json_patch_removes_a_gate_guarded_by_test(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod(
        "ml",
        pod(
            "p1",
            schedulingGates=[
                {"name": "kueue.x-k8s.io/admission"},
                {"name": "kueue.x-k8s.io/topology"},
            ],
        ),
    )
    ops = [
        {
            "op": "test",
            "path": "/spec/schedulingGates/1/name",
            "value": "kueue.x-k8s.io/topology",
        },
        {"op": "remove", "path": "/spec/schedulingGates/1"},
        {"op": "add", "path": "/spec/nodeSelector", "value": {"rack": "r1"}},
    ]
    patched = core.patch_namespaced_pod("p1", "ml", ops)
    assert [g.name for g in patched.spec.scheduling_gates] == [
        "kueue.x-k8s.io/admission"
    ]
    assert patched.spec.node_selector == {"rack": "r1"}


def test_json_patch_failed_test_is_422(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", pod("p1"))
    ops = [
        {"op": "test", "path": "/metadata/labels", "value": {"no": "such"}},
        {"op": "replace", "path": "/metadata/labels", "value": {"a": "b"}},
    ]
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("p1", "ml", ops)
    assert err.value.status == 422
    assert json.loads(err.value.body) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "the server rejected our request due to an error in our request",
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }
    assert (
        core.read_namespaced_pod("p1", "ml").metadata.resource_version
        == created.metadata.resource_version
    )


def test_json_patch_resource_version_test_guards_concurrency(
    core: client.CoreV1Api,
) -> None:
    created = core.create_namespaced_pod("ml", pod("p1"))
    core.patch_namespaced_pod("p1", "ml", {"metadata": {"labels": {"bump": "1"}}})
    ops = [
        {
            "op": "test",
            "path": "/metadata/resourceVersion",
            "value": created.metadata.resource_version,
        },
        {"op": "add", "path": "/metadata/labels/late", "value": "1"},
    ]
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_pod("p1", "ml", ops)
    assert err.value.status == 422


def test_merge_patch_null_deletes(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1", labels={"a": "1", "b": "2"}))
    patched = core.patch_namespaced_pod(
        "p1",
        "ml",
        {"metadata": {"labels": {"a": None, "c": "3"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"b": "2", "c": "3"}


def test_merge_patch_replaces_lists(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", _two_container_pod())
    resp = core.patch_namespaced_pod(
        "p1",
        "ml",
        {"metadata": {"finalizers": ["example.com/b"]}},
        _content_type="application/merge-patch+json",
    )
    assert resp.metadata.finalizers == ["example.com/b"]


def test_strategic_merge_uses_real_merge_keys(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", _two_container_pod())
    old_tolerations = core.api_client.sanitize_for_serialization(
        created.spec.tolerations
    )
    patched = core.patch_namespaced_pod(
        "p1",
        "ml",
        {
            "metadata": {"finalizers": ["example.com/b"]},
            "spec": {
                "containers": [{"name": "side", "image": "envoy:v2"}],
                "tolerations": [
                    {"key": "other", "operator": "Exists"},
                    *old_tolerations,
                ],
            },
        },
    )
    # containers merge by name: only the image of "side" changed, env kept.
    assert [(c.name, c.image) for c in patched.spec.containers] == [
        ("main", "busybox"),
        ("side", "envoy:v2"),
    ]
    assert patched.spec.containers[1].env[0].name == "A"
    # finalizers is a merge-strategy primitive list: union.
    assert patched.metadata.finalizers == ["example.com/a", "example.com/b"]
    # tolerations have no merge key upstream: the patch list replaces (new order wins).
    assert [t.key for t in patched.spec.tolerations] == ["other"] + [
        t["key"] for t in old_tolerations
    ]


def test_strategic_merge_replaces_node_taints(core: client.CoreV1Api) -> None:
    core.patch_node("n1", {"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}})
    patched = core.patch_node(
        "n1", {"spec": {"taints": [{"key": "b", "effect": "NoSchedule"}]}}
    )
    assert [t.key for t in patched.spec.taints] == ["b"]


def test_strategic_merge_directives(core: client.CoreV1Api) -> None:
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "t", "finalizers": ["example.com/a", "example.com/b"]},
        "template": {
            "metadata": {"labels": {"app": "x"}},
            "spec": _two_container_pod()["spec"],
        },
    }
    core.create_namespaced_pod_template("ml", template)
    patched = core.patch_namespaced_pod_template(
        "t",
        "ml",
        {
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "side",
                            "env": [
                                {"name": "A", "$patch": "delete"},
                                {"name": "B", "value": "2"},
                            ],
                        },
                        {"name": "main", "$patch": "delete"},
                    ]
                }
            },
        },
    )
    assert patched.metadata.finalizers == ["example.com/b"]
    containers = patched.template.spec.containers
    assert [c.name for c in containers] == ["side"]
    assert [(e.name, e.value) for e in containers[0].env] == [("B", "2")]
    replaced = core.patch_namespaced_pod_template(
        "t",
        "ml",
        {
            "template": {
                "spec": {
                    "containers": [
                        {"$patch": "replace"},
                        {"name": "solo", "image": "x"},
                    ]
                }
            }
        },
    )
    assert [c.name for c in replaced.template.spec.containers] == ["solo"]


def test_status_conditions_merge_by_type(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    core.patch_namespaced_pod_status(
        "p1",
        "ml",
        {
            "status": {
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                    }
                ]
            }
        },
    )
    patched = core.patch_namespaced_pod_status(
        "p1", "ml", {"status": {"conditions": [{"type": "Custom", "status": "True"}]}}
    )
    assert {c.type: c.status for c in patched.status.conditions} == {
        "PodScheduled": "False",
        "Custom": "True",
    }


def test_status_subresource_splits_writes(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    core.patch_namespaced_pod("p1", "ml", {"status": {"phase": "Failed"}})
    assert core.read_namespaced_pod("p1", "ml").status.phase == "Pending"
    core.patch_namespaced_pod_status(
        "p1",
        "ml",
        {"status": {"phase": "Failed"}, "spec": {"activeDeadlineSeconds": 5}},
    )
    got = core.read_namespaced_pod("p1", "ml")
    assert got.status.phase == "Failed" and got.spec.active_deadline_seconds is None


def test_strategic_merge_on_custom_resource_is_415(
    custom: client.CustomObjectsApi,
) -> None:
    custom.create_cluster_custom_object(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "rf"},
        },
    )
    with pytest.raises(client.ApiException) as err:
        custom.patch_cluster_custom_object(
            "kueue.x-k8s.io",
            "v1beta2",
            "resourceflavors",
            "rf",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415
    assert json.loads(err.value.body)["reason"] == "UnsupportedMediaType"
    patched = custom.patch_cluster_custom_object(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        "rf",
        {"spec": {"nodeLabels": {"pool": "a"}}},
    )
    assert patched["spec"] == {"nodeLabels": {"pool": "a"}}
    assert patched["metadata"]["generation"] == 2


def test_pdb_selector_is_replaced_not_merged(api: client.ApiClient) -> None:
    """policy/v1 PodDisruptionBudget.spec.selector has patchStrategy=replace."""
    policy = client.PolicyV1Api(api)
    policy.create_namespaced_pod_disruption_budget(
        "ml",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        },
    )
    patched = policy.patch_namespaced_pod_disruption_budget(
        "pdb",
        "ml",
        {
            "spec": {
                "selector": {
                    "matchExpressions": [{"key": "tier", "operator": "Exists"}]
                }
            }
        },
    )
    assert patched.spec.selector.match_labels is None
    assert patched.spec.selector.match_expressions[0].key == "tier"
    assert patched.metadata.generation == 2
