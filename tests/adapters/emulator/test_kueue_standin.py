"""The optional Kueue controller stand-in, observed through the official client."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.cli.emulate import register
from placewise.adapters.emulator import Emulator, KueueControllers

KUEUE = "kueue.x-k8s.io"
RESERVED = [
    {
        "type": "QuotaReserved",
        "status": "True",
        "reason": "QuotaReserved",
        "message": "Quota reserved in ClusterQueue cq",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    },
    {
        "type": "Admitted",
        "status": "True",
        "reason": "Admitted",
        "message": "The workload is admitted",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    },
]
EVICTED = {
    "type": "Evicted",
    "status": "True",
    "reason": "Preempted",
    "message": "Preempted to accommodate a workload (UID: u-1, JobUID: UNKNOWN)",
    "lastTransitionTime": "2026-01-01T00:01:00Z",
}


def workload(name: str, *conditions: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": f"{KUEUE}/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "queueName": "lq",
            "podSets": [{"name": "main", "count": 1, "template": {"spec": {}}}],
        },
    }
    if conditions:
        obj["status"] = {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {"name": "main", "count": 1, "flavors": {"cpu": "f"}}
                ],
            },
            "conditions": list(conditions),
        }
    return obj


NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}}


@pytest.fixture
def custom() -> Iterator[Any]:
    emu = Emulator(
        [NAMESPACE, workload("running", *RESERVED), workload("waiting")],
        kueue_controllers=KueueControllers(release_after=0.3, finish_after=None),
    ).start()
    api = emu.api_client()
    try:
        yield client.CustomObjectsApi(api)
    finally:
        api.close()
        emu.stop()


def get(custom: Any, name: str) -> dict[str, Any]:
    resp = custom.get_namespaced_custom_object(
        KUEUE, "v1beta2", "ml", "workloads", name, _preload_content=False
    )
    return dict(json.loads(resp.data))


def conditions(wl: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in wl.get("status", {}).get("conditions") or []}


def wait_for(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def test_evicted_workload_releases_its_reservation_after_the_delay(custom: Any) -> None:
    """Evicted=True (Preempted): a moment later the admission is gone,
    QuotaReserved False (Pending, the eviction message), Admitted False
    (NoReservation), Requeued True; Evicted stays.  Others are left alone."""
    wl = get(custom, "running")
    body = {
        "metadata": {"resourceVersion": wl["metadata"]["resourceVersion"]},
        "status": {"conditions": [*RESERVED, EVICTED]},
    }
    custom.patch_namespaced_custom_object_status(
        KUEUE, "v1beta2", "ml", "workloads", "running", body
    )
    started = time.monotonic()
    assert get(custom, "running")["status"].get("admission"), "released too early"
    released = wait_for(
        lambda: "admission" not in (w := get(custom, "running"))["status"] and w
    )
    assert time.monotonic() - started >= 0.25
    conds = conditions(released)
    assert conds["QuotaReserved"]["status"] == "False"
    assert conds["QuotaReserved"]["reason"] == "Pending"
    assert conds["QuotaReserved"]["message"] == EVICTED["message"]
    assert (conds["Admitted"]["status"], conds["Admitted"]["reason"]) == (
        "False",
        "NoReservation",
    )
    assert (conds["Requeued"]["status"], conds["Requeued"]["reason"]) == (
        "True",
        "Preempted",
    )
    assert conds["Evicted"]["status"] == "True"
    assert not (get(custom, "waiting").get("status") or {}).get("conditions")


def test_admitted_workload_is_left_alone_without_finish_after(custom: Any) -> None:
    time.sleep(0.5)
    wl = get(custom, "running")
    assert wl["status"]["admission"] and "Finished" not in conditions(wl)


def test_finish_after_plays_the_job() -> None:
    """With finish_after, an admitted Workload finishes (Succeeded) after that
    long; an evicted one is released instead, never finished."""
    emu = Emulator(
        [NAMESPACE, workload("job", *RESERVED), workload("gone", *RESERVED, EVICTED)],
        kueue_controllers=KueueControllers(release_after=0.1, finish_after=0.3),
    ).start()
    api = emu.api_client()
    try:
        custom = client.CustomObjectsApi(api)
        done = wait_for(lambda: "Finished" in conditions(w := get(custom, "job")) and w)
        finished = conditions(done)["Finished"]
        assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
        gone = get(custom, "gone")
        assert "admission" not in gone["status"]
        assert "Finished" not in conditions(gone)
        assert emu.kueue_controllers is not None
        assert emu.kueue_controllers.releases == 1
        assert emu.kueue_controllers.finishes == 1
    finally:
        api.close()
        emu.stop()


def test_cli_flags(capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    """--kueue-controllers takes an optional delay; --kueue-finish-after alone
    is a usage error (exit 2)."""
    parser = argparse.ArgumentParser(prog="placewise")
    register(parser.add_subparsers(dest="command"))
    instance = tmp_path / "empty.yaml"
    instance.write_text("")
    args = parser.parse_args(
        ["emulate", "--from", str(instance), "--kueue-controllers"]
    )
    assert args.kueue_controllers == 1.0
    args = parser.parse_args(
        ["emulate", "--from", str(instance), "--kueue-finish-after", "5"]
    )
    assert args.run(args) == 2
    assert "--kueue-controllers" in capsys.readouterr().err
    with pytest.raises(ValueError):
        KueueControllers(release_after=-1)
