"""A short replay through the live loop: ``serve --mode kueue`` on the
emulator with Kueue's controller stand-in, Workloads arriving through the
official client on the generator's timeline (about nine minutes compressed
thirty-fold), each job finishing ``RUN_S`` seconds after its admission.

Held to the rules a replay holds the solvers to, and measured the way
``placewise simulate`` measures one:

* no node and no quota is overcommitted at any read-back of the cluster;
* no eviction whose room serves another queue or buys its preemptor nothing
  (the validator's ``preemption.unneeded`` / ``preemption.room-elsewhere``
  on every plan the loop published), and every eviction the cluster shows is
  one a published plan made, for the preemptor its message names;
* no admission reversed unless the cluster changed in between (a Workload
  arrived or finished between the plan that admitted it and the plan that
  evicted it);
* the replay's metrics (delay, JCT, utilisation, preemptions, by priority)
  computed by the replay's own code from the watched timeline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from placewise.adapters.emulator import KueueControllers
from placewise.models.validate import validate
from tests.adapters.serve.conftest import Harness
from tests.adapters.serve.kueue_e2e import (
    UID_IN_MESSAGE,
    Recorder,
    as_admitted,
    generated,
    key_of,
    read_workloads,
    until_settled,
)
from tests.adapters.serve.kueue_replay import Arrival, gpus_of, replay_result

JSON = dict[str, Any]
NODES, PENDING, SEED = 8, 40, 4
COMPRESS = 30.0
"""Simulated seconds per wall second: the ~9 minutes of arrivals take ~18 s."""
RUN_S = 8.0
"""Wall seconds a job runs once admitted (the stand-in's finish_after)."""
NEEDED_RULES = ("preemption.unneeded", "preemption.room-elsewhere")


def split(objects: list[JSON]) -> tuple[list[JSON], list[tuple[float, JSON]]]:
    """The generated cluster without its work, and its pending Workloads as
    arrivals (offset in wall seconds) that fit one queue's GPU quota (larger
    ones would only wait out the window)."""
    cluster = [o for o in objects if o["kind"] not in ("Workload", "Pod")]
    quota = min(
        int(r["nominalQuota"])
        for o in cluster
        if o["kind"] == "ClusterQueue"
        for g in o["spec"]["resourceGroups"]
        for f in g["flavors"]
        for r in f["resources"]
        if r["name"] == "nvidia.com/gpu"
    )
    pending = [
        o
        for o in objects
        if o["kind"] == "Workload"
        and not (o.get("status") or {}).get("admission")
        and gpus_of(o) <= quota
    ]

    def at(o: JSON) -> float:
        ts = o["metadata"]["creationTimestamp"].replace("Z", "+00:00")
        return datetime.fromisoformat(ts).timestamp()

    first = min(at(o) for o in pending)
    out = []
    for o in sorted(pending, key=lambda o: (at(o), key_of(o))):
        meta = {
            k: v
            for k, v in o["metadata"].items()
            if k not in ("uid", "creationTimestamp", "resourceVersion")
        }
        bare = {k: v for k, v in o.items() if k != "status"}
        out.append(((at(o) - first) / COMPRESS, {**bare, "metadata": meta}))
    return cluster, out


def is_finished(obj: JSON) -> bool:
    return any(
        c.get("type") == "Finished" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def test_replay_window_through_serve(harness_factory: Callable[..., Harness]) -> None:
    cluster, timeline = split(generated(NODES, PENDING, SEED))
    assert len(timeline) >= 30
    h = harness_factory(
        cluster,
        kueue_controllers=KueueControllers(release_after=0.3, finish_after=RUN_S),
    )
    rec = Recorder(h.api).start()
    sc = h.sidecar(mode="kueue", solver="auto", time_limit=1.0, workers=1)
    published: list[Any] = []
    publish = sc.loop.publish

    def keep(state: Any) -> None:
        published.append(state)
        publish(state)

    sc.loop.publish = keep  # type: ignore[method-assign]
    arrivals: dict[str, Arrival] = {}
    created: list[JSON] = []
    broken: list[str] = []

    def read_back() -> list[JSON]:
        served = read_workloads(h.api)
        snap, plan = as_admitted([*cluster, *created], served)
        broken.extend(str(v) for v in validate(snap, plan))
        return served

    t0 = time.monotonic()
    try:
        for offset, obj in timeline:
            while time.monotonic() < t0 + offset:
                read_back()
                time.sleep(min(0.5, max(0.0, t0 + offset - time.monotonic())))
            h.create(obj)
            arrivals[key_of(obj)] = Arrival(key_of(obj), time.monotonic(), obj)
            created.append(obj)
        deadline = time.monotonic() + 120
        while not all(is_finished(o) for o in read_back()):
            assert time.monotonic() < deadline, "the window's jobs did not all finish"
            time.sleep(0.5)
        until_settled(sc, h.api)
        end = time.monotonic()
    finally:
        rec.stop()
    final = read_workloads(h.api)
    assert broken == [], broken[:5]

    # Every eviction the cluster saw is one a published plan made, for the
    # preemptor its Preempted message names, and no plan's victim was
    # unneeded or freed room for another queue.
    uids = {o["metadata"]["uid"]: key_of(o) for o in final}
    planned = {(p.workload, p.preemptor) for s in published for p in s.plan.preemptions}
    evicted = rec.kinds("evicted")
    for key in set(evicted):
        obj = next(o for o in final if key_of(o) == key)
        cond = next(c for c in obj["status"]["conditions"] if c["type"] == "Preempted")
        match = UID_IN_MESSAGE.search(cond["message"])
        assert match, cond
        assert (key, uids[match.group(1)]) in planned, (key, cond)
    unneeded = [
        str(v)
        for s in published
        if s.plan.preemptions
        for v in validate(s.built.snapshot, s.plan)
        if v.rule in NEEDED_RULES
    ]
    assert unneeded == []

    # No admission taken back without a change: between the plan that
    # admitted a Workload and the next plan that evicts it, some Workload
    # arrived or finished.
    def inputs(state: Any) -> tuple[set[str], set[str]]:
        raw = state.built.kueue
        return set(raw), {k for k, o in raw.items() if is_finished(o)}

    admitted_by: dict[str, Any] = {}
    for state in published:
        for p in state.plan.preemptions:
            before = admitted_by.pop(p.workload, None)
            if before is None:
                continue
            (keys_a, done_a), (keys_e, done_e) = inputs(before), inputs(state)
            ids = [id(s) for s in published]
            between = published[ids.index(id(before)) : ids.index(id(state)) + 1]
            why = [s.built.change for s in between]
            kept = [p.workload in s.built.kept for s in between]
            assert keys_e - keys_a or done_e - done_a, (
                f"{p.workload} admitted and evicted with no arrival or finish"
                f" between; why each plan was free: {why}, the victim kept: {kept}"
            )
        for a in state.plan.admissions:
            admitted_by.setdefault(a.workload, state)

    # The replay's metrics, by the replay's code, from the watched timeline.
    capacity = sum(
        int(o["status"]["allocatable"]["nvidia.com/gpu"])
        for o in cluster
        if o["kind"] == "Node"
    )
    metrics = replay_result(
        arrivals,
        rec.events,
        run_s=RUN_S,
        t0=t0,
        end=end,
        capacity_gpus=capacity,
        solves=sc.loop.solves,
    ).metrics()
    print({k: v for k, v in metrics.items() if k != "by_priority"})
    n = len(timeline)
    assert (metrics["jobs"], metrics["started"], metrics["finished"]) == (n, n, n)
    assert metrics["preemptions"] == len(evicted)
    assert (metrics["wasted_gpu_h"] > 0) == bool(evicted)
    assert 0 < metrics["utilization_pct"] <= 100
    assert metrics["mean_delay_s"] >= 0
    assert metrics["mean_jct_s"] > metrics["mean_delay_s"]
    expected_goodput = sum(gpus_of(o) for _, o in timeline) * RUN_S / 3600
    assert abs(metrics["goodput_gpu_h"] - expected_goodput) < 1e-9
    by_priority = metrics["by_priority"]
    assert sum(m["jobs"] for m in by_priority.values()) == n
    assert set(by_priority) == {
        o["spec"]["priorityClassRef"]["name"] for _, o in timeline
    }
