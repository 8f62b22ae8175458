"""Helpers for end-to-end runs of ``serve --mode kueue`` on generated instances.

Everything is observed through the official client: a watch on Workloads
records each admission, eviction, release and finish as the API server
serves them, and the final state is read back with a LIST.  Nothing reaches
into the sidecar to learn what happened.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client, watch

from placewise.adapters.generate import family, generate
from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.serve import Sidecar
from placewise.adapters.serve.engine.preempt import conditions
from placewise.adapters.serve.engine.preempt import holds_quota as holds
from placewise.adapters.serve.kube.informer import key_of
from placewise.models.plan import (
    Plan,
    PlanAdmission,
    PlanPending,
    PlanPreemption,
    SolverInfo,
)
from placewise.models.snapshot import Snapshot, build_snapshot
from placewise.models.workload import Workload

JSON = dict[str, Any]
KUEUE = "kueue.x-k8s.io"
UID_IN_MESSAGE = re.compile(r"\(UID: ([^,)]+)")


def generated(nodes: int, pending: int, seed: int) -> list[JSON]:
    """``placewise generate --nodes N --pending P --seed S`` (default family)."""
    return generate(
        family("default").with_overrides(nodes=nodes, pending=pending), seed
    )


def decode(objects: list[JSON]) -> Snapshot:
    problems: list[Any] = []
    decoded, _ = decode_objects(
        [RawObject(o, "cluster", None) for o in objects], problems
    )
    assert not problems, problems
    return build_snapshot(decoded)


def decode_workload(obj: JSON) -> Workload:
    problems: list[Any] = []
    decoded, _ = decode_objects([RawObject(obj, "cluster", None)], problems)
    assert not problems, problems
    (w,) = decoded.workloads.values()
    return w


@dataclass
class Recorder:
    """Watches Workloads; records transitions in the order they were served."""

    api: client.ApiClient
    events: list[tuple[float, str, str]] = field(default_factory=list)
    last_event: float = field(default_factory=time.monotonic)
    _state: dict[str, tuple[bool, bool, bool]] = field(default_factory=dict)
    _watch: Any = None
    _thread: threading.Thread | None = None

    def start(self) -> Recorder:
        custom = client.CustomObjectsApi(self.api)
        listed = json.loads(
            custom.list_cluster_custom_object(
                KUEUE, "v1beta2", "workloads", _preload_content=False
            ).data
        )
        for obj in listed["items"]:
            self._state[key_of(obj)] = self._flags(obj)
        self._watch = watch.Watch()
        rv = listed["metadata"]["resourceVersion"]

        def run() -> None:
            with contextlib.suppress(Exception):  # the emulator went away
                self._stream(custom, rv)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        return self

    def _stream(self, custom: client.CustomObjectsApi, rv: str) -> None:
        for ev in self._watch.stream(
            custom.list_cluster_custom_object,
            KUEUE,
            "v1beta2",
            "workloads",
            resource_version=rv,
            timeout_seconds=120,
        ):
            self.saw(ev["object"])

    @staticmethod
    def _flags(obj: JSON) -> tuple[bool, bool, bool]:
        c = conditions(obj)
        return holds(obj), c.get("Evicted") == "True", c.get("Finished") == "True"

    def saw(self, obj: JSON) -> None:
        key = key_of(obj)
        held, evicted, finished = self._flags(obj)
        was_held, was_evicted, was_finished = self._state.get(
            key, (False, False, False)
        )
        now = time.monotonic()
        self.last_event = now
        if held and not was_held:
            self.events.append((now, key, "admitted"))
        if evicted and not was_evicted:
            self.events.append((now, key, "evicted"))
        if was_held and not held and not finished:
            self.events.append((now, key, "released"))
        if finished and not was_finished:
            self.events.append((now, key, "finished"))
        self._state[key] = (held, evicted, finished)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def catch_up(self, read: dict[str, JSON], timeout: float = 10.0) -> None:
        """Wait until the watch has served what the read-back ``read`` (key ->
        Workload) shows: a LIST can be ahead of the watch, and a transition
        it shows is recorded only once the watch serves it."""
        deadline = time.monotonic() + timeout
        want = {k: self._flags(o) for k, o in read.items()}
        while any(self._state.get(k) != f for k, f in want.items()):
            behind = {
                k: self._state.get(k)
                for k, f in want.items()
                if self._state.get(k) != f
            }
            assert time.monotonic() < deadline, f"the watch is behind on {behind}"
            time.sleep(0.02)

    def kinds(self, kind: str) -> list[str]:
        return [k for _, k, what in self.events if what == kind]

    def self_evictions(self, since: float = 0.0) -> list[str]:
        """Workloads evicted after the loop itself admitted them (after ``since``)."""
        ours: set[str] = set()
        out: list[str] = []
        for t, key, what in self.events:
            if what == "admitted":
                ours.add(key)
            elif what == "evicted" and key in ours and t >= since:
                out.append(key)
        return out

    def first(self, key: str, kind: str) -> float | None:
        return next((t for t, k, w in self.events if k == key and w == kind), None)


def settle(
    sc: Sidecar, rec: Recorder, quiet: float = 2.0, timeout: float = 120.0
) -> None:
    """Until the loop's last plan was made from the Workloads the API serves
    now (:func:`solved_current`) and, for ``quiet`` seconds, no Workload
    changed and no plan was made.  Without a Kueue controller evicted
    victims never release, so a plan may go on asking for what must wait:
    quiet alone cannot tell that from a solve still running on a loaded
    machine, but a plan older than the Workloads it serves can."""
    deadline = time.monotonic() + timeout
    solves, since = sc.loop.solves, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = time.monotonic()
        if sc.loop.solves != solves:
            solves, since = sc.loop.solves, now
        if now - max(since, rec.last_event) < quiet:
            continue
        if solved_current(sc, rec.api):
            return
        since = now  # behind the cluster: a solve is due or running
    raise AssertionError(f"the loop did not settle in {timeout}s: {rec.events[-5:]}")


def solved_current(sc: Sidecar, api: client.ApiClient) -> bool:
    """The loop's last plan was made from exactly the Workloads the API server
    serves now (the same names at the same resourceVersions)."""
    state = sc.loop.state
    if state is None:
        return False
    solved = {
        k: o["metadata"].get("resourceVersion") for k, o in state.built.kueue.items()
    }
    served = {
        key_of(o): o["metadata"].get("resourceVersion") for o in read_workloads(api)
    }
    return solved == served


def settled(sc: Sidecar, api: client.ApiClient) -> bool:
    """The loop is at a fixed point: its last plan was made from exactly the
    Workloads the API server serves now (the same names at the same
    resourceVersions), that plan asks for no admission and no preemption, and
    no eviction is still waiting for its job to stop.  Nothing but a change in
    the cluster can make it write again."""
    solves, state = sc.loop.solves, sc.loop.state
    if state is None or state.plan.admissions or state.plan.preemptions:
        return False
    served = {key_of(o): o for o in read_workloads(api)}
    if not solved_current(sc, api):
        return False
    if any(
        holds(o) and conditions(o).get("Evicted") == "True" for o in served.values()
    ):
        return False  # the Kueue stand-in has yet to release it
    return sc.loop.solves == solves and sc.loop.state is state


def until_settled(sc: Sidecar, api: client.ApiClient, timeout: float = 120.0) -> None:
    """Poll :func:`settled`; the timeout only bounds a loop that never gets
    there (generous: a slow solve under coverage on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if settled(sc, api):
            return
        time.sleep(0.1)
    state = sc.loop.state
    raise AssertionError(
        f"the loop did not settle in {timeout}s: last plan "
        f"{state.plan if state else None}, workloads "
        f"{[(key_of(o), holds(o), conditions(o)) for o in read_workloads(api)]}"
    )


def read_workloads(api: client.ApiClient) -> list[JSON]:
    resp = client.CustomObjectsApi(api).list_cluster_custom_object(
        KUEUE, "v1beta2", "workloads", _preload_content=False
    )
    return list(json.loads(resp.data)["items"])


def final_plan(start: Snapshot, final: list[JSON]) -> Plan:
    """The cluster's state as a plan against the starting instance: admissions
    of workloads pending at the start that hold quota now, preemptions of
    workloads running at the start that released it (preemptor and reason from
    their Preempted condition), everything else pending."""
    by_uid = {w.uid: w.key for w in start.workloads.values()}
    admissions, preemptions, pending = [], [], []
    for obj in sorted(final, key=key_of):
        key = key_of(obj)
        before = start.workloads[key]
        if before.is_pending:
            if holds(obj):
                adm = decode_workload(obj).admission
                assert adm is not None
                admissions.append(
                    PlanAdmission(
                        workload=key,
                        cluster_queue=adm.cluster_queue,
                        pod_set_assignments=adm.pod_set_assignments,
                    )
                )
            else:
                pending.append(PlanPending(workload=key, reason="pending"))
        elif before.is_running:
            now = decode_workload(obj)
            if holds(obj):
                assert now.admission == before.admission, (
                    f"{key} was released and admitted again: not a plan"
                )
                continue
            cond = next(
                c
                for c in obj["status"]["conditions"]
                if c["type"] == "Preempted" and c["status"] == "True"
            )
            match = UID_IN_MESSAGE.search(cond["message"])
            assert match, cond
            preemptions.append(
                PlanPreemption(
                    workload=key,
                    preemptor=by_uid[match.group(1)],
                    reason=cond["reason"],
                )
            )
    return Plan(
        solver=SolverInfo(name="cluster", status="FEASIBLE"),
        admissions=tuple(admissions),
        preemptions=tuple(preemptions),
        pending=tuple(pending),
    )


def as_admitted(start_objects: list[JSON], final: list[JSON]) -> tuple[Snapshot, Plan]:
    """Every Workload that holds quota now, as one plan over the starting
    instance with no Workload running: the final state's soundness (quota,
    nodes, flavors, topology) whatever happened in between."""
    cleared = [
        {k: v for k, v in o.items() if k != "status"} if o["kind"] == "Workload" else o
        for o in start_objects
    ]
    snap = decode(cleared)
    admissions, pending = [], []
    for obj in sorted(final, key=key_of):
        if holds(obj):
            adm = decode_workload(obj).admission
            assert adm is not None
            admissions.append(
                PlanAdmission(
                    workload=key_of(obj),
                    cluster_queue=adm.cluster_queue,
                    pod_set_assignments=adm.pod_set_assignments,
                )
            )
        else:
            pending.append(PlanPending(workload=key_of(obj), reason="pending"))
    plan = Plan(
        solver=SolverInfo(name="cluster", status="FEASIBLE"),
        admissions=tuple(admissions),
        pending=tuple(pending),
    )
    return snap, plan
