"""A leader paused past its Lease writes nothing once it wakes (issue 19).

Two ``placewise serve --mode kueue`` processes against one emulator.  The
leader is stopped (SIGSTOP) right after its renewal was applied but before
it read the reply (the emulator holds that reply), the other replica takes
the Lease over, and the first is resumed (SIGCONT).  From then on every
request the first sends is in the emulator's log under its User-Agent: none
may be a write, although a Workload it would admit is waiting.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.adapters.serve.conftest import Harness, wait_for
from tests.adapters.serve.test_kueue_mode import (
    condition,
    get_workload,
    kueue_objects,
    workload,
)

ROOT = Path(__file__).resolve().parents[3]
LEASE_PATH = r"/namespaces/default/leases/placewise-serve$"
LEASE, RENEW, RETRY = 2.0, 1.5, 0.2
HOLD = 4.0  # > LEASE + RETRY: the other replica takes over meanwhile
WRITES = ("POST", "PUT", "PATCH", "DELETE")


def replica(kubeconfig: Path, identity: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "placewise",
                "serve",
                "--kubeconfig",
                str(kubeconfig),
                "--mode",
                "kueue",
                "--identity",
                identity,
                "--listen",
                "127.0.0.1:0",
                "--metrics-listen",
                "127.0.0.1:0",
                "--solver",
                "greedy",
                "--debounce",
                "0.05",
                "--leader-elect-lease-duration",
                str(LEASE),
                "--leader-elect-renew-deadline",
                str(RENEW),
                "--leader-elect-retry-period",
                str(RETRY),
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )


def holder(h: Harness) -> str:
    lease = json.loads(
        h.custom.get_namespaced_custom_object(
            "coordination.k8s.io",
            "v1",
            "default",
            "leases",
            "placewise-serve",
            _preload_content=False,
        ).data
    )
    return str(lease["spec"].get("holderIdentity") or "")


def holder_or_none(h: Harness) -> str:
    try:
        return holder(h)
    except Exception:  # no Lease yet
        return ""


def sent(h: Harness, identity: str, since: int = 0) -> list[tuple[str, str]]:
    """(method, path) of every request ``identity`` sent, from entry ``since``."""
    agent = f"placewise-serve/{identity}"
    return [(m, p) for a, m, p in list(h.emu.faults.agents)[since:] if a == agent]


def admitted(h: Harness, name: str) -> bool:
    return condition(get_workload(h, name), "QuotaReserved").get("status") == "True"


def test_a_leader_paused_past_its_lease_writes_nothing_after_the_takeover(
    harness_factory, tmp_path
):
    h = harness_factory(kueue_objects())
    kubeconfig = h.emu.kubeconfig(tmp_path / "kubeconfig")
    procs = {"a": replica(kubeconfig, "a", tmp_path / "a.log")}
    stopped = False
    try:
        wait_for(lambda: holder_or_none(h) == "a", timeout=30, what="a leads")
        procs["b"] = replica(kubeconfig, "b", tmp_path / "b.log")
        wait_for(
            lambda: (
                (
                    "GET",
                    "/apis/coordination.k8s.io/v1/namespaces/default/leases/"
                    "placewise-serve",
                )
                in sent(h, "b")
            ),
            timeout=30,
            what="b campaigns",
        )
        h.create(workload("w1", 1, 2))
        wait_for(lambda: admitted(h, "w1"), what="a admits w1")
        assert any(
            m == "PATCH" and p.endswith("/workloads/w1/status") for m, p in sent(h, "a")
        ), "the leader's own writes must show in the log for the check below to mean"

        # Nobody can admit w2: every attempt is answered 503 and logged.
        h.emu.faults.fail(
            503, count=None, method="PATCH", path=r"/workloads/w2/status$"
        )
        h.emu.faults.hold_reply(HOLD, method="PUT", path=LEASE_PATH)
        wait_for(lambda: h.emu.faults.pending("hold") == 0, what="a renews")
        held_at = time.monotonic()
        os.kill(procs["a"].pid, signal.SIGSTOP)
        stopped = True
        h.create(workload("w2", 1, 2))
        wait_for(lambda: holder(h) == "b", timeout=10, what="b takes over")
        wait_for(
            lambda: (
                (
                    "PATCH",
                    "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml/workloads/w2/status",
                )
                in sent(h, "b")
            ),
            what="b tries to admit w2",
        )
        time.sleep(max(0.0, held_at + HOLD + 0.2 - time.monotonic()))
        takeover = len(h.emu.faults.agents)
        os.kill(procs["a"].pid, signal.SIGCONT)
        stopped = False

        # a reads again (it is alive and watching) but writes nothing.
        wait_for(
            lambda: any(m == "GET" for m, _ in sent(h, "a", takeover)),
            what="a resumes",
        )
        time.sleep(RENEW + 1.0)  # longer than a stale renewal could last
        writes = [(m, p) for m, p in sent(h, "a", takeover) if m in WRITES]
        assert writes == [], writes
        assert holder(h) == "b"

        # Once the API lets it, the new leader admits w2; a still writes nothing.
        h.emu.faults.clear()
        wait_for(lambda: admitted(h, "w2"), what="b admits w2")
        assert [(m, p) for m, p in sent(h, "a", takeover) if m in WRITES] == []
    finally:
        if stopped:
            os.kill(procs["a"].pid, signal.SIGCONT)
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for name, proc in procs.items():
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise AssertionError(
                    f"replica {name} did not stop: "
                    + (tmp_path / f"{name}.log").read_text()[-2000:]
                ) from None
