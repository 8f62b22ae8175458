"""Soak of ``placewise serve --mode kueue``: does the live loop stay sound and
its memory flat over an hour of continuous work?

Not a test: run ``python -m placewise.benchmarks.serve_soak --minutes 60``.

A generated cluster (``placewise generate``'s default family: nodes, flavors,
ClusterQueues, LocalQueues, priority classes; no work) runs in the API-server
emulator with its Kueue controller stand-in (an evicted Workload releases its
reservation after ``--release-after`` s; an admitted one finishes after
``--finish-after`` s).  ``placewise serve --mode kueue`` runs in its own
process against it through a kubeconfig.  Workloads (the family's own pending
Workloads, renamed per arrival) arrive through the official client, Poisson
with mean gap ``--gap`` s, for the whole run; a finished Workload is deleted
``--gc-after`` s later, as a Job's owner (``ttlSecondsAfterFinished``) would
delete it, so the number of objects stays steady and memory growth is
serve's, not the cluster's.

Every ``--sample`` s (10 by default): serve's RSS (``/proc/PID/status``) and a
read-back of every Workload.  Reported at the end:

* RSS first, last, peak, and its growth in MiB/min by least squares over the
  last 30 minutes (or the last half of a shorter run);
* safety counters: read-backs whose admitted set breaks a quota or node rule
  of the validator (``overcommit``), Workloads that disappeared without our
  deleting them (``lost``), admissions rewritten while the Workload still held
  its reservation (``double admissions``);
* admissions, evictions, releases, finishes, and serve's solves (/metrics).

Exit 1 when a safety counter is not zero.  ``--samples-out FILE`` writes every
sample as JSON for plotting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from placewise.adapters.emulator import Emulator, KueueControllers
from placewise.adapters.generate import family, generate
from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.serve.engine.preempt import conditions
from placewise.adapters.serve.engine.preempt import holds_quota as holds
from placewise.adapters.serve.kube.informer import key_of
from placewise.models.cluster import KUEUE_GROUP
from placewise.models.plan import Plan, PlanAdmission, PlanPending, SolverInfo
from placewise.models.snapshot import build_snapshot
from placewise.models.validate import validate

JSON = dict[str, Any]
VERSION = "v1beta2"
SAFETY_FAMILIES = ("quota.", "capacity.", "topology.", "bookkeeping.exclusive")
"""Validator rules whose breach in a read-back is an overcommit."""


def list_workloads(custom: client.CustomObjectsApi) -> JSON:
    """Every Workload, as the API server serves the list (plain JSON)."""
    raw: Any = custom.list_cluster_custom_object(
        KUEUE_GROUP, VERSION, "workloads", _preload_content=False
    )
    return dict(json.loads(raw.data))


def cluster_and_templates(nodes: int, seed: int) -> tuple[list[JSON], list[JSON]]:
    """The family's cluster without its work, and its Workloads as templates."""
    objects = generate(family("default").with_overrides(nodes=nodes, pending=200), seed)
    cluster = [o for o in objects if o["kind"] not in ("Workload", "Pod")]
    templates = []
    for o in objects:
        if o["kind"] != "Workload":
            continue
        meta = {
            k: v
            for k, v in o["metadata"].items()
            if k not in ("uid", "creationTimestamp", "resourceVersion")
        }
        templates.append(
            {**{k: v for k, v in o.items() if k != "status"}, **{"metadata": meta}}
        )
    return cluster, templates


@dataclass
class Watcher:
    """Workload transitions as the API server serves them (watch, re-listed
    whenever a watch ends, so nothing between two watches is missed)."""

    api: client.ApiClient
    counts: Counter[str] = field(default_factory=Counter)
    doubles: list[str] = field(default_factory=list)
    _state: dict[str, tuple[bool, bool, bool, str]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _watch: Any = None

    def start(self) -> Watcher:
        threading.Thread(target=self._run, name="soak-watch", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()

    def _run(self) -> None:
        custom = client.CustomObjectsApi(self.api)
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a dropped watch: list again
                listed = list_workloads(custom)
                present = {key_of(o) for o in listed["items"]}
                for gone in set(self._state) - present:
                    del self._state[gone]
                for obj in listed["items"]:
                    self.saw(obj)
                self._watch = watch.Watch()  # type: ignore[no-untyped-call]
                for ev in self._watch.stream(
                    custom.list_cluster_custom_object,
                    KUEUE_GROUP,
                    VERSION,
                    "workloads",
                    resource_version=listed["metadata"]["resourceVersion"],
                    timeout_seconds=60,
                ):
                    if ev["type"] == "DELETED":
                        self._state.pop(key_of(ev["object"]), None)
                    elif ev["type"] in ("ADDED", "MODIFIED"):
                        self.saw(ev["object"])
            self._stop.wait(0.2)

    def saw(self, obj: JSON) -> None:
        key, c = key_of(obj), conditions(obj)
        held, evicted = holds(obj), c.get("Evicted") == "True"
        finished = c.get("Finished") == "True"
        admission = json.dumps(
            (obj.get("status") or {}).get("admission"), sort_keys=True
        )
        was = self._state.get(key, (False, False, False, ""))
        if held and not was[0]:
            self.counts["admitted"] += 1
        elif held and was[0] and admission != was[3]:
            self.doubles.append(key)
        if evicted and not was[1]:
            self.counts["evicted"] += 1
        if was[0] and not held and not finished:
            self.counts["released"] += 1
        if finished and not was[2]:
            self.counts["finished"] += 1
        self._state[key] = (held, evicted, finished, admission)


def overcommits(cluster: list[JSON], workloads: list[JSON]) -> list[str]:
    """The safety rules a read-back's admitted set breaks: every Workload that
    holds quota, as one plan over the cluster with nothing running."""
    raws = [RawObject(o, "cluster", None) for o in cluster]
    raws += [
        RawObject({k: v for k, v in o.items() if k != "status"}, "cluster", None)
        for o in workloads
    ]
    problems: list[Any] = []
    decoded, _ = decode_objects(raws, problems)
    snap = build_snapshot(decoded)
    admissions, pending = [], []
    for obj in sorted(workloads, key=key_of):
        if not holds(obj):
            pending.append(PlanPending(workload=key_of(obj), reason="pending"))
            continue
        one: list[Any] = []
        (w,) = decode_objects([RawObject(obj, "cluster", None)], one)[
            0
        ].workloads.values()
        assert w.admission is not None
        admissions.append(
            PlanAdmission(
                workload=key_of(obj),
                cluster_queue=w.admission.cluster_queue,
                pod_set_assignments=w.admission.pod_set_assignments,
            )
        )
    plan = Plan(
        solver=SolverInfo(name="cluster", status="FEASIBLE"),
        admissions=tuple(admissions),
        pending=tuple(pending),
    )
    return [
        f"{v.rule}: {v.message}"
        for v in validate(snap, plan)
        if v.rule.startswith(SAFETY_FAMILIES)
    ]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minute, MiB) points: MiB per minute."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def start_serve(args: argparse.Namespace, kubeconfig: str) -> tuple[Any, str]:
    """``placewise serve --mode kueue`` in its own process; (process, metrics URL)."""
    cmd = [
        sys.executable, "-m", "placewise", "serve",
        "--kubeconfig", kubeconfig,
        "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
        "--mode", "kueue", "--solver", args.solver,
        "--time-limit", str(args.time_limit), "--workers", "1",
        "--no-leader-elect",
    ]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    stderr = proc.stderr
    assert stderr is not None
    threading.Thread(
        target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True
    ).start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        for line in list(lines):
            found = re.search(r"metrics on (http://[\d.]+:\d+)/", line)
            if found:
                return proc, found.group(1)
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError("serve did not start:\n" + "".join(lines[-20:]))


def scrape(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    out: Counter[str] = Counter()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, _, value = line.rpartition(" ")
            out[head.split("{")[0]] += float(value)  # type: ignore[assignment]
    return dict(out)


@dataclass
class Soak:
    """The arrivals, the read-backs and what they counted."""

    args: argparse.Namespace
    cluster: list[JSON]
    templates: list[JSON]
    custom: client.CustomObjectsApi
    created: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    finished_at: dict[str, float] = field(default_factory=dict)
    lost: set[str] = field(default_factory=set)
    overcommit: list[str] = field(default_factory=list)
    samples: list[JSON] = field(default_factory=list)

    def arrive(self, index: int) -> None:
        tpl = self.templates[index % len(self.templates)]
        meta = dict(tpl["metadata"])
        meta["name"] = f"soak-{index:05d}"
        obj = {**tpl, "metadata": meta}
        self.custom.create_namespaced_custom_object(
            KUEUE_GROUP, VERSION, meta["namespace"], "workloads", obj
        )
        self.created.add(key_of(obj))

    def read_back(self, now: float) -> list[JSON]:
        items: list[JSON] = list_workloads(self.custom)["items"]
        present = {key_of(o) for o in items}
        self.lost |= self.created - self.deleted - present
        self.overcommit += overcommits(self.cluster, items)
        for obj in items:
            key = key_of(obj)
            if conditions(obj).get("Finished") != "True":
                continue
            since = self.finished_at.setdefault(key, now)
            if now - since >= self.args.gc_after:
                ns, name = key.split("/")
                self.custom.delete_namespaced_custom_object(
                    KUEUE_GROUP, VERSION, ns, "workloads", name
                )
                self.deleted.add(key)
        return items


def run(args: argparse.Namespace) -> int:
    cluster, templates = cluster_and_templates(args.nodes, args.seed)
    rng = random.Random(args.seed)
    controllers = KueueControllers(args.release_after, args.finish_after)
    emu = Emulator(cluster, bookmark_interval=1.0, kueue_controllers=controllers)
    emu.start()
    api = emu.api_client()
    soak = Soak(args, cluster, templates, client.CustomObjectsApi(api))
    watcher = Watcher(emu.api_client()).start()
    gpus = sum(
        int(o["status"]["allocatable"].get("nvidia.com/gpu", 0))
        for o in cluster
        if o["kind"] == "Node"
    )
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(emu.kubeconfig(Path(tmp) / "kubeconfig"))
        proc, metrics_url = start_serve(args, kubeconfig)
        print(
            f"soak: {args.minutes:g} min, {args.nodes} nodes ({gpus} GPUs), arrivals "
            f"every {args.gap:g} s on average, finish after {args.finish_after:g} s, "
            f"solver {args.solver} ({args.time_limit:g} s), serve pid {proc.pid}",
            flush=True,
        )
        try:
            loop(args, soak, proc.pid, rng)
            metrics = scrape(metrics_url)
        finally:
            watcher.stop()
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            if proc.poll() is None:
                proc.kill()
            emu.stop()
    return report(args, soak, watcher, metrics)


def loop(args: argparse.Namespace, soak: Soak, pid: int, rng: random.Random) -> None:
    start = time.monotonic()
    end = start + 60 * args.minutes
    next_arrival, next_sample, index = start, start, 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        if now >= next_arrival:
            soak.arrive(index)
            index += 1
            next_arrival += rng.expovariate(1 / args.gap)
        if now >= next_sample:
            items = soak.read_back(now)
            sample = {
                "minute": (now - start) / 60,
                "rss_mib": rss_mib(pid),
                "workloads": len(items),
                "holding": sum(1 for o in items if holds(o)),
                "arrived": index,
            }
            soak.samples.append(sample)
            if (len(soak.samples) - 1) % args.print_every == 0:
                print(
                    f"[{sample['minute']:6.1f} min] rss {sample['rss_mib']:.1f} MiB, "
                    f"{sample['workloads']} workloads ({sample['holding']} admitted), "
                    f"{index} arrived, lost {len(soak.lost)}, overcommit "
                    f"{len(soak.overcommit)}",
                    flush=True,
                )
            next_sample += args.sample
        time.sleep(max(0.0, min(next_arrival, next_sample, end) - time.monotonic()))


def report(
    args: argparse.Namespace, soak: Soak, watcher: Watcher, metrics: JSON
) -> int:
    pts = [(s["minute"], s["rss_mib"]) for s in soak.samples]
    span = pts[-1][0] if pts else 0.0
    window = min(30.0, span / 2) if span < 60 else 30.0
    tail = [p for p in pts if p[0] >= span - window]
    rss = [y for _, y in pts]
    held = [s for s in soak.samples if s["minute"] >= span - window]
    print(
        f"Workloads in the API over that window: {held[0]['workloads']} -> "
        f"{held[-1]['workloads']} (mean "
        f"{sum(s['workloads'] for s in held) / len(held):.0f}; the queue's "
        f"growth is the cluster's, not a leak)"
    )
    print(
        f"RSS: first {rss[0]:.1f} MiB, last {rss[-1]:.1f}, peak {max(rss):.1f}; "
        f"growth over the last {window:.0f} min: {slope(tail):+.3f} MiB/min "
        f"(whole run {slope(pts):+.3f}; {len(pts)} samples every {args.sample:g} s)"
    )
    c = watcher.counts
    solves = metrics.get("placewise_solve_duration_seconds_count", 0.0)
    solving = metrics.get("placewise_solve_duration_seconds_sum", 0.0)
    print(
        f"work: {len(soak.created)} arrived, {c['admitted']} admissions, "
        f"{c['evicted']} evictions, {c['released']} releases, {c['finished']} "
        f"finished, {len(soak.deleted)} deleted after finishing; solves "
        f"{solves:.0f} (mean {solving / max(solves, 1):.2f} s)"
    )
    rules = Counter(v.split(":")[0] for v in soak.overcommit)
    print(
        f"safety: overcommit {len(soak.overcommit)} {dict(rules) or ''}, lost "
        f"{len(soak.lost)}, double admissions {len(watcher.doubles)}"
    )
    for line in [*soak.overcommit[:5], *sorted(soak.lost)[:5], *watcher.doubles[:5]]:
        print(f"  {line}")
    if args.samples_out:
        Path(args.samples_out).write_text(json.dumps(soak.samples, indent=1))
    return 1 if soak.overcommit or soak.lost or watcher.doubles else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=60.0)
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--gap", type=float, default=4.0, help="mean seconds between arrivals"
    )
    p.add_argument("--finish-after", type=float, default=60.0)
    p.add_argument("--release-after", type=float, default=1.0)
    p.add_argument("--gc-after", type=float, default=30.0)
    p.add_argument("--sample", type=float, default=10.0)
    p.add_argument(
        "--print-every", type=int, default=6, help="samples per progress line"
    )
    p.add_argument("--solver", default="auto", choices=("auto", "cpsat", "greedy"))
    p.add_argument("--time-limit", type=float, default=2.0)
    p.add_argument("--samples-out", metavar="FILE")
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
