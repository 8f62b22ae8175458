"""End-to-end benchmark of ``placewise serve`` as a kube-scheduler extender.

Not a test: run ``python -m placewise.benchmarks.serve_bench`` (2 cores, ~1-3 min).

A 1,000-node cluster (5 blocks x 10 racks x 20 hosts, 8 GPUs each) runs in
the API-server emulator; 200 gangs (Kueue plain-pod groups of 1-8 pods,
1-8 GPUs per pod, some preferring one rack) are created at once through the
official client; the kube-scheduler stand-in schedules them through the
sidecar's extender over HTTP (filter, prioritize, bind).  Reported:

* time from the last pod's creation to every pod bound;
* extender request latency p50/p99 per verb, as the scheduler observes it
  (client side: HTTP round trip included) and as the sidecar records it;
* solves, their durations, fallbacks and bind failures from /metrics.

Figures from a 2-core run are in docs/serve.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from kubernetes import client

from placewise.adapters.emulator import Emulator, ExtenderConfig, SchedulerStandin, fit
from placewise.adapters.emulator import extender as emulator_extender
from placewise.adapters.serve.engine.gangs import POD_GROUP_LABEL
from placewise.models.cluster import HOSTNAME_LABEL

JSON = dict[str, Any]
GPU = "nvidia.com/gpu"
BLOCK, RACK = "cloud.example.com/block", "cloud.example.com/rack"


def nodes(blocks: int, racks: int, hosts: int) -> list[JSON]:
    alloc = {"cpu": "96", "memory": "1024Gi", "pods": "110", GPU: "8"}
    out = []
    for b in range(blocks):
        for r in range(racks):
            for h in range(hosts):
                name = f"b{b}-r{r}-h{h:02d}"
                out.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {
                            "name": name,
                            "labels": {
                                HOSTNAME_LABEL: name,
                                BLOCK: f"b{b}",
                                RACK: f"b{b}-r{r}",
                            },
                        },
                        "status": {
                            "allocatable": alloc,
                            "capacity": alloc,
                            "conditions": [{"type": "Ready", "status": "True"}],
                        },
                    }
                )
    return out


def gangs(count: int, seed: int) -> list[list[JSON]]:
    rng = random.Random(seed)
    out = []
    for g in range(count):
        size = rng.choice([1, 1, 2, 4, 4, 8])
        gpus = rng.choice([1, 2, 4, 8])
        annotations = {"kueue.x-k8s.io/pod-group-total-count": str(size)}
        if size > 1 and rng.random() < 0.3:
            annotations["kueue.x-k8s.io/podset-preferred-topology"] = RACK
        out.append(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"gang-{g:03d}-{i}",
                        "namespace": "bench",
                        "labels": {POD_GROUP_LABEL: f"gang-{g:03d}"},
                        "annotations": dict(annotations),
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "w",
                                "image": "trainer",
                                "resources": {
                                    "requests": {
                                        "cpu": "4",
                                        "memory": "32Gi",
                                        GPU: str(gpus),
                                    }
                                },
                            }
                        ]
                    },
                }
                for i in range(size)
            ]
        )
    return out


class Timings:
    """Client-side timing of the stand-in's extender calls and of its own
    in-tree filtering (measurement hooks only; nothing is changed)."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)
        self.in_tree = 0.0

    def install(self) -> None:
        post, filter_nodes = emulator_extender.post, fit.filter_nodes

        def timed_post(ext: ExtenderConfig, verb: str, body: bytes) -> Any:
            started = time.perf_counter()
            try:
                return post(ext, verb, body)
            finally:
                self.samples[verb].append(time.perf_counter() - started)

        def timed_filter(*args: Any, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return filter_nodes(*args, **kw)
            finally:
                self.in_tree += time.perf_counter() - started

        emulator_extender.post = timed_post
        fit.filter_nodes = timed_filter

    def report(self) -> dict[str, tuple[int, float, float]]:
        out = {}
        for verb, xs in sorted(self.samples.items()):
            qs = statistics.quantiles(xs, n=100) if len(xs) > 1 else xs * 99
            out[verb] = (len(xs), qs[49] * 1000, qs[98] * 1000)
        return out


def scrape(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    out: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        out[head] += float(value)
        out[head.split("{")[0]] += float(value)
    return out


def start_sidecar(args: argparse.Namespace, kubeconfig: str) -> tuple[Any, str, str]:
    """``placewise serve`` in its own process (its own interpreter, as in its
    own container), talking to the emulator through a kubeconfig."""
    cmd = [
        sys.executable,
        "-m",
        "placewise",
        "serve",
        "--kubeconfig",
        kubeconfig,
        "--listen",
        "127.0.0.1:0",
        "--metrics-listen",
        "127.0.0.1:0",
        "--enable-debug",
        "--mode",
        args.mode,
        "--solver",
        args.solver,
        "--time-limit",
        str(args.time_limit),
        "--workers",
        "1",
        "--debounce",
        str(args.debounce),
        "--no-leader-elect",
        "--topology-levels",
        f"{BLOCK},{RACK}",
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    stderr = proc.stderr
    assert stderr is not None
    threading.Thread(
        target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True
    ).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in lines:
            m = re.search(r"listening on (http://[\d.]+:\d+)/", line)
            metrics = re.search(r"metrics on (http://[\d.]+:\d+)/", line)
            if m and metrics:
                url = m.group(1)
                while time.monotonic() < deadline:
                    try:
                        urllib.request.urlopen(url + "/readyz", timeout=5)
                        return proc, url, metrics.group(1)
                    except OSError:
                        time.sleep(0.1)
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("sidecar did not start:\n" + "".join(lines[-20:]))


def run(args: argparse.Namespace) -> int:
    emu = Emulator(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}},
            *nodes(args.blocks, args.racks, args.hosts),
        ],
        bookmark_interval=1.0,
    ).start()
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(emu.kubeconfig(Path(tmp) / "kubeconfig"))
        proc, url, metrics_url = start_sidecar(args, kubeconfig)
        try:
            return measure(args, emu, url, metrics_url)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            emu.stop()


def measure(args: argparse.Namespace, emu: Emulator, url: str, metrics_url: str) -> int:
    timings = Timings()
    timings.install()
    standin = None
    if args.mode == "extender":
        standin = SchedulerStandin(
            emu,
            [ExtenderConfig.placewise(url + "/scheduler")],
        ).start()
    core = client.CoreV1Api(emu.api_client())
    todo = gangs(args.gangs, args.seed)
    pods = [p for g in todo for p in g]
    if args.mode == "binder":
        for p in pods:
            p["spec"]["schedulerName"] = "placewise"
    gpus = sum(
        int(p["spec"]["containers"][0]["resources"]["requests"][GPU]) for p in pods
    )
    print(
        f"mode {args.mode}, solver {args.solver}: {len(pods)} pods in "
        f"{len(todo)} gangs, {gpus} GPUs of {8 * args.blocks * args.racks * args.hosts}"
        f" on {args.blocks * args.racks * args.hosts} nodes"
    )
    created_at = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda p: core.create_namespaced_pod(
                    "bench", p, _preload_content=False
                ),
                pods,
            )
        )
    last_created = time.monotonic()
    bound_at, planned_at, done = None, None, 0
    deadline = last_created + args.timeout
    while time.monotonic() < deadline:
        if planned_at is None:
            plan = json.loads(urllib.request.urlopen(url + "/debug/plan").read())
            admitted = sum(1 for g in plan.get("gangs", {}).values() if g["admitted"])
            if admitted + len(plan.get("running", [])) >= len(todo):
                planned_at = time.monotonic()
        # Only the unbound ones (a field selector): polling must not load the
        # emulator that the scheduler and the sidecar are measured against.
        raw: Any = core.list_namespaced_pod(
            "bench", field_selector="spec.nodeName=", _preload_content=False
        )
        unbound = json.loads(raw.data)["items"]
        done = len(pods) - len(unbound)
        if not unbound:
            bound_at = time.monotonic()
            break
        time.sleep(0.2)
    metrics = scrape(metrics_url)
    if standin is not None:
        standin.stop()
    print(f"creating {len(pods)} pods took {last_created - created_at:.2f} s")
    if planned_at is not None:
        print(
            f"last pod created -> every gang in a published plan: "
            f"{planned_at - last_created:.2f} s"
        )
    if bound_at is None:
        print(f"NOT all bound within {args.timeout:.0f} s ({done}/{len(pods)})")
    else:
        print(f"last pod created -> all pods bound: {bound_at - last_created:.2f} s")
    inside = sum(sum(xs) for xs in timings.samples.values())
    if inside:
        print(f"time inside extender calls (scheduler side): {inside:.1f} s")
    for verb, (n, p50, p99) in timings.report().items():
        print(
            f"extender {verb:<10} n={n:<5} p50={p50:7.2f} ms  p99={p99:7.2f} ms "
            "(seen by the scheduler: HTTP round trip included)"
        )
    if args.mode == "extender":
        print(f"stand-in's own in-tree filtering: {timings.in_tree:.1f} s in total")
    for verb in ("filter", "bind"):
        count = metrics[
            f'placewise_extender_request_duration_seconds_count{{result="ok",verb="{verb}"}}'
        ]
        total = metrics[
            f'placewise_extender_request_duration_seconds_sum{{result="ok",verb="{verb}"}}'
        ]
        if count:
            print(
                f"sidecar-side {verb}: mean {1000 * total / count:.2f} ms "
                f"over {count:.0f}"
            )
    solves = metrics["placewise_solve_duration_seconds_count"]
    total = metrics["placewise_solve_duration_seconds_sum"]
    print(
        f"solves: {solves:.0f} (mean {total / max(solves, 1):.2f} s), fallbacks: "
        f"{metrics['placewise_solver_fallbacks_total']:.0f}, gangs bound: "
        f"{metrics['placewise_bind_total']:.0f}, bind failures: "
        f"{metrics['placewise_bind_failures_total']:.0f}"
    )
    return 0 if bound_at is not None else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--blocks", type=int, default=5)
    p.add_argument("--racks", type=int, default=10)
    p.add_argument("--hosts", type=int, default=20)
    p.add_argument("--gangs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--mode", default="extender", choices=("extender", "binder"))
    p.add_argument("--solver", default="greedy", choices=("greedy", "auto", "cpsat"))
    p.add_argument("--time-limit", type=float, default=10.0)
    p.add_argument("--debounce", type=float, default=0.5)
    p.add_argument("--timeout", type=float, default=600.0)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())
