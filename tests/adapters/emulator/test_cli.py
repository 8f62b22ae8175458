"""``placewise emulate`` through its registration function, in a child process."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from kubernetes import client, config

from placewise.adapters.cli.emulate import register

REPO = Path(__file__).resolve().parents[3]
DRIVER = (
    "import argparse, sys\n"
    "from placewise.adapters.cli.emulate import register\n"
    "parser = argparse.ArgumentParser(prog='placewise')\n"
    "register(parser.add_subparsers(dest='command'))\n"
    "args = parser.parse_args(sys.argv[1:])\n"
    "sys.exit(args.run(args))\n"
)
INSTANCE = """\
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: gpu-1}
  status: {allocatable: {cpu: "8", nvidia.com/gpu: "8"}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: team-a}
  spec: {namespaceSelector: {}}
"""


def _start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, *argv],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_emulate_serves_files_and_writes_kubeconfig(tmp_path: Path) -> None:
    instance = tmp_path / "cluster.yaml"
    instance.write_text(INSTANCE)
    kubeconfig = tmp_path / "kubeconfig"
    proc = _start(
        "emulate",
        "--from",
        str(instance),
        "--port",
        "0",
        "--kubeconfig-out",
        str(kubeconfig),
    )
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert banner.startswith("placewise emulator listening on http://127.0.0.1:"), (
            banner
        )
        assert proc.stdout.readline().startswith("kubeconfig written to")
        api = config.new_client_from_config(config_file=str(kubeconfig))
        nodes = client.CoreV1Api(api).list_node().items
        assert [n.metadata.name for n in nodes] == ["gpu-1"]
        cqs = client.CustomObjectsApi(api).list_cluster_custom_object(
            "kueue.x-k8s.io", "v1beta2", "clusterqueues"
        )
        assert [c["metadata"]["name"] for c in cqs["items"]] == ["team-a"]
        api.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
    assert code == 0


def test_emulate_rejects_unreadable_input(tmp_path: Path, capsys) -> None:
    """Bad YAML is exit code 2 with the file named; nothing is served."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Node\nmetadata: {name: [unclosed\n")
    parser = argparse.ArgumentParser(prog="placewise")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["emulate", "--from", str(bad)])
    assert args.run(args) == 2
    assert str(bad) in capsys.readouterr().err
