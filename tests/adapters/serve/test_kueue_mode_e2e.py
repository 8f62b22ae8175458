"""``serve --mode kueue`` on generated clusters: it settles, never overcommits,
and never evicts what it admitted while nothing in the cluster changes.

The reproducer of issue 13 is ``generate --nodes 16 --pending 12 --seed 3``:
there the first plan's admissions relied on room a victim credited to another
preemptor still held, and later solves traded fresh admissions away.  With no
Kueue controller running, victims keep their quota, so whatever depends on
them must wait; the rest must be admitted and stay.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from placewise.models.validate import validate
from tests.adapters.serve.conftest import Harness
from tests.adapters.serve.kueue_e2e import (
    Recorder,
    as_admitted,
    decode,
    final_plan,
    generated,
    read_workloads,
    settle,
)


def run(
    harness_factory: Callable[..., Harness],
    objects: list[dict[str, Any]],
    solver: str,
    **emu: Any,
) -> tuple[Harness, Any, Recorder]:
    h = harness_factory(objects, **emu)
    rec = Recorder(h.api).start()
    sc = h.sidecar(mode="kueue", solver=solver, time_limit=1.0, workers=1)
    return h, sc, rec


@pytest.mark.parametrize(
    ("nodes", "pending", "seed", "solver"),
    [
        (16, 12, 3, "auto"),  # the reproducer
        (16, 12, 3, "greedy"),
        (16, 12, 1, "auto"),
        (24, 16, 11, "greedy"),
        (48, 30, 5, "auto"),  # larger
    ],
)
def test_settles_without_overcommit_or_self_eviction(
    harness_factory: Callable[..., Harness],
    nodes: int,
    pending: int,
    seed: int,
    solver: str,
) -> None:
    """After the loop settles, the cluster read back through the client is a
    plan the validator accepts against the starting instance; nothing the loop
    admitted was evicted; and it admitted something."""
    objects = generated(nodes, pending, seed)
    start = decode(objects)
    h, sc, rec = run(harness_factory, objects, solver)
    try:
        settle(sc, rec)
    finally:
        rec.stop()
    final = read_workloads(h.api)
    plan = final_plan(start, final)
    assert validate(start, plan) == []
    assert rec.self_evictions() == []
    assert plan.admissions, "the loop admitted nothing"
    # Settled means settled: the plan it serves asks for nothing it can do now.
    solves = sc.loop.solves
    settle(sc, rec, quiet=0.8)
    assert sc.loop.solves == solves


def test_arrival_is_a_change_that_may_preempt(
    harness_factory: Callable[..., Harness],
) -> None:
    """An arrival is a change: a high-priority Workload created after the loop
    settled makes it preempt; the cluster stays sound, and the loop settles
    again with no evictions after that round."""
    objects = generated(16, 12, 3)
    h, sc, rec = run(harness_factory, objects, "greedy")
    try:
        settle(sc, rec)
        ours = set(rec.kinds("admitted"))
        assert ours
        template = next(
            o for o in objects if o["metadata"]["name"].startswith("single-")
        )
        spec = copy.deepcopy(template["spec"])
        spec.pop("priorityClassRef", None)
        spec["priority"] = 1_000_000
        spec["podSets"][0]["count"] = 4
        (container,) = spec["podSets"][0]["template"]["spec"]["containers"]
        container["resources"] = {
            "requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "8"},
            "limits": {"nvidia.com/gpu": "8"},
        }
        urgent = {
            "apiVersion": template["apiVersion"],
            "kind": "Workload",
            "metadata": {
                "name": "urgent",
                "namespace": template["metadata"]["namespace"],
            },
            "spec": spec,
        }
        arrived = rec.last_event
        h.create(urgent)
        settle(sc, rec)
        evicted = [k for t, k, w in rec.events if w == "evicted" and t > arrived]
        assert evicted, "the urgent arrival preempted nothing"
        before = len(rec.events)
        settle(sc, rec, quiet=1.0)
        assert rec.kinds("evicted")[-len(evicted) :] == evicted
        assert len(rec.events) == before
    finally:
        rec.stop()
    snap, plan = as_admitted([*objects, urgent], read_workloads(h.api))
    assert validate(snap, plan) == []
