"""``POST /scheduler/bind`` binds only what the plan decided.

Whoever calls it, a bind names a pod of a gang placewise manages and the node
the current plan chose for that pod, or it is refused with an ``Error`` and
nothing is written: no pod of another scheduler, no other node, no node whose
taints the pod does not tolerate (also when the taint arrived after the plan).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from placewise.adapters.emulator import gojson
from tests.adapters.serve.conftest import (
    assert_sound,
    http,
    kueue_group,
    namespace,
    node,
    pod,
    wait_for,
)

JSON = dict[str, Any]
TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}


def tainted(name: str) -> JSON:
    n = node(name)
    n["spec"] = {"taints": [TAINT]}
    return n


def bind(sc: Any, body: bytes) -> str:
    status, reply = http(sc.url + "/scheduler/bind", body)
    assert status == 200, reply
    return str(json.loads(reply)["Error"])


def planned_nodes(sc: Any, key: str) -> dict[str, str] | None:
    state = sc.loop.state
    gp = state.gangs.get(key) if state is not None else None
    return dict(gp.nodes) if gp is not None and gp.admitted else None


@pytest.fixture
def cluster(harness_factory):
    """n1, n2, n4 free; n3 tainted; gang ml/job (2 x 4 GPUs) planned on two
    free nodes; ml/stray belongs to another scheduler; ml/half is a gang of
    two with one member so far."""
    h = harness_factory(
        [namespace("ml"), node("n1"), node("n2"), tainted("n3"), node("n4")]
    )
    sc = h.sidecar()
    stray = pod("stray", schedulerName="other-scheduler")
    h.create(*kueue_group("job", 2, gpus=4), stray, kueue_group("half", 2)[0])
    nodes = wait_for(lambda: planned_nodes(sc, "ml/job"), what="plan")
    assert "n3" not in nodes.values()
    pods = {p["metadata"]["name"]: p for p in h.pods("ml")}
    return h, sc, nodes, pods


def test_bind_refuses_what_the_plan_did_not_decide(cluster):
    h, sc, nodes, pods = cluster
    job0 = pods["job-0"]
    other = next(n for n in ("n1", "n2", "n4") if n != nodes["job-0"])
    refusals = {
        "unmanaged pod": (
            gojson.binding_args(pods["stray"], "n1"),
            "not managed by placewise",
        ),
        "untolerated taint": (gojson.binding_args(job0, "n3"), "planned for"),
        "another node": (gojson.binding_args(job0, other), "planned for"),
        "gang not placed": (
            gojson.binding_args(pods["half-0"], "n1"),
            "waiting for pods: 1/2",
        ),
        "stale uid": (
            json.dumps(
                {
                    "PodName": "job-0",
                    "PodNamespace": "ml",
                    "PodUID": "not-the-uid",
                    "Node": nodes["job-0"],
                }
            ).encode(),
            "has uid",
        ),
        "no such pod": (
            json.dumps(
                {"PodName": "ghost", "PodNamespace": "ml", "PodUID": "", "Node": "n1"}
            ).encode(),
            "not found",
        ),
    }
    for case, (body, why) in refusals.items():
        error = bind(sc, body)
        assert why in error, (case, error)
        assert all(v is None for v in h.placement("ml").values()), case
    # What the plan decided is bound, whole.
    assert bind(sc, gojson.binding_args(job0, nodes["job-0"])) == ""
    placed = h.placement("ml")
    assert {k: placed[k] for k in nodes} == nodes
    assert placed["stray"] is None and placed["half-0"] is None
    assert_sound(h, {"job": list(nodes)})


def test_taint_after_the_plan_stops_the_bind_then_the_gang_moves(cluster):
    """The planned node is tainted after the plan was made: a bind against
    that plan is refused on the live node's taint (the decision is taken back
    only because the cluster changed), and the re-plan binds elsewhere."""
    h, sc, nodes, pods = cluster
    stale = sc.loop.state
    target = nodes["job-0"]
    h.core.patch_node(target, {"spec": {"taints": [TAINT]}})
    wait_for(
        lambda: (sc.cache.get("Node", target) or {}).get("spec", {}).get("taints"),
        what="taint seen",
    )
    # The race kube-scheduler (or anyone) can hit: a bind served from the
    # plan made before the taint.
    reason = sc.binder.bind_gang(stale, "ml/job")
    assert reason is not None and "dedicated=inference:NoSchedule" in reason, reason
    assert all(v is None for v in h.placement("ml").values())
    # Through the wire: the old node is refused whichever check sees it first.
    error = bind(sc, gojson.binding_args(pods["job-0"], target))
    assert "taint" in error or "planned for" in error, error
    assert all(v is None for v in h.placement("ml").values())
    moved = wait_for(
        lambda: (n := planned_nodes(sc, "ml/job")) and target not in n.values() and n,
        what="re-plan away from the tainted node",
    )
    assert bind(sc, gojson.binding_args(pods["job-0"], moved["job-0"])) == ""
    placed = h.placement("ml")
    assert {k: placed[k] for k in moved} == moved
    assert not {"n3", target} & set(moved.values())
    assert_sound(h, {"job": list(moved)})
