"""The real ``kubectl`` binary against the emulator: how users try placewise.

Each test runs kubectl as a user would (a kubeconfig from ``Emulator.kubeconfig``,
its own discovery cache and HOME so nothing leaks between tests or into the
developer's ~/.kube) and checks what it prints and what the cluster then holds,
read back through the official client.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from placewise.adapters.emulator import Emulator
from tests.adapters.emulator.conftest import BASE_OBJECTS

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not on PATH; these tests run the real binary"
)

KUEUE = "kueue.x-k8s.io/v1beta2"
CLUSTER: list[dict[str, Any]] = [
    *BASE_OBJECTS,
    {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohortName": "all"},
        "status": {"pendingWorkloads": 1, "admittedWorkloads": 1},
    },
    {
        "apiVersion": KUEUE,
        "kind": "LocalQueue",
        "metadata": {"name": "lq", "namespace": "ml"},
        "spec": {"clusterQueue": "cq"},
    },
    {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "admitted", "namespace": "ml"},
        "spec": {"queueName": "lq", "podSets": []},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": []},
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
        },
    },
    {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "waiting", "namespace": "ml"},
        "spec": {"queueName": "lq", "podSets": []},
    },
]


class Kubectl:
    def __init__(self, emu: Emulator, home: Path) -> None:
        self.home = home
        kubeconfig = emu.kubeconfig(home / "kubeconfig")
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": str(kubeconfig),
            "KUBECACHEDIR": str(home / "cache"),
        }

    def run(
        self, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        return subprocess.run(
            [KUBECTL, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )

    def ok(self, *args: str, stdin: str | None = None) -> str:
        done = self.run(*args, stdin=stdin)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def write(self, name: str, *objects: dict[str, Any]) -> str:
        path = self.home / name
        path.write_text(yaml.safe_dump_all(objects))
        return str(path)


@pytest.fixture
def emu() -> Iterator[Emulator]:
    with Emulator(CLUSTER, bookmark_interval=0.2) as emulator:
        yield emulator


@pytest.fixture
def kubectl(emu: Emulator, tmp_path: Path) -> Kubectl:
    return Kubectl(emu, tmp_path)


@pytest.fixture
def core(emu: Emulator) -> Iterator[client.CoreV1Api]:
    api = emu.api_client()
    yield client.CoreV1Api(api)
    api.close()


def manifest_pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": {"app": "demo"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "env": [{"name": "MODE", "value": "dry-run"}],
                    "ports": [{"containerPort": 8080}],
                    "resources": {"requests": {"cpu": "1"}},
                }
            ],
            **spec,
        },
    }


def table(text: str) -> list[dict[str, str]]:
    """kubectl's column output as dicts keyed by header (columns split on 2+ spaces)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0]
    starts = [0] + [
        i
        for i in range(1, len(header))
        if header[i] != " " and header[i - 2 : i] == "  "
    ]
    bounds = list(zip(starts, [*starts[1:], None], strict=True))
    names = [header[a:b].strip() for a, b in bounds]
    return [
        {n: line[a:b].strip() for n, (a, b) in zip(names, bounds, strict=True)}
        for line in lines[1:]
    ]


def test_apply_creates_then_unchanged_then_configured(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    path = kubectl.write("pod.yaml", manifest_pod("web"))
    assert kubectl.ok("apply", "-f", path).strip() == "pod/web created"
    assert kubectl.ok("apply", "-f", path).strip() == "pod/web unchanged"
    changed = manifest_pod("web")
    changed["metadata"]["labels"]["tier"] = "front"
    kubectl.write("pod.yaml", changed)
    assert kubectl.ok("apply", "-f", path).strip() == "pod/web configured"
    live = core.read_namespaced_pod("web", "ml")
    assert live.metadata.labels == {"app": "demo", "tier": "front"}
    assert live.spec.containers[0].env[0].value == "dry-run"
    applied = live.metadata.annotations[
        "kubectl.kubernetes.io/last-applied-configuration"
    ]
    assert '"tier":"front"' in applied


def test_apply_with_a_typo_fails_with_the_field(
    kubectl: Kubectl, core: client.CoreV1Api
) -> None:
    bad = manifest_pod("typo")
    bad["spec"]["containers"][0]["imagePullPolice"] = "Always"
    done = kubectl.run("apply", "-f", kubectl.write("typo.yaml", bad))
    assert done.returncode == 1
    assert 'unknown field "spec.containers[0].imagePullPolice"' in done.stderr
    assert "failed to download openapi" not in done.stderr
    assert core.list_namespaced_pod("ml").items == []


def test_get_wide_shows_where_pods_landed(kubectl: Kubectl) -> None:
    path = kubectl.write(
        "pods.yaml", manifest_pod("bound", nodeName="n2"), manifest_pod("pending")
    )
    kubectl.ok("apply", "-f", path)
    rows = {
        r["NAME"]: r for r in table(kubectl.ok("get", "pods", "-n", "ml", "-o", "wide"))
    }
    assert rows["bound"]["NODE"] == "n2"
    assert rows["bound"]["STATUS"] == "Running"
    assert rows["bound"]["READY"] == "1/1"
    assert rows["pending"]["NODE"] == "<none>"
    assert rows["pending"]["STATUS"] == "Pending"
    narrow = table(kubectl.ok("get", "pods", "-n", "ml"))
    assert set(narrow[0]) == {"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
    nodes = table(kubectl.ok("get", "nodes", "--show-labels"))
    assert [(n["NAME"], n["STATUS"]) for n in nodes] == [
        ("n1", "Ready"),
        ("n2", "Ready"),
        ("n3", "Ready"),
    ]
    assert "zone=b" in nodes[2]["LABELS"]
    every = table(kubectl.ok("get", "all", "-n", "ml"))
    assert {r["NAME"] for r in every} == {"pod/bound", "pod/pending"}


def test_get_kueue_objects_prints_their_columns(kubectl: Kubectl) -> None:
    rows = table(kubectl.ok("get", "workloads.kueue.x-k8s.io", "-A"))
    assert list(rows[0]) == [
        "NAMESPACE",
        "NAME",
        "QUEUE",
        "RESERVED IN",
        "ADMITTED",
        "FINISHED",
        "AGE",
    ]
    by_name = {r["NAME"]: r for r in rows}
    assert by_name["admitted"]["RESERVED IN"] == "cq"
    assert by_name["admitted"]["ADMITTED"] == "True"
    assert by_name["waiting"]["ADMITTED"] == ""
    cq = table(kubectl.ok("get", "clusterqueues", "-o", "wide"))
    assert cq == [
        {
            "NAME": "cq",
            "COHORT": "all",
            "STRATEGY": "",
            "PENDING WORKLOADS": "1",
            "ADMITTED WORKLOADS": "1",
        }
    ]
    assert table(kubectl.ok("get", "kwl", "-n", "ml", "waiting"))[0]["QUEUE"] == "lq"


def test_apply_custom_resource_round_trip(kubectl: Kubectl, emu: Emulator) -> None:
    wl: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"name": "job-1", "namespace": "ml"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1}]},
    }
    path = kubectl.write("wl.yaml", wl)
    assert "created" in kubectl.ok("apply", "-f", path)
    assert "unchanged" in kubectl.ok("apply", "-f", path)
    wl["spec"]["podSets"][0]["count"] = 4
    kubectl.write("wl.yaml", wl)
    assert "configured" in kubectl.ok("apply", "-f", path)
    api = emu.api_client()
    live = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", "ml", "workloads", "job-1"
    )
    api.close()
    assert live["spec"]["podSets"][0]["count"] == 4
    assert "deleted" in kubectl.ok("delete", "-f", path)


def test_events_written_as_events_v1_show_in_get_and_describe(
    kubectl: Kubectl, emu: Emulator, core: client.CoreV1Api
) -> None:
    kubectl.ok(
        "apply", "-f", kubectl.write("pod.yaml", manifest_pod("web", nodeName="n1"))
    )
    uid = core.read_namespaced_pod("web", "ml").metadata.uid
    api = emu.api_client()
    client.EventsV1Api(api).create_namespaced_event(
        "ml",
        client.EventsV1Event(
            metadata=client.V1ObjectMeta(name="web.1"),
            # With microseconds: the client then writes a valid MicroTime.
            event_time=datetime.now(UTC).replace(microsecond=123456),
            reason="Scheduled",
            action="Binding",
            note="Successfully assigned ml/web to n1",
            type="Normal",
            reporting_controller="placewise",
            reporting_instance="placewise-0",
            regarding=client.V1ObjectReference(
                api_version="v1", kind="Pod", namespace="ml", name="web", uid=uid
            ),
        ),
    )
    api.close()
    events = table(kubectl.ok("get", "events", "-n", "ml"))
    assert [(e["TYPE"], e["REASON"], e["OBJECT"], e["MESSAGE"]) for e in events] == [
        ("Normal", "Scheduled", "pod/web", "Successfully assigned ml/web to n1")
    ]
    described = kubectl.ok("describe", "pod", "web", "-n", "ml")
    assert "\nNode:         n1/" in described
    tail = described.split("Events:", 1)[1]
    assert "Scheduled" in tail and "placewise" in tail
    assert "Successfully assigned ml/web to n1" in tail


def test_delete_removes_the_pod(kubectl: Kubectl, core: client.CoreV1Api) -> None:
    kubectl.ok("apply", "-f", kubectl.write("pod.yaml", manifest_pod("gone")))
    assert (
        kubectl.ok("delete", "pod", "gone", "-n", "ml").strip() == 'pod "gone" deleted'
    )
    assert core.list_namespaced_pod("ml").items == []
    done = kubectl.run("get", "pods", "-n", "ml")
    assert done.returncode == 0 and "No resources found" in done.stderr


def test_explain_reads_the_served_schema(kubectl: Kubectl) -> None:
    text = kubectl.ok("explain", "pod.spec.containers.env")
    assert "FIELD: env <[]EnvVar>" in text
    assert "name\t<string> -required-" in text
