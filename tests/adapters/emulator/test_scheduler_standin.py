"""The kube-scheduler stand-in against a stub extender that records the wire bytes."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator
from placewise.adapters.emulator.scheduler_standin import (
    ExtenderConfig,
    SchedulerStandin,
)
from tests.adapters.emulator.conftest import node, pod

Reply = Callable[[str, dict[str, Any]], Any]


class StubExtender:
    """Records (path, headers, raw body); answers ``reply(verb, decoded body)``."""

    def __init__(self, reply: Reply) -> None:
        self.calls: list[tuple[str, dict[str, str], bytes]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                stub.calls.append((self.path, dict(self.headers), raw))
                data = json.dumps(
                    reply(self.path.rsplit("/", 1)[-1], json.loads(raw))
                ).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.prefix = f"http://127.0.0.1:{self.server.server_address[1]}/scheduler/"

    def bodies(self, verb: str) -> list[bytes]:
        return [raw for path, _, raw in self.calls if path.endswith("/" + verb)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cluster() -> Iterator[Emulator]:
    objects = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        node("n1"),
        node("n2"),
        node("n3"),
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        },
    ]
    with Emulator(objects) as emu:
        yield emu


def _core(emu: Emulator) -> client.CoreV1Api:
    return client.CoreV1Api(emu.api_client())


def test_filter_request_is_go_marshalled_extender_args(cluster: Emulator) -> None:
    """nodeCacheCapable: names only, Nodes null; survivor bound via pods/binding."""

    def reply(verb: str, args: dict[str, Any]) -> Any:
        return {
            "Nodes": None,
            "NodeNames": ["n2"],
            "FailedNodes": {"n1": "busy"},
            "FailedAndUnresolvableNodes": {"n3": "wrong flavor"},
            "Error": "",
        }

    stub = StubExtender(reply)
    core = _core(cluster)
    body = pod("w-0", cpu="1000m")
    body["metadata"]["annotations"] = {"note": "<a&b>"}
    uid = core.create_namespaced_pod("ml", body).metadata.uid
    sched = SchedulerStandin(
        cluster,
        [
            ExtenderConfig(
                url_prefix=stub.prefix,
                filter_verb="filter",
                prioritize_verb="prioritize",
                node_cache_capable=True,
            )
        ],
    )
    outcomes = sched.run_once()
    stub.close()

    assert [(o.pod, o.result, o.node) for o in outcomes] == [("ml/w-0", "bound", "n2")]
    assert core.read_namespaced_pod("w-0", "ml").spec.node_name == "n2"
    [(path, headers, raw)] = stub.calls  # one survivor: prioritize is skipped
    assert path == "/scheduler/filter"
    assert headers["Content-Type"] == "application/json"
    assert raw.startswith(
        b'{"Pod":{"metadata":{"name":"w-0","namespace":"ml","uid":"'
        + uid.encode()
        + b'","resourceVersion":"'
    )
    assert raw.endswith(b'},"Nodes":null,"NodeNames":["n1","n2","n3"]}')
    assert (
        b'"kind"' not in raw and b'"apiVersion"' not in raw
    )  # informer objects: no TypeMeta
    assert b": " not in raw and b", " not in raw  # compact
    assert (
        b'"annotations":{"note":"\\u003ca\\u0026b\\u003e"}' in raw
    )  # Go HTML escaping
    assert b'"resources":{"requests":{"cpu":"1"}}' in raw  # canonical quantity
    assert raw.index(b'},"spec":{') < raw.index(b'},"status":{"phase":"Pending"')
    assert json.loads(raw)["Pod"]["spec"]["containers"][0]["name"] == "main"


def test_node_objects_prioritize_and_extender_bind(cluster: Emulator) -> None:
    """Not cache-capable: full NodeList, NodeNames null; the extender binds itself."""
    core = _core(cluster)

    def reply(verb: str, args: dict[str, Any]) -> Any:
        if verb == "filter":
            return {
                "Nodes": args["Nodes"],
                "NodeNames": None,
                "FailedNodes": None,
                "FailedAndUnresolvableNodes": None,
                "Error": "",
            }
        if verb == "prioritize":
            return [
                {"Host": "n1", "Score": 0},
                {"Host": "n2", "Score": 3},
                {"Host": "n3", "Score": 10},
            ]
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(name=args["PodName"], uid=args["PodUID"]),
            target=client.V1ObjectReference(kind="Node", name=args["Node"]),
        )
        core.create_namespaced_pod_binding(
            args["PodName"], args["PodNamespace"], binding, _preload_content=False
        )
        return {"Error": ""}

    stub = StubExtender(reply)
    uid = core.create_namespaced_pod("ml", pod("w-1")).metadata.uid
    sched = SchedulerStandin(
        cluster,
        [
            ExtenderConfig(
                url_prefix=stub.prefix,
                filter_verb="filter",
                prioritize_verb="prioritize",
                bind_verb="bind",
                weight=2,
            )
        ],
    )
    outcomes = sched.run_once()
    stub.close()

    assert [(o.result, o.node) for o in outcomes] == [("bound", "n3")]
    assert core.read_namespaced_pod("w-1", "ml").spec.node_name == "n3"
    [filter_body] = stub.bodies("filter")
    assert b',"Nodes":{"metadata":{},"items":[{"metadata":{"name":"n1",' in filter_body
    assert filter_body.endswith(b']},"NodeNames":null}')
    assert b'"daemonEndpoints":{"kubeletEndpoint":{"Port":0}}' in filter_body
    assert stub.bodies("prioritize") == [filter_body]
    assert stub.bodies("bind") == [
        b'{"PodName":"w-1","PodNamespace":"ml","PodUID":"'
        + uid.encode()
        + b'","Node":"n3"}'
    ]


def test_unschedulable_pod_gets_condition(cluster: Emulator) -> None:
    core = _core(cluster)
    core.create_namespaced_pod("ml", pod("huge", cpu="64"))
    core.create_namespaced_pod("ml", pod("picky", nodeSelector={"zone": "mars"}))
    outcomes = SchedulerStandin(cluster).run_once()
    assert {(o.pod, o.result) for o in outcomes} == {
        ("ml/huge", "unschedulable"),
        ("ml/picky", "unschedulable"),
    }
    cond = next(
        c
        for c in core.read_namespaced_pod("huge", "ml").status.conditions
        if c.type == "PodScheduled"
    )
    assert (cond.status, cond.reason) == ("False", "Unschedulable")
    assert cond.message == "0/3 nodes are available: 3 Insufficient cpu."


def test_gated_pods_are_skipped(cluster: Emulator) -> None:
    core = _core(cluster)
    core.create_namespaced_pod("ml", pod("g", schedulingGates=[{"name": "hold"}]))
    assert SchedulerStandin(cluster).run_once() == []
    cond = core.read_namespaced_pod("g", "ml").status.conditions[0]
    assert (cond.type, cond.reason) == ("PodScheduled", "SchedulingGated")


def test_preemption_consults_extender_then_evicts(cluster: Emulator) -> None:
    core = _core(cluster)
    victims = {}
    for name in ("n1", "n2", "n3"):
        created = core.create_namespaced_pod(
            "ml", pod(f"low-{name}", cpu="8", nodeName=name)
        )
        victims[name] = created.metadata.uid

    def reply(verb: str, args: dict[str, Any]) -> Any:
        assert verb == "preempt"
        return {"NodeNameToMetaVictims": {"n2": args["NodeNameToMetaVictims"]["n2"]}}

    stub = StubExtender(reply)
    core.create_namespaced_pod("ml", pod("high", cpu="4", priorityClassName="high"))
    sched = SchedulerStandin(
        cluster,
        [
            ExtenderConfig(
                url_prefix=stub.prefix, preempt_verb="preempt", node_cache_capable=True
            )
        ],
    )
    first = sched.run_once()
    assert [(o.result, o.node) for o in first] == [("nominated", "n2")]
    [raw] = stub.bodies("preempt")
    expected_map = b",".join(
        b'"'
        + n.encode()
        + b'":{"Pods":[{"UID":"'
        + victims[n].encode()
        + b'"}],"NumPDBViolations":0}'
        for n in ("n1", "n2", "n3")
    )
    assert raw.endswith(
        b'"NodeNameToVictims":null,"NodeNameToMetaVictims":{' + expected_map + b"}}"
    )
    remaining = {p.metadata.name for p in core.list_namespaced_pod("ml").items}
    assert remaining == {"low-n1", "low-n3", "high"}
    assert core.read_namespaced_pod("high", "ml").status.nominated_node_name == "n2"
    second = sched.run_once()
    stub.close()
    assert [(o.result, o.node) for o in second] == [("bound", "n2")]


def test_extender_can_veto_preemption(cluster: Emulator) -> None:
    core = _core(cluster)
    for name in ("n1", "n2", "n3"):
        core.create_namespaced_pod("ml", pod(f"low-{name}", cpu="8", nodeName=name))
    stub = StubExtender(lambda verb, args: {"NodeNameToMetaVictims": {}})
    core.create_namespaced_pod("ml", pod("high", cpu="4", priorityClassName="high"))
    outcomes = SchedulerStandin(
        cluster, [ExtenderConfig(url_prefix=stub.prefix, preempt_verb="preempt")]
    ).run_once()
    stub.close()
    assert [o.result for o in outcomes] == ["unschedulable"]
    assert len(core.list_namespaced_pod("ml").items) == 4
    assert (
        b'"NodeNameToVictims":{"n1":{"Pods":[{"metadata":{"name":"low-n1"'
        in stub.bodies("preempt")[0]
    )


def test_extender_error_fails_the_attempt(cluster: Emulator) -> None:
    core = _core(cluster)
    core.create_namespaced_pod("ml", pod("w"))
    stub = StubExtender(lambda verb, args: {"Error": "solver unavailable"})
    outcomes = SchedulerStandin(
        cluster, [ExtenderConfig(url_prefix=stub.prefix, filter_verb="filter")]
    ).run_once()
    stub.close()
    assert [(o.result, o.message) for o in outcomes] == [
        ("error", "solver unavailable")
    ]
    assert core.read_namespaced_pod("w", "ml").spec.node_name is None


def test_background_loop_binds_new_pods(cluster: Emulator) -> None:
    core = _core(cluster)
    config = ExtenderConfig.from_config(
        {
            "urlPrefix": "http://127.0.0.1:1/x",
            "managedResources": [{"name": "example.com/gpu"}],
            "filterVerb": "filter",
            "httpTimeout": "1s",
        }
    )
    assert config.http_timeout == 1.0 and config.managed_resources == (
        "example.com/gpu",
    )
    sched = SchedulerStandin(
        cluster, [config]
    ).start()  # not interested: no gpu request
    try:
        core.create_namespaced_pod("ml", pod("late"))
        deadline = time.monotonic() + 5
        while core.read_namespaced_pod("late", "ml").spec.node_name is None:
            assert time.monotonic() < deadline, "pod was never bound"
            time.sleep(0.05)
    finally:
        sched.stop()
    assert core.read_namespaced_pod("late", "ml").status.phase == "Running"
