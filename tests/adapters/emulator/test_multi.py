"""``placewise emulate --cluster NAME=FILES``: one server per cluster, one
kubeconfig with a context per cluster, all read through the official client."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path

import pytest
from kubernetes import client, config

from placewise.adapters.cli.emulate import register
from tests.adapters.emulator.test_cli import _start

DATA = Path(__file__).resolve().parents[2] / "data" / "multicluster"


def test_one_server_and_context_per_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = _start(
        "emulate",
        "--from",
        str(DATA / "manager.yaml"),
        "--cluster",
        f"east={DATA / 'east.yaml'}",
        "--cluster",
        f"west={DATA / 'west.yaml'}",
        "--kubeconfig-out",
        str(kubeconfig),
    )
    try:
        assert proc.stdout is not None
        banners = [proc.stdout.readline() for _ in range(4)]
        assert [b.split()[2] for b in banners[:3]] == ["manager", "east", "west"]
        assert banners[3].startswith("kubeconfig written to")
        ports = {b.split()[2]: b.split()[5] for b in banners[:3]}
        assert len(set(ports.values())) == 3  # a port each
        names = {}
        for context in ("manager", "east", "west"):
            api = config.new_client_from_config(str(kubeconfig), context=context)
            names[context] = sorted(
                n.metadata.name for n in client.CoreV1Api(api).list_node().items
            )
            if context == "manager":
                mkc = client.CustomObjectsApi(api).list_cluster_custom_object(
                    "kueue.x-k8s.io", "v1beta2", "multikueueclusters"
                )
                assert sorted(c["metadata"]["name"] for c in mkc["items"]) == [
                    "east",
                    "west",
                ]
            api.close()
        assert names == {
            "manager": [],
            "east": ["east-1", "east-2"],
            "west": ["west-1", "west-2"],
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
    assert code == 0


def test_bad_cluster_option_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\n")
    parser = argparse.ArgumentParser(prog="placewise")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        ["emulate", "--cluster", "east", "--cluster", f"west={bad}"]
    )
    assert args.run(args) == 2
    assert "--cluster east: expected NAME=FILE" in capsys.readouterr().err
    args = parser.parse_args(["emulate", "--cluster", f"west={bad}"])
    assert args.run(args) == 2
    err = capsys.readouterr().err
    assert "cluster west" in err and str(bad) in err
