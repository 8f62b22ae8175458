"""Fixtures: an emulated cluster, sidecars and a kube-scheduler stand-in.

Everything is driven through the official client against the emulator and
through real HTTP to the sidecar; nothing reaches into the sidecar to fake an
outcome.  Tests use the greedy solver and short debounce/lease timings so the
folder stays fast.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator, ExtenderConfig, SchedulerStandin
from placewise.adapters.serve import Kube, ServeConfig, Sidecar
from tests.helpers import node_object
from tests.plan_audit import watch_published

JSON = dict[str, Any]
GPU = "example.com/gpu"


def node(name: str, gpus: int = 4, cpu: str = "16", **labels: str) -> JSON:
    alloc = {"cpu": cpu, "memory": "64Gi", "pods": "110", GPU: str(gpus)}
    return node_object(name, alloc, **labels)


def namespace(name: str) -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def pod(
    name: str,
    namespace: str = "ml",
    gpus: int = 1,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "trainer",
                    "resources": {"requests": {"cpu": "1", GPU: str(gpus)}},
                }
            ],
            **spec,
        },
    }


def rack_topology(api: str) -> list[JSON]:
    """Topology ``topo`` (rack, hostname) and the TAS flavor ``tas`` on it."""
    levels = [{"nodeLabel": "rack"}, {"nodeLabel": "kubernetes.io/hostname"}]
    return [
        {
            "apiVersion": api,
            "kind": "Topology",
            "metadata": {"name": "topo"},
            "spec": {"levels": levels},
        },
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": "tas"},
            "spec": {"topologyName": "topo"},
        },
    ]


def kueue_group(
    group: str, size: int, gpus: int = 1, namespace: str = "ml", **kw: Any
) -> list[JSON]:
    """A Kueue plain-pod group: pod-group-name label + total-count annotation."""
    labels = {"kueue.x-k8s.io/pod-group-name": group, **kw.pop("labels", {})}
    annotations = {
        "kueue.x-k8s.io/pod-group-total-count": str(size),
        **kw.pop("annotations", {}),
    }
    return [
        pod(f"{group}-{i}", namespace, gpus, dict(labels), dict(annotations), **kw)
        for i in range(size)
    ]


def podgroup(name: str, min_member: int, namespace: str = "ml") -> JSON:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def cosched_group(name: str, size: int, gpus: int = 1, **kw: Any) -> list[JSON]:
    return [
        pod(
            f"{name}-{i}",
            gpus=gpus,
            labels={"scheduling.x-k8s.io/pod-group": name},
            **kw,
        )
        for i in range(size)
    ]


def serve_config(**kw: Any) -> ServeConfig:
    base: JSON = {
        "listen": ("127.0.0.1", 0),
        "metrics_listen": ("127.0.0.1", 0),
        "enable_debug": True,
        "solver": "greedy",
        "debounce": 0.05,
        "max_delay": 0.5,
        "leader_elect": False,
        "resync": 0.2,
        "lease_duration": 1.5,
        "renew_deadline": 1.0,
        "retry_period": 0.2,
        "protect_seconds": 30.0,
    }
    base.update(kw)
    return ServeConfig(**base)


class Harness:
    """An emulator plus the sidecars and scheduler stand-ins started on it."""

    def __init__(self, emu: Emulator) -> None:
        self.emu = emu
        self.api = emu.api_client()
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        self.sidecars: list[Sidecar] = []
        self.standins: list[SchedulerStandin] = []

    def sidecar(self, **kw: Any) -> Sidecar:
        sc = Sidecar(serve_config(**kw), Kube(self.emu.api_client()))
        watch_published(sc.loop)
        sc.start()
        self.sidecars.append(sc)
        return sc

    def standin(
        self, sc: Sidecar | None = None, start: bool = True, **ext: Any
    ) -> SchedulerStandin:
        extenders = []
        if sc is not None:
            extenders.append(
                ExtenderConfig.placewise(
                    sc.url + "/scheduler", httpTimeout="10s", **ext
                )
            )
        st = SchedulerStandin(self.emu, extenders)
        if start:
            st.start()
        self.standins.append(st)
        return st

    def create(self, *objects: JSON) -> None:
        for obj in objects:
            if obj["kind"] == "Pod":
                self.post_raw(
                    f"/api/v1/namespaces/{obj['metadata']['namespace']}/pods", obj
                )
            else:
                group, version = obj["apiVersion"].split("/")
                plural = obj["kind"].lower() + "s"
                ns = obj["metadata"].get("namespace")
                if ns:
                    self.custom.create_namespaced_custom_object(
                        group, version, ns, plural, obj
                    )
                else:
                    self.custom.create_cluster_custom_object(
                        group, version, plural, obj
                    )

    def post_raw(self, path: str, obj: JSON) -> JSON:
        """POST as kubectl would: raw JSON (v37's models reject fields newer than
        the client, such as the 1.35 ``spec.workloadRef``)."""
        method, url, headers, body, _ = self.api.param_serialize(
            "POST", path, body=obj, header_params={"Content-Type": "application/json"}
        )
        resp = self.api.call_api(method, url, header_params=headers, body=body)
        data = resp.read()
        assert resp.status == 201, data
        return dict(json.loads(data))

    def pods(self, namespace: str | None = None) -> list[JSON]:
        resp = (
            self.core.list_namespaced_pod(namespace, _preload_content=False)
            if namespace
            else self.core.list_pod_for_all_namespaces(_preload_content=False)
        )
        return list(json.loads(resp.data)["items"])

    def placement(self, namespace: str | None = None) -> dict[str, str | None]:
        return {
            p["metadata"]["name"]: p["spec"].get("nodeName")
            for p in self.pods(namespace)
        }

    def events(self, reason: str | None = None) -> list[JSON]:
        resp = self.custom.list_cluster_custom_object(
            "events.k8s.io", "v1", "events", _preload_content=False
        )
        items = json.loads(resp.data)["items"]
        return [e for e in items if reason is None or e.get("reason") == reason]

    def close(self) -> None:
        for st in self.standins:
            st.stop()
        for sc in self.sidecars:
            sc.stop()
        self.api.close()


def http(url: str, body: bytes | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(
        url,
        data=body,
        method="POST" if body is not None else "GET",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def metric(sc: Sidecar, name: str, **labels: str) -> float:
    """Sum of a metric's samples (matching labels) scraped from /metrics."""
    text = http(sc.metrics_url + "/metrics")[1].decode()
    total = 0.0
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head.split("{", 1)[0] != name:
            continue
        if all(f'{k}="{v}"' in head for k, v in labels.items()):
            total += float(value)
    return total


def debug(sc: Sidecar) -> JSON:
    return dict(json.loads(http(sc.url + "/debug/plan")[1]))


def wait_for(check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what or check}: last={last!r}")


def assert_sound(h: Harness, gangs: dict[str, list[str]]) -> None:
    """No node over capacity; every gang entirely bound or entirely unbound."""
    pods = {p["metadata"]["name"]: p for p in h.pods()}
    nodes = json.loads(h.core.list_node(_preload_content=False).data)["items"]
    for n in nodes:
        name = n["metadata"]["name"]
        used = sum(
            int(p["spec"]["containers"][0]["resources"]["requests"].get(GPU, 0))
            for p in pods.values()
            if p["spec"].get("nodeName") == name
            and p["status"].get("phase") not in ("Succeeded", "Failed")
        )
        assert used <= int(n["status"]["allocatable"][GPU]), f"{name} overcommitted"
    for gang, members in gangs.items():
        bound = [m for m in members if m in pods and pods[m]["spec"].get("nodeName")]
        assert not bound or len(bound) == len([m for m in members if m in pods]), (
            f"gang {gang} half-bound: {bound}"
        )


@pytest.fixture
def harness_factory() -> Iterator[Callable[..., Harness]]:
    made: list[tuple[Emulator, Harness]] = []

    def make(objects: list[JSON], **emu_kw: Any) -> Harness:
        emu = Emulator(objects, bookmark_interval=0.2, **emu_kw).start()
        h = Harness(emu)
        made.append((emu, h))
        return h

    yield make
    for emu, h in made:
        h.close()
        emu.stop()
