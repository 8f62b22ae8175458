"""The extender verbs over real HTTP with golden bodies as kube-scheduler sends them.

Requests are byte-for-byte what kube-scheduler marshals (capitalized keys,
``null`` for the unused of Nodes/NodeNames), written out by hand in the shape
of cluster-protocols §1.4 or produced by the emulator's Go marshaller; replies
are compared byte for byte.
"""

from __future__ import annotations

import json

import pytest

from placewise.adapters.emulator import gojson
from tests.adapters.serve.conftest import (
    debug,
    http,
    kueue_group,
    namespace,
    node,
    wait_for,
)


@pytest.fixture
def planned(harness_factory):
    """ml/job-a (2 x 4 GPUs) admitted on two of n1..n3; ml/job-b incomplete."""
    h = harness_factory([namespace("ml"), node("n1"), node("n2"), node("n3")])
    sc = h.sidecar()
    h.create(*kueue_group("job-a", 2, gpus=4), kueue_group("job-b", 2)[0])
    plan = wait_for(
        lambda: (
            (d := debug(sc)).get("gangs", {}).get("ml/job-a", {}).get("admitted")
            and "ml/job-b" in d["gangs"]
            and d
        ),
        what="plan",
    )
    pods = {p["metadata"]["name"]: p for p in h.pods("ml")}
    return h, sc, plan["gangs"]["ml/job-a"]["nodes"], pods


def post(sc, verb: str, body: bytes) -> bytes:
    status, reply = http(f"{sc.url}/scheduler/{verb}", body)
    assert status == 200, reply
    return reply


def test_filter_golden_node_names(planned):
    """nodeCacheCapable: the planned host survives, the others are unresolvable."""
    _h, sc, nodes, pods = planned
    uid = pods["job-a-0"]["metadata"]["uid"]
    target = nodes["job-a-0"]
    body = (
        '{"Pod":{"metadata":{"name":"job-a-0","namespace":"ml","uid":"' + uid + '"},'
        '"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":'
        '{"example.com/gpu":"4"}}}]}},"Nodes":null,"NodeNames":["n1","n2","n3"]}'
    ).encode()
    others = ",".join(
        f'"{n}":"gang ml/job-a: planned for {target}"'
        for n in ("n1", "n2", "n3")
        if n != target
    )
    want = (
        '{"Nodes":null,"NodeNames":["' + target + '"],"FailedNodes":{},'
        '"FailedAndUnresolvableNodes":{' + others + '},"Error":""}'
    ).encode()
    assert post(sc, "filter", body) == want


def test_filter_go_marshalled_full_nodes(planned):
    """Not nodeCacheCapable: full Node objects in, surviving Node objects out."""
    h, sc, nodes, pods = planned
    node_objs = [
        json.loads(h.core.read_node(n, _preload_content=False).data)
        for n in ("n1", "n2", "n3")
    ]
    body = gojson.extender_args(pods["job-a-1"], node_objs, node_cache_capable=False)
    reply = json.loads(post(sc, "filter", body))
    assert list(reply) == [
        "Nodes",
        "NodeNames",
        "FailedNodes",
        "FailedAndUnresolvableNodes",
        "Error",
    ]
    assert reply["NodeNames"] is None
    assert [n["metadata"]["name"] for n in reply["Nodes"]["items"]] == [
        nodes["job-a-1"]
    ]
    assert reply["Nodes"]["items"][0] == gojson.informer_view(
        next(n for n in node_objs if n["metadata"]["name"] == nodes["job-a-1"]), "Node"
    )


def test_filter_pending_gang_fails_every_node_with_reason(planned):
    _h, sc, _nodes, pods = planned
    body = gojson.extender_args(pods["job-b-0"], [node("n1"), node("n2")], True)
    reason = "gang ml/job-b: waiting for pods: 1/2 of the gang exist"
    assert (
        post(sc, "filter", body)
        == (
            '{"Nodes":null,"NodeNames":[],"FailedNodes":{"n1":"'
            + reason
            + '","n2":"'
            + reason
            + '"},"FailedAndUnresolvableNodes":{},"Error":""}'
        ).encode()
    )


def test_prioritize_golden(planned):
    _h, sc, nodes, pods = planned
    body = gojson.extender_args(
        pods["job-a-0"], [node("n1"), node("n2"), node("n3")], True
    )
    want = (
        "["
        + ",".join(
            f'{{"Host":"{n}","Score":{10 if n == nodes["job-a-0"] else 0}}}'
            for n in ("n1", "n2", "n3")
        )
        + "]"
    )
    assert post(sc, "prioritize", body) == want.encode()


def test_preempt_golden_veto(planned):
    """The plan needs no victims for job-a: the empty map vetoes preemption."""
    _h, sc, _nodes, _pods = planned
    body = (
        b'{"Pod":{"metadata":{"name":"job-a-0","namespace":"ml","uid":"6f1c"},'
        b'"spec":{"priority":1000}},"NodeNameToVictims":null,'
        b'"NodeNameToMetaVictims":{"n1":{"Pods":[{"UID":"aa11"},{"UID":"bb22"}],'
        b'"NumPDBViolations":0},"n2":{"Pods":[{"UID":"cc33"}],"NumPDBViolations":1}}}'
    )
    assert post(sc, "preempt", body) == b'{"NodeNameToMetaVictims":{}}'


def test_bind_golden_binds_the_whole_gang(planned):
    """One bind call binds every member on its planned node; the member's own
    later call succeeds; a call naming another node is refused."""
    h, sc, nodes, pods = planned
    a0, a1 = pods["job-a-0"], pods["job-a-1"]
    wrong = next(n for n in ("n1", "n2", "n3") if n != nodes["job-a-1"])
    refused = json.loads(post(sc, "bind", gojson.binding_args(a1, wrong)))
    assert "planned for" in refused["Error"]
    assert all(v is None for v in h.placement("ml").values())
    body = (
        '{"PodName":"job-a-0","PodNamespace":"ml","PodUID":"'
        + a0["metadata"]["uid"]
        + '","Node":"'
        + nodes["job-a-0"]
        + '"}'
    ).encode()
    assert post(sc, "bind", body) == b'{"Error":""}'
    placed = h.placement("ml")
    assert placed["job-a-0"] == nodes["job-a-0"]
    assert placed["job-a-1"] == nodes["job-a-1"]
    assert (
        post(sc, "bind", gojson.binding_args(a1, nodes["job-a-1"])) == b'{"Error":""}'
    )
    annotations = {
        p["metadata"]["name"]: p["metadata"]["annotations"] for p in h.pods("ml")
    }
    assert annotations["job-a-1"]["placewise.io/gang"] == "ml/job-a"
    assert json.loads(annotations["job-a-1"]["placewise.io/assignment"]) == {
        "main": {n: list(nodes.values()).count(n) for n in set(nodes.values())}
    }


def test_malformed_requests_and_http_surface(planned):
    _h, sc, _nodes, _pods = planned
    reply = json.loads(post(sc, "filter", b"{not json"))
    assert reply["Error"].startswith("placewise: bad filter request: not JSON")
    assert post(sc, "bind", b"[]").startswith(b'{"Error":"placewise: bad bind')
    assert http(sc.url + "/scheduler/unknown", b"{}")[0] == 404
    assert http(sc.url + "/healthz") == (200, b"ok\n")
    assert http(sc.url + "/readyz") == (200, b"ok\n")
    status, text = http(sc.metrics_url + "/metrics")
    assert status == 200
    for name in (
        "placewise_solve_duration_seconds_bucket",
        "placewise_extender_request_duration_seconds_bucket",
        "placewise_gangs_pending",
        "placewise_gangs_admitted",
        "placewise_preemptions_total",
        "placewise_solver_fallbacks_total",
        "placewise_bind_failures_total",
    ):
        assert name.encode() in text, name
