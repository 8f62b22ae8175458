"""``placewise serve --mode multikueue`` as a process: one kubeconfig with a
context per cluster (as ``emulate --cluster`` writes it), a nomination seen
through the client, health and metrics, a clean exit; bad options exit 2."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kubernetes import client, config

from placewise.adapters.emulator import Emulator
from placewise.adapters.emulator.multi import Clusters
from placewise.cli import main
from tests.adapters.serve.conftest import http, wait_for
from tests.multicluster_builders import job, manager, worker

ROOT = Path(__file__).resolve().parents[3]


def test_serve_multikueue_nominates(tmp_path: Path) -> None:
    clusters = Clusters(
        {
            "manager": Emulator(manager(["a", "b"], [job("j", 8, model="A100")])),
            "a": Emulator(worker("H100", 1)),
            "b": Emulator(worker("A100", 1)),
        }
    ).start()
    kubeconfig = clusters.kubeconfig(tmp_path / "kubeconfig", "manager")
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "placewise", "serve",
            "--mode", "multikueue",
            "--kubeconfig", str(kubeconfig), "--context", "manager",
            "--worker", f"a={kubeconfig}", "--worker", f"b={kubeconfig}",
            "--metrics-listen", "127.0.0.1:0", "--listen", "127.0.0.1:0",
            "--no-leader-elect", "--solver", "cpsat", "--time-limit", "2",
            "--debounce", "0.05",
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(proc.stderr.readline, "")),  # type: ignore[union-attr]
        daemon=True,
    )
    reader.start()
    api = client.CustomObjectsApi(
        config.new_client_from_config(str(kubeconfig), context="manager")
    )

    def nominated() -> list[str]:
        wl = api.get_namespaced_custom_object(
            "kueue.x-k8s.io", "v1beta2", "team", "workloads", "j"
        )
        return list((wl.get("status") or {}).get("nominatedClusterNames") or [])

    try:
        assert wait_for(nominated, timeout=60, what="a nomination") == ["b"]
        metrics = next(
            m.group(1)
            for line in lines
            if (m := re.search(r"metrics on (http://[\d.:]+)/metrics", line))
        )
        assert http(metrics + "/readyz")[0] == 200
        assert http(metrics + "/healthz")[0] == 200
        assert b"placewise_" in http(metrics + "/metrics")[1]
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
        clusters.stop()
    assert code == 0, "".join(lines[-20:])


def test_bad_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["serve", "--mode", "multikueue", "--kubeconfig", "x"]) == 2
    assert "needs a --worker" in capsys.readouterr().err
    assert main(["serve", "--mode", "multikueue", "--worker", "a=x"]) == 2
    assert "needs the manager cluster" in capsys.readouterr().err
    missing = tmp_path / "nope"
    code = main(
        ["serve", "--mode", "multikueue", "--kubeconfig", str(missing),
         "--worker", "a", "--worker", f"b={missing}"]
    )  # fmt: skip
    assert code == 2
    assert "--worker a: expected NAME=FILE" in capsys.readouterr().err
