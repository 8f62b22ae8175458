"""Injected faults end with nothing double-bound, nothing lost, every gang whole
or pending with a reason."""

from __future__ import annotations

import json
import threading

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

NODES = [node(f"n{i}") for i in range(1, 7)]


def leads(sc) -> bool:
    """What the replica reports on /metrics (placewise_is_leader)."""
    return metric(sc, "placewise_is_leader") == 1


def _admitted(sc, *keys: str) -> bool:
    gangs = debug(sc).get("gangs", {})
    return all(gangs.get(k, {}).get("admitted") for k in keys)


def test_watch_drops_410_and_500s_lose_no_change(harness_factory):
    """Lists fail with 500, watches are cut mid-stream and expire (410, also after
    a compaction): the informers re-list or resume and every gang is seen,
    planned and bound whole."""
    h = harness_factory([namespace("ml"), *NODES])
    h.emu.faults.fail(500, count=3, method="GET", path=r"^/api/v1/pods\?")
    h.emu.faults.drop_watches(after_events=1, count=2, resource="pods")
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    gangs = {f"g{i}": kueue_group(f"g{i}", 2, gpus=2) for i in range(4)}
    h.create(*gangs["g0"])
    h.emu.faults.drop_active_watches(resource="pods")
    h.create(*gangs["g1"])
    h.emu.faults.expire_next_watch(count=1, resource="pods")
    h.emu.faults.drop_active_watches(resource="pods")
    h.create(*gangs["g2"])
    h.emu.compact()
    h.emu.faults.drop_active_watches(resource="pods")
    h.create(*gangs["g3"])
    wait_for(lambda: _admitted(sc, *[f"ml/{g}" for g in gangs]), what="all planned")
    st.run_once()
    assert all(h.placement("ml").values())
    assert_sound(h, {g: [p["metadata"]["name"] for p in ps] for g, ps in gangs.items()})
    assert (
        metric(sc, "placewise_watch_restarts_total", resource="pods", reason="gone")
        >= 1
    )
    assert (
        metric(sc, "placewise_watch_restarts_total", resource="pods", reason="error")
        >= 1
    )


def test_bind_conflicts_and_server_errors_are_retried(harness_factory):
    """409s and 500s on pods/binding are retried: the gang binds whole, no rollback."""
    h = harness_factory([namespace("ml"), *NODES])
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    gang = kueue_group("g", 3, gpus=2)
    h.create(*gang)
    wait_for(lambda: _admitted(sc, "ml/g"), what="planned")
    h.emu.faults.conflict_on_write(nth=2, count=1, resource="pods")
    h.emu.faults.fail(500, count=2, method="POST", path=r"/binding$")
    st.run_once()
    assert all(h.placement("ml").values())
    posts = [
        p for m, p in h.emu.faults.requests if m == "POST" and p.endswith("/binding")
    ]
    assert len(posts) >= 3 + 2 + 1, posts  # every member, two 500s, one 409
    assert metric(sc, "placewise_bind_failures_total") == 0
    assert metric(sc, "placewise_bind_total", result="bound") == 1


def test_permanent_bind_failure_rolls_back_the_bound_part(harness_factory):
    """One member can never be bound: the members already bound are evicted
    again, so the gang is not left half-bound, and its pods say why."""
    h = harness_factory([namespace("ml"), *NODES])
    sc = h.sidecar()
    gang = kueue_group("g", 3, gpus=2)
    h.create(*gang)
    nodes = wait_for(
        lambda: _admitted(sc, "ml/g") and debug(sc)["gangs"]["ml/g"]["nodes"],
        what="planned",
    )
    h.emu.faults.fail(500, count=None, method="POST", path=r"/pods/g-2/binding$")
    pods = {p["metadata"]["name"]: p for p in h.pods("ml")}
    reply = json.loads(
        http(
            sc.url + "/scheduler/bind", gojson.binding_args(pods["g-0"], nodes["g-0"])
        )[1]
    )
    assert "rolled back 2 placed pod(s)" in reply["Error"]
    h.emu.faults.clear()
    left = h.placement("ml")
    assert left == {"g-2": None}, left  # the bound two were evicted, none half-bound
    assert metric(sc, "placewise_bind_failures_total") == 1
    wait_for(
        lambda: any("rolled back" in e["note"] for e in h.events("FailedScheduling")),
        what="event",
    )
    wait_for(
        lambda: (
            "waiting for pods: 1/3"
            in debug(sc)["gangs"].get("ml/g", {}).get("reason", "")
        ),
        what="pending with a reason",
    )


def test_killed_mid_gang_restart_finishes_from_the_recorded_assignment(
    harness_factory,
):
    """The leader dies while one member's binding keeps failing (three of four
    are bound); the replica that takes over finds the whole assignment on the
    bound members and binds the fourth to its recorded node: no decision lost,
    nothing bound twice or elsewhere."""
    h = harness_factory([namespace("ml"), *NODES])
    a = h.sidecar(leader_elect=True, identity="a")
    wait_for(lambda: leads(a), what="a leads")
    gang = kueue_group("k", 4, gpus=2)
    h.create(*gang)
    nodes = wait_for(
        lambda: _admitted(a, "ml/k") and debug(a)["gangs"]["ml/k"]["nodes"],
        what="planned",
    )
    wait_for(lambda: debug(a)["gangs"]["ml/k"]["blocker"] is None, what="ready")
    h.emu.faults.fail(503, count=None, method="POST", path=r"/pods/k-2/binding$")
    pods = {p["metadata"]["name"]: p for p in h.pods("ml")}
    replies: list[bytes] = []
    caller = threading.Thread(
        target=lambda: replies.append(
            http(
                a.url + "/scheduler/bind",
                gojson.binding_args(pods["k-0"], nodes["k-0"]),
            )[1]
        )
    )
    caller.start()
    wait_for(
        lambda: sum(1 for v in h.placement("ml").values() if v) == 3,
        what="three members bound",
    )
    a.stop(release=False)  # killed mid-gang: the Lease is left to expire
    caller.join(10)
    half = h.placement("ml")
    assert half["k-2"] is None and sum(1 for v in half.values() if v) == 3, half
    h.emu.faults.clear()
    b = h.sidecar(leader_elect=True, identity="b")
    done = wait_for(
        lambda: all((p := h.placement("ml")).values()) and p,
        timeout=15,
        what="b completes the gang",
    )
    assert done == nodes
    assert leads(b)
    assert_sound(h, {"k": list(nodes)})


def test_two_replicas_only_the_leader_acts_and_failover_finishes(harness_factory):
    """Two binder replicas: only the Lease holder binds (the follower's /bind
    refuses); when the leader dies the other takes over and binds the rest."""
    h = harness_factory([namespace("ml"), *NODES])
    a = h.sidecar(mode="binder", leader_elect=True, identity="a")
    wait_for(lambda: leads(a), what="a leads")
    b = h.sidecar(mode="binder", leader_elect=True, identity="b")
    first = [
        kueue_group(f"x{i}", 2, gpus=2, schedulerName="placewise") for i in range(2)
    ]
    h.create(*[p for g in first for p in g])
    wait_for(lambda: all(h.placement("ml").values()), what="first gangs bound")
    assert not leads(b)
    bind = b'{"PodName":"x0-0","PodNamespace":"ml","PodUID":"u","Node":"n1"}'
    refused = wait_for(
        lambda: (
            "(leader: a)"
            in (r := json.loads(http(b.url + "/scheduler/bind", bind)[1])["Error"])
            and r
        ),
        what="follower refuses",
    )
    assert refused.startswith("placewise: this replica is not the leader")
    wait_for(lambda: len(h.events("Scheduled")) >= 4, what="events")
    assert {e["reportingInstance"] for e in h.events("Scheduled")} == {"a"}
    a.stop(release=False)
    second = [
        kueue_group(f"y{i}", 2, gpus=2, schedulerName="placewise") for i in range(2)
    ]
    h.create(*[p for g in second for p in g])
    wait_for(
        lambda: all(h.placement("ml").values()),
        timeout=15,
        what="b binds after failover",
    )
    assert leads(b)
    gangs = {
        g[0]["metadata"]["labels"]["kueue.x-k8s.io/pod-group-name"]: [
            p["metadata"]["name"] for p in g
        ]
        for g in first + second
    }
    assert_sound(h, gangs)
    wait_for(
        lambda: {e["reportingInstance"] for e in h.events("Scheduled")} == {"a", "b"},
        what="b's events",
    )


def test_follow_mode_acts_exactly_while_its_kube_scheduler_leads(harness_factory):
    """--lease-follow: the replica whose pod's kube-scheduler holds the Lease
    (holder ``<pod>_<uuid>``) acts; the other refuses; a hand-over switches."""
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "placewise-scheduler", "namespace": "default"},
        "spec": {
            "holderIdentity": "pod-a_4f1c",
            "leaseDurationSeconds": 15,
            "renewTime": "2026-01-01T00:00:00.000000Z",
        },
    }
    h = harness_factory([namespace("ml"), node("n1"), lease])
    common = {
        "leader_elect": True,
        "lease_follow": True,
        "lease_name": "placewise-scheduler",
    }
    a = h.sidecar(identity="pod-a", **common)
    b = h.sidecar(identity="pod-b", **common)
    wait_for(lambda: leads(a), what="a follows its scheduler")
    assert not leads(b)
    current = json.loads(
        h.custom.get_namespaced_custom_object(
            "coordination.k8s.io",
            "v1",
            "default",
            "leases",
            "placewise-scheduler",
            _preload_content=False,
        ).data
    )
    current["spec"]["holderIdentity"] = "pod-b_9e2d"
    h.custom.replace_namespaced_custom_object(
        "coordination.k8s.io", "v1", "default", "leases", "placewise-scheduler", current
    )
    wait_for(lambda: leads(b) and not leads(a), what="hand-over")


def test_solver_timeout_and_error_fall_back_to_greedy(harness_factory):
    """An optimizer that overruns (or fails) never leaves the sidecar without a
    plan: greedy answers, the fallback is counted, and the gang still binds."""
    h = harness_factory([namespace("ml"), *NODES[:2]])
    slow = h.sidecar(solver="cpsat", time_limit=0.01, solver_grace=0.0)
    broken = h.sidecar(solver="no-such-solver", leader_elect=True, lease_name="x")
    h.create(*kueue_group("g", 2, gpus=2))
    plan = wait_for(lambda: _admitted(slow, "ml/g") and debug(slow), what="plan")
    solver = plan["plan"]["solver"]
    assert solver["name"] == "greedy" or solver["status"] == "FALLBACK", solver
    fell_back = sum(
        metric(slow, "placewise_solver_fallbacks_total", reason=r)
        for r in ("timeout", "time-limit")
    )
    assert fell_back >= 1
    plan = wait_for(lambda: _admitted(broken, "ml/g") and debug(broken), what="plan")
    assert plan["plan"]["solver"]["name"] == "greedy"
    assert metric(broken, "placewise_solver_fallbacks_total", reason="error") >= 1
    st = h.standin(slow, start=False)
    st.run_once()
    assert all(h.placement("ml").values())
