"""A high-priority gang preempts through evictions; a PodDisruptionBudget blocks one
victim, so the plan moves to another."""

from __future__ import annotations

import re
import time

from placewise.adapters.emulator import gojson
from tests.adapters.serve.conftest import (
    assert_sound,
    debug,
    http,
    kueue_group,
    metric,
    namespace,
    node,
    wait_for,
)

PRIORITY_CLASS = {
    "apiVersion": "scheduling.k8s.io/v1",
    "kind": "PriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}


def test_high_priority_gang_preempts_through_evictions_pdb_blocks_one(harness_factory):
    """low-b then low-a (newer, so the first candidate) fill the cluster; a PDB
    makes low-a unevictable.  The sidecar refuses to start evicting low-a,
    re-plans, evicts low-b through pods/eviction, and only then lets high bind
    on the freed nodes.  low-a is untouched, nothing is half-placed."""
    h = harness_factory(
        [namespace("ml"), PRIORITY_CLASS, *[node(f"n{i}") for i in range(1, 5)]]
    )
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    low_b = kueue_group("low-b", 2, gpus=4, labels={"app": "low-b"})
    h.create(*low_b)
    wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/low-b", {}).get("admitted"),
        what="low-b planned",
    )
    st.run_once()
    low_a = kueue_group("low-a", 2, gpus=4, labels={"app": "low-a"})
    h.create(*low_a)
    wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/low-a", {}).get("admitted"),
        what="low-a planned",
    )
    st.run_once()
    placed = h.placement("ml")
    assert all(placed.values()), placed
    h.custom.create_namespaced_custom_object(
        "policy",
        "v1",
        "ml",
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "keep-low-a", "namespace": "ml"},
            "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "low-a"}}},
        },
    )
    high = kueue_group("high", 2, gpus=4, priorityClassName="high")
    h.create(*high)
    wait_for(
        lambda: (
            metric(sc, "placewise_preemptions_total", kind="pod", result="blocked") >= 1
        ),
        what="PDB refusal",
    )
    wait_for(
        lambda: (
            not any(p["metadata"]["name"].startswith("low-b") for p in h.pods("ml"))
        ),
        what="low-b evicted",
    )
    wait_for(
        lambda: debug(sc)["gangs"].get("ml/high", {}).get("blocker", "x") is None,
        what="high ready",
    )
    st.run_once()
    after = h.placement("ml")
    assert {after["high-0"], after["high-1"]} == {placed["low-b-0"], placed["low-b-1"]}
    assert (
        after["low-a-0"] == placed["low-a-0"] and after["low-a-1"] == placed["low-a-1"]
    )
    assert_sound(h, {"low-a": ["low-a-0", "low-a-1"], "high": ["high-0", "high-1"]})
    preempted = wait_for(lambda: h.events("Preempted"), what="Preempted events")
    assert {e["regarding"]["name"] for e in preempted} <= {"low-b-0", "low-b-1"}
    assert all(
        re.match(r"Preempted by pod \S+ on node n\d", e["note"]) for e in preempted
    )
    assert metric(sc, "placewise_preemptions_total", kind="pod", result="evicted") >= 1


def test_preempt_verb_answers_plan_victims_on_the_planned_node(harness_factory):
    """With no budget in the way, /preempt names exactly the plan's victims on
    the pod's planned node, in the Meta form (UIDs only)."""
    held = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "placewise-serve", "namespace": "default"},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 3600},
    }
    h = harness_factory([namespace("ml"), PRIORITY_CLASS, node("n1"), node("n2"), held])
    sc = h.sidecar(leader_elect=True)  # a follower: it answers but never evicts
    h.create(*kueue_group("low", 2, gpus=4))
    plan = wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/low", {}).get("nodes"),
        what="low planned",
    )
    for name, target in plan.items():  # kube-scheduler's part, done by hand
        h.core.create_namespaced_pod_binding(
            name,
            "ml",
            {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name},
                "target": {"kind": "Node", "name": target},
            },
            _preload_content=False,
        )
    h.create(*kueue_group("high", 1, gpus=4, priorityClassName="high"))
    gp = wait_for(
        lambda: (g := debug(sc)["gangs"].get("ml/high", {})).get("victims") and g,
        what="high planned with victims",
    )
    target = gp["nodes"]["high-0"]
    pods = {p["metadata"]["name"]: p for p in h.pods("ml")}
    victims = [
        p
        for n, p in pods.items()
        if n.startswith("low") and p["spec"]["nodeName"] == target
    ]
    body = gojson.preemption_args(pods["high-0"], {target: (victims, 0)}, True)
    uids = ",".join(
        f'{{"UID":"{u}"}}' for u in sorted(v["metadata"]["uid"] for v in victims)
    )
    want = (
        '{"NodeNameToMetaVictims":{"'
        + target
        + '":{"Pods":['
        + uids
        + '],"NumPDBViolations":0}}}'
    )
    assert http(sc.url + "/scheduler/preempt", body)[1] == want.encode()
    other = "n2" if target == "n1" else "n1"
    body = gojson.preemption_args(pods["high-0"], {other: (victims, 0)}, True)
    assert (
        http(sc.url + "/scheduler/preempt", body)[1] == b'{"NodeNameToMetaVictims":{}}'
    )
    assert all(h.placement("ml")[n] for n in ("low-0", "low-1"))


def test_terminating_victims_are_waited_for_not_replaced(harness_factory):
    """Without a kubelet, evicted victims stay Terminating: the sidecar keeps
    them as the (already evicted) victims, evicts nobody else, and binds the
    preemptor only once the kubelet (here the test) confirms they are gone."""
    h = harness_factory(
        [namespace("ml"), PRIORITY_CLASS, *[node(f"n{i}") for i in range(1, 5)]],
        kubelet=False,
    )
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    for name in ("low-a", "low-b"):
        h.create(*kueue_group(name, 2, gpus=4))
        wait_for(
            lambda n=name: (
                debug(sc).get("gangs", {}).get(f"ml/{n}", {}).get("admitted")
            ),
            what=f"{name} planned",
        )
        st.run_once()
    assert all(h.placement("ml").values())
    h.create(*kueue_group("high", 2, gpus=4, priorityClassName="high"))

    def terminating() -> set[str]:
        return {
            p["metadata"]["name"]
            for p in h.pods("ml")
            if p["metadata"].get("deletionTimestamp")
        }

    # The victim gang's pods are evicted one request at a time: wait for
    # both rather than judging the moment between the two evictions.
    def both_terminating() -> set[str] | None:
        t = terminating()
        return t if len(t) >= 2 else None

    doomed = wait_for(both_terminating, what="victims terminating")
    victim = next(iter(doomed)).rsplit("-", 1)[0]
    assert doomed == {f"{victim}-0", f"{victim}-1"}
    blocker = wait_for(
        lambda: debug(sc)["gangs"]["ml/high"].get("blocker"), what="high waits"
    )
    assert blocker.startswith("waiting for 1 preempted workload(s)")
    time.sleep(1.0)  # several re-solves and actuator ticks
    assert terminating() == doomed, "nobody else is preempted meanwhile"
    st.run_once()
    assert h.placement("ml")["high-0"] is None
    for name in doomed:  # the kubelet confirms the deletions
        h.core.delete_namespaced_pod(
            name, "ml", grace_period_seconds=0, _preload_content=False
        )
    wait_for(
        lambda: debug(sc)["gangs"]["ml/high"].get("blocker", "x") is None,
        what="high ready",
    )
    st.run_once()
    placed = h.placement("ml")
    assert placed["high-0"] and placed["high-1"]
    survivor = "low-b" if victim == "low-a" else "low-a"
    assert placed[f"{survivor}-0"] and placed[f"{survivor}-1"]
