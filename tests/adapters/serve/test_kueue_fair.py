"""Kueue mode under Kueue's fair sharing: the Configuration comes from Kueue's
manager ConfigMap, or from ``--kueue-config``, and the admissions follow it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from kubernetes import client

from placewise.adapters.cli.serve import read_kueue_config
from placewise.cli import main
from tests.adapters.serve.conftest import GPU, Harness, node, rack_topology, wait_for
from tests.adapters.serve.test_kueue_mode import KUEUE, get_workload, workload
from tests.shared import requires_shared

CONFIG = (
    "apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
    "namespace: kueue-system\nfairSharing:\n  enable: {enable}\n"
)


def config_map(enable: bool = True) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {"controller_manager_config.yaml": CONFIG.format(enable=enable)},
    }


def cohort_objects() -> list[dict]:
    """Queues a (weight 2, may reclaim) and b (weight 1), nominal 0, sharing
    the cohort's own 12 GPUs; 16 GPUs of hosts."""
    api = f"{KUEUE}/v1beta2"
    quota = [{"name": "cpu", "nominalQuota": "0"}, {"name": GPU, "nominalQuota": "0"}]
    groups = [
        {
            "coveredResources": ["cpu", GPU],
            "flavors": [{"name": "tas", "resources": quota}],
        }
    ]
    pool = [{"name": "cpu", "nominalQuota": "64"}, {"name": GPU, "nominalQuota": "12"}]

    def cq(name: str, weight: str, preemption: dict) -> dict:
        return {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": name},
            "spec": {
                "cohortName": "co",
                "namespaceSelector": {},
                "fairSharing": {"weight": weight},
                "preemption": preemption,
                "resourceGroups": groups,
            },
        }

    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
        *rack_topology(api),
        {
            "apiVersion": api,
            "kind": "Cohort",
            "metadata": {"name": "co"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", GPU],
                        "flavors": [{"name": "tas", "resources": pool}],
                    }
                ]
            },
        },
        cq("a", "2", {"reclaimWithinCohort": "Any"}),
        cq("b", "1", {}),
        *[
            {
                "apiVersion": api,
                "kind": "LocalQueue",
                "metadata": {"name": f"lq-{q}", "namespace": "ml"},
                "spec": {"clusterQueue": q},
            }
            for q in "ab"
        ],
        *[node(f"r1-h{i}", rack="r1") for i in range(4)],
    ]


def admitted_per_queue(h: Harness, names: list[str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for name in names:
        adm = get_workload(h, name).get("status", {}).get("admission")
        if adm:
            out[adm["clusterQueue"]] += 1
    return out


def run(harness_factory, extra: list[dict], **cfg) -> Counter[str]:
    """12 one-GPU workloads per queue, all there before the sidecar starts
    (its first solve sees them all), admitted until the pool is full."""
    wls = []
    for q in "ab":
        for i in range(12):
            wl = workload(f"{q}{i:02d}", 1, 1)
            wl["spec"]["queueName"] = f"lq-{q}"
            wl["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{i:02d}Z"
            wls.append(wl)
    h = harness_factory([*cohort_objects(), *extra, *wls])
    sc = h.sidecar(mode="kueue", **cfg)
    names = [w["metadata"]["name"] for w in wls]
    wait_for(
        lambda: sum(admitted_per_queue(h, names).values()) == 12,
        timeout=20,
        what="the pool admitted",
    )
    assert sc.builder.fair_sharing().enable == bool(extra)
    return admitted_per_queue(h, names)


def test_fair_sharing_from_kueue_manager_config_map(harness_factory) -> None:
    """With Kueue's ConfigMap enabling fair sharing, a (weight 2) ends with
    twice b's part of the pool; without it, both heads fit each cycle and
    the pool splits evenly."""
    assert run(harness_factory, [config_map()]) == {"a": 8, "b": 4}


def test_without_config_map_fair_sharing_is_off(harness_factory) -> None:
    assert run(harness_factory, []) == {"a": 6, "b": 6}


def test_kueue_config_flag_overrides_the_config_map(
    harness_factory, tmp_path: Path
) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(CONFIG.format(enable="false"))
    off = read_kueue_config(str(path))
    h = harness_factory([*cohort_objects(), config_map()])
    sc = h.sidecar(mode="kueue", kueue_config=off)
    assert not sc.builder.fair_sharing().enable
    h2 = harness_factory([*cohort_objects(), config_map()])
    assert h2.sidecar(mode="kueue").builder.fair_sharing().enable


def test_kueue_config_file_may_be_the_config_map(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(config_map()))
    assert read_kueue_config(str(path)).enable


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (
            CONFIG.format(enable="true") + "  preemptionStrategies: [Nope]\n",
            "unknown preemption strategy 'Nope'",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n",
            "no Kueue Configuration found",
        ),
    ],
)
def test_bad_kueue_config_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(text)
    code = main(["serve", "--mode", "kueue", "--kueue-config", str(path)])
    err = capsys.readouterr().err
    assert code == 2
    assert str(path) in err and fragment in err
    assert "Traceback" not in err


@requires_shared
def test_emulated_instance_serves_its_configuration_as_the_config_map(
    harness_factory,
) -> None:
    """An instance file's Configuration becomes Kueue's manager ConfigMap in
    the emulator, so the sidecar on an emulated fair-sharing case shares."""
    from placewise.adapters.io.loader import load_objects
    from tests.kueue_cases import CASES

    case = CASES / "fairsharing" / "deep-preemption" / "instance.yaml"
    objects = load_objects([case])
    assert [o["kind"] for o in objects].count("Configuration") == 1
    h = harness_factory(objects)
    cm = client.CoreV1Api(h.emu.api_client()).read_namespaced_config_map(
        "kueue-manager-config", "kueue-system"
    )
    assert "fairSharing" in cm.data["controller_manager_config.yaml"]
    assert h.sidecar(mode="kueue").builder.fair_sharing().enable
