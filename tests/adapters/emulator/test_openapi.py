"""OpenAPI v3 documents, server-side field validation and the two Event views."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import fieldcheck, openapi, patch
from placewise.adapters.emulator.resources import ResourceTable
from tests.adapters.emulator.conftest import pod, raw

GVK = openapi.GVK


def _doc(api: client.ApiClient, key: str) -> dict[str, Any]:
    code, _, index = raw(api, "GET", "/openapi/v3")
    assert code == 200
    url = index["paths"][key]["serverRelativeURL"]
    path, _, query = url.partition("?")
    code, _, doc = raw(api, "GET", path, dict([query.split("=")]))
    assert code == 200
    return doc


def _kind_schema(doc: dict[str, Any], group: str, version: str, kind: str) -> Any:
    want = {"group": group, "version": version, "kind": kind}
    found = [s for s in doc["components"]["schemas"].values() if want in s.get(GVK, [])]
    assert len(found) == 1
    return found[0]


def test_index_lists_every_group_version(api: client.ApiClient) -> None:
    _, _, index = raw(api, "GET", "/openapi/v3")
    keys = set(index["paths"])
    assert {"api/v1", "apis/events.k8s.io/v1", "apis/kueue.x-k8s.io/v1beta2"} <= keys
    assert all("?hash=" in p["serverRelativeURL"] for p in index["paths"].values())
    code, _, _ = raw(api, "GET", "/openapi/v3/apis/nothing.example.com/v1")
    assert code == 404


def test_core_document_has_kubectl_metadata(api: client.ApiClient) -> None:
    doc = _doc(api, "api/v1")
    assert doc["openapi"].startswith("3.")
    pod_schema = _kind_schema(doc, "", "v1", "Pod")
    assert set(pod_schema["properties"]) >= {"apiVersion", "metadata", "spec", "status"}
    patch_op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch_op[GVK] == {"group": "", "version": "v1", "kind": "Pod"}
    assert "fieldValidation" in [p["name"] for p in patch_op["parameters"]]
    assert (
        "application/strategic-merge-patch+json" in patch_op["requestBody"]["content"]
    )
    assert "application/apply-patch+yaml" not in patch_op["requestBody"]["content"]
    schemas = doc["components"]["schemas"]
    containers = schemas["io.k8s.api.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    tolerations = schemas["io.k8s.api.v1.PodSpec"]["properties"]["tolerations"]
    assert "x-kubernetes-patch-strategy" not in tolerations  # replaced whole
    finalizers = schemas["io.k8s.api.v1.ObjectMeta"]["properties"]["finalizers"]
    assert finalizers["x-kubernetes-patch-strategy"] == "merge"
    assert "x-kubernetes-patch-merge-key" not in finalizers


def test_custom_resources_take_merge_patch_and_any_field(
    api: client.ApiClient,
) -> None:
    doc = _doc(api, "apis/kueue.x-k8s.io/v1beta2")
    schema = _kind_schema(doc, "kueue.x-k8s.io", "v1beta2", "Workload")
    assert schema[openapi.PRESERVE] is True
    path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads/{name}"
    content = doc["paths"][path]["patch"]["requestBody"]["content"]
    assert "application/merge-patch+json" in content
    assert "application/strategic-merge-patch+json" not in content


def _walk_annotations(
    schemas: dict[str, Any], name: str, path: str, seen: dict[str, str], depth: int
) -> None:
    if depth > 12:
        return
    for field, prop in schemas[name]["properties"].items():
        sub = f"{path}.{field}" if path else field
        if "x-kubernetes-patch-strategy" in prop:
            strategy = prop["x-kubernetes-patch-strategy"]
            seen[sub] = (
                patch.REPLACE
                if strategy == "replace"
                else prop.get("x-kubernetes-patch-merge-key", "")
            )
        inner = prop.get("items") or prop
        for ref in inner.get("allOf") or []:
            target = ref["$ref"][len(openapi.REF) :]
            _walk_annotations(schemas, target, sub, seen, depth + 1)


@pytest.mark.parametrize(
    "kind", ["Pod", "Node", "Service", "PodTemplate", "Job", "Deployment"]
)
def test_merge_metadata_is_what_the_server_applies(kind: str) -> None:
    """kubectl's client-side patch and the emulator's merge must agree per path."""
    table = ResourceTable()
    rt = next(r for r in table.snapshot() if r.kind == kind and r.builtin)
    api = openapi.OpenApi(table)
    name, schemas = api.schema_of(rt)
    seen: dict[str, str] = {}
    _walk_annotations(schemas, name, "", seen, 0)
    assert seen == patch.schema_for(kind)


# -- fieldValidation -----------------------------------------------------------------

PODS = "/api/v1/namespaces/ml/pods"


def _typo_pod(name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"][0]["imagee"] = "x"
    body["spec"]["bogus"] = 1
    return body


def test_strict_create_is_refused_with_the_unknown_paths(
    api: client.ApiClient, core: client.CoreV1Api
) -> None:
    code, _, err = raw(
        api, "POST", PODS, {"fieldValidation": "Strict"}, body=_typo_pod("t")
    )
    assert code == 400 and err["reason"] == "BadRequest"
    assert err["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagee", unknown field "spec.bogus"'
    )
    assert core.list_namespaced_pod("ml").items == []


def test_warn_is_the_default_and_ignore_is_silent(api: client.ApiClient) -> None:
    code, headers, _ = raw(api, "POST", PODS, body=_typo_pod("w"))
    assert code == 201
    assert headers["Warning"] == (
        '299 - "unknown field \\"spec.containers[0].imagee\\"", '
        '299 - "unknown field \\"spec.bogus\\""'
    )
    code, headers, _ = raw(
        api, "POST", PODS, {"fieldValidation": "Ignore"}, body=_typo_pod("i")
    )
    assert code == 201 and "Warning" not in headers
    code, _, err = raw(
        api, "POST", PODS, {"fieldValidation": "Loose"}, body=_typo_pod("x")
    )
    assert code == 400 and "Unsupported value" in err["message"]


def test_strict_patch_and_update(api: client.ApiClient, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p"))
    code, _, err = raw(
        api,
        "PATCH",
        f"{PODS}/p",
        {"fieldValidation": "Strict"},
        {"Content-Type": "application/merge-patch+json"},
        {"metadata": {"labels": {"a": "b"}}, "spec": {"nodeNme": "n1"}},
    )
    assert code == 422 and err["reason"] == "Invalid"
    assert err["details"]["causes"][0]["field"] == "patch"
    assert 'unknown field "spec.nodeNme"' in err["message"]
    assert core.read_namespaced_pod("p", "ml").metadata.labels == {}
    current = api.sanitize_for_serialization(core.read_namespaced_pod("p", "ml"))
    current["metadata"]["labels"] = {"a": "b"}
    current["statuz"] = {}
    code, _, err = raw(
        api, "PUT", f"{PODS}/p", {"fieldValidation": "Strict"}, body=current
    )
    assert code == 400 and 'unknown field "statuz"' in err["message"]


def test_kubernetes_135_fields_are_known(api: client.ApiClient) -> None:
    body = pod("gang", workloadRef={"name": "w", "podGroup": "g"})
    code, _, _ = raw(api, "POST", PODS, {"fieldValidation": "Strict"}, body=body)
    assert code == 201


def test_custom_resources_accept_any_field(api: client.ApiClient) -> None:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "rf", "labelz": {}},
        "spec": {"whatever": 1},
    }
    path = "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"
    code, _, err = raw(api, "POST", path, {"fieldValidation": "Strict"}, body=body)
    assert code == 400 and 'unknown field "metadata.labelz"' in err["message"]
    del body["metadata"]["labelz"]
    code, _, _ = raw(api, "POST", path, {"fieldValidation": "Strict"}, body=body)
    assert code == 201


def test_unknown_fields_walks_lists_maps_and_preserved_values() -> None:
    table = ResourceTable()
    rt = next(r for r in table.snapshot() if r.kind == "Pod")
    api = openapi.OpenApi(table)
    obj = {
        "metadata": {"labels": {"any": "thing"}, "x": 1},
        "spec": {
            "containers": [
                {"name": "a", "ports": [{"containerPort": 1, "hostPorts": 2}]},
                {"name": "b", "livenessProbe": {"httpGet": {"port": "http"}}},
            ],
            "overhead": {"cpu": "1"},
        },
    }
    assert fieldcheck.unknown_fields(api, rt, obj) == [
        "metadata.x",
        "spec.containers[0].ports[0].hostPorts",
    ]


# -- one Event storage, two versions -------------------------------------------------


def _events_v1(name: str, regarding: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": name},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reason": "Scheduled",
        "action": "Binding",
        "note": f"assigned {regarding}",
        "type": "Normal",
        "reportingController": "placewise",
        "reportingInstance": "placewise-0",
        "regarding": {"kind": "Pod", "namespace": "ml", "name": regarding, "uid": "u"},
        "deprecatedCount": 2,
    }


def test_events_v1_are_core_events(
    api: client.ApiClient, core: client.CoreV1Api
) -> None:
    path = "/apis/events.k8s.io/v1/namespaces/ml/events"
    assert raw(api, "POST", path, body=_events_v1("e1", "p"))[0] == 201
    assert raw(api, "POST", path, body=_events_v1("e2", "q"))[0] == 201
    listed = core.list_namespaced_event(
        "ml", field_selector="involvedObject.name=p,involvedObject.uid=u"
    ).items
    assert [(e.metadata.name, e.message, e.count) for e in listed] == [
        ("e1", "assigned p", 2)
    ]
    assert listed[0].reporting_component == "placewise"
    assert (
        len(core.list_namespaced_event("ml", field_selector="source=placewise").items)
        == 2
    )
    _, _, back = raw(api, "GET", f"{path}/e1")
    assert {k: v for k, v in back.items() if k != "metadata"} == {
        k: v for k, v in _events_v1("e1", "p").items() if k != "metadata"
    }
    _, _, selected = raw(api, "GET", path, {"fieldSelector": "regarding.name=q"})
    assert [i["metadata"]["name"] for i in selected["items"]] == ["e2"]
    code, _, err = raw(api, "GET", path, {"fieldSelector": "involvedObject.name=q"})
    assert code == 400 and "field label not supported" in err["message"]


def test_core_write_is_readable_and_patchable_as_events_v1(
    api: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_event(
        "ml",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="c1"),
            involved_object=client.V1ObjectReference(kind="Node", name="n1"),
            message="core",
            reason="X",
            source=client.V1EventSource(component="kubelet", host="n1"),
        ),
    )
    path = "/apis/events.k8s.io/v1/namespaces/ml/events/c1"
    _, _, ev = raw(api, "GET", path)
    assert (ev["note"], ev["regarding"]["name"], ev["deprecatedSource"]) == (
        "core",
        "n1",
        {"component": "kubelet", "host": "n1"},
    )
    code, _, patched = raw(
        api,
        "PATCH",
        path,
        headers={"Content-Type": "application/merge-patch+json"},
        body={"note": "edited"},
    )
    assert code == 200 and patched["note"] == "edited"
    assert core.read_namespaced_event("c1", "ml").message == "edited"
