"""pods/binding and pods/eviction (with PodDisruptionBudgets) through the client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client

from tests.adapters.emulator.conftest import pod


def _bind(core: client.CoreV1Api, name: str, node: str, **meta) -> object:
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name=name, **meta),
        target=client.V1ObjectReference(kind="Node", name=node),
    )
    # 37.0.2 cannot deserialize the Status reply as V1Binding: read it raw.
    return core.create_namespaced_pod_binding(name, "ml", body, _preload_content=False)


def test_binding_sets_node_and_second_binding_conflicts(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1"))
    resp = _bind(core, "p1", "n2")
    assert resp.status == 201
    assert json.loads(resp.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    bound = core.read_namespaced_pod("p1", "ml")
    assert bound.spec.node_name == "n2"
    assert any(
        c.type == "PodScheduled" and c.status == "True" for c in bound.status.conditions
    )
    with pytest.raises(client.ApiException) as err:
        _bind(core, "p1", "n3")
    assert err.value.status == 409
    assert json.loads(err.value.body)["message"] == (
        'Operation cannot be fulfilled on pods/binding "p1": pod p1 is already '
        "assigned "
        'to node "n2"'
    )


def test_binding_a_gated_pod_conflicts(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("p1", schedulingGates=[{"name": "hold"}]))
    with pytest.raises(client.ApiException) as err:
        _bind(core, "p1", "n1")
    assert err.value.status == 409
    assert json.loads(err.value.body)["message"].endswith(
        "pod p1 has non-empty .spec.schedulingGates"
    )


def test_binding_preconditions_and_missing_pod(core: client.CoreV1Api) -> None:
    created = core.create_namespaced_pod("ml", pod("p1"))
    with pytest.raises(client.ApiException) as err:
        _bind(core, "p1", "n1", uid="other-uid")
    assert err.value.status == 409
    assert (
        "Precondition failed: UID in precondition: other-uid"
        in json.loads(err.value.body)["message"]
    )
    assert _bind(core, "p1", "n1", uid=created.metadata.uid).status == 201
    with pytest.raises(client.ApiException) as err:
        _bind(core, "ghost", "n1")
    assert err.value.status == 404


def _pdb(name: str, **spec) -> client.V1PodDisruptionBudget:
    return client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodDisruptionBudgetSpec(
            selector=client.V1LabelSelector(match_labels={"app": "db"}), **spec
        ),
    )


def _evict(core: client.CoreV1Api, name: str) -> None:
    core.create_namespaced_pod_eviction(
        name,
        "ml",
        client.V1Eviction(metadata=client.V1ObjectMeta(name=name, namespace="ml")),
    )


def test_eviction_respects_pdb(core: client.CoreV1Api, api: client.ApiClient) -> None:
    policy = client.PolicyV1Api(api)
    for i, node in enumerate(("n1", "n2", "n3")):
        core.create_namespaced_pod(
            "ml", pod(f"db-{i}", labels={"app": "db"}, nodeName=node)
        )
    policy.create_namespaced_pod_disruption_budget("ml", _pdb("db", min_available=2))
    status = policy.read_namespaced_pod_disruption_budget("db", "ml").status
    assert (
        status.current_healthy,
        status.desired_healthy,
        status.disruptions_allowed,
        status.expected_pods,
    ) == (3, 2, 1, 3)

    _evict(core, "db-0")
    remaining = [p.metadata.name for p in core.list_namespaced_pod("ml").items]
    assert remaining == ["db-1", "db-2"]

    with pytest.raises(client.ApiException) as err:
        _evict(core, "db-1")
    assert err.value.status == 429
    body = json.loads(err.value.body)
    assert body["reason"] == "TooManyRequests"
    assert (
        body["message"]
        == "Cannot evict pod as it would violate the pod's disruption budget."
    )
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget db needs 2 healthy pods and has 2 "
            "currently",
        }
    ]
    assert core.read_namespaced_pod("db-1", "ml").metadata.deletion_timestamp is None


def test_eviction_of_pending_pod_ignores_pdb(
    core: client.CoreV1Api, api: client.ApiClient
) -> None:
    policy = client.PolicyV1Api(api)
    core.create_namespaced_pod("ml", pod("db-0", labels={"app": "db"}))
    policy.create_namespaced_pod_disruption_budget("ml", _pdb("db", max_unavailable=0))
    _evict(core, "db-0")
    assert core.list_namespaced_pod("ml").items == []


def test_two_pdbs_for_one_pod_is_500(
    core: client.CoreV1Api, api: client.ApiClient
) -> None:
    policy = client.PolicyV1Api(api)
    core.create_namespaced_pod("ml", pod("db-0", labels={"app": "db"}, nodeName="n1"))
    policy.create_namespaced_pod_disruption_budget("ml", _pdb("a", min_available=0))
    policy.create_namespaced_pod_disruption_budget("ml", _pdb("b", min_available=0))
    with pytest.raises(client.ApiException) as err:
        _evict(core, "db-0")
    assert err.value.status == 500
    assert "more than one PodDisruptionBudget" in json.loads(err.value.body)["message"]
