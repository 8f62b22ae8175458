"""``placewise serve`` with no --kubeconfig: the embedded demo works at once."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.adapters.serve.conftest import http, wait_for

ROOT = Path(__file__).resolve().parents[3]


def test_serve_without_kubeconfig_places_the_demo_gangs_and_exits_cleanly(tmp_path):
    """The bundled demo's pod gangs are bound whole within seconds through the
    real extender HTTP path; health, readiness and metrics answer; SIGTERM
    releases the Lease, removes the demo kubeconfig and exits 0."""
    kubeconfig = tmp_path / "demo.kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placewise",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--enable-debug",
            "--solver",
            "greedy",
            "--debounce",
            "0.1",
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True
    )
    reader.start()
    try:
        url = wait_for(
            lambda: next(
                (
                    m.group(1)
                    for line in lines
                    if (
                        m := re.search(
                            r"listening on (http://[\d.]+:\d+)/scheduler", line
                        )
                    )
                ),
                None,
            ),
            timeout=60,
            what="listening line",
        )
        running = wait_for(
            lambda: (
                {"team-a/llm-pretrain", "research/bert-sweep", "research/notebook"}
                <= set(json.loads(http(url + "/debug/plan")[1]).get("running", []))
            ),
            timeout=30,
            what="demo gangs bound",
        )
        assert running
        assert http(url + "/healthz")[0] == 200
        assert http(url + "/readyz")[0] == 200
        metrics_url = next(
            m.group(1)
            for line in lines
            if (m := re.search(r"metrics on (http://[\d.]+:\d+)/metrics", line))
        )
        assert metrics_url != url
        assert (
            b"placewise_extender_request_duration_seconds_count"
            in http(metrics_url + "/metrics")[1]
        )
        assert http(url + "/metrics")[0] == 404  # not on the extender port
        assert "server: http://127.0.0.1" in kubeconfig.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    assert code == 0, "".join(lines[-20:])
    assert not kubeconfig.exists()  # it named a server that is gone
