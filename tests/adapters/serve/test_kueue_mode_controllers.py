"""``serve --mode kueue`` with the emulator's Kueue controller stand-in: a
preemption completes (the victim's reservation is cleared), and only then is
its preemptor admitted; a completion frees room for what waits.

Each step waits until the loop is at a fixed point (:func:`until_settled`: its
last plan was made from the Workloads the API serves now and asks for nothing
more), not for a quiet spell, so a slow solve cannot pass for a settled one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from placewise.adapters.emulator import KueueControllers
from placewise.models.validate import validate
from tests.adapters.serve.conftest import Harness
from tests.adapters.serve.kueue_e2e import (
    UID_IN_MESSAGE,
    Recorder,
    as_admitted,
    generated,
    read_workloads,
    until_settled,
)
from tests.adapters.serve.test_kueue_mode import (
    KUEUE,
    condition,
    get_workload,
    kueue_objects,
    workload,
)


def start(
    harness_factory: Callable[..., Harness], objects: list[dict[str, Any]], solver: str
) -> tuple[Harness, Any, Recorder]:
    h = harness_factory(objects, kueue_controllers=KueueControllers(release_after=0.3))
    rec = Recorder(h.api).start()
    sc = h.sidecar(mode="kueue", solver=solver, time_limit=1.0, workers=1)
    return h, sc, rec


@pytest.mark.parametrize("solver", ["auto", "greedy"])
def test_preemption_completes_then_preemptor_is_admitted(
    harness_factory: Callable[..., Harness], solver: str
) -> None:
    """The loop admits ``low`` (all 16 GPUs of the queue).  ``high`` arrives (a
    change), so ``low`` may be preempted: it is evicted, the stand-in clears
    its reservation, and only then is ``high`` admitted.  ``low`` is pending
    again (no room), requeued; nothing else is evicted, and the cluster ends
    sound."""
    objects = kueue_objects(gpu_quota=16)
    h, sc, rec = start(harness_factory, objects, solver)
    try:
        low = workload("low", 4, 4)
        h.create(low)
        until_settled(sc, h.api)
        assert rec.kinds("admitted") == ["ml/low"]
        high = workload("high", 2, 4, priority=100)
        h.create(high)
        until_settled(sc, h.api)
    finally:
        rec.stop()
    assert rec.kinds("evicted") == ["ml/low"]
    released, admitted = (
        rec.first("ml/low", "released"),
        rec.first("ml/high", "admitted"),
    )
    assert released is not None and admitted is not None and released < admitted
    low_now = get_workload(h, "low")
    assert "admission" not in low_now["status"]
    assert condition(low_now, "Requeued")["status"] == "True"
    assert condition(low_now, "Preempted")["reason"] == "InClusterQueue"
    assert condition(get_workload(h, "high"), "Admitted")["status"] == "True"
    snap, plan = as_admitted([*objects, low, high], read_workloads(h.api))
    assert [a.workload for a in plan.admissions] == ["ml/high"]
    assert validate(snap, plan) == []


def test_completion_frees_room_for_what_waits(
    harness_factory: Callable[..., Harness],
) -> None:
    """``next`` (same priority) cannot preempt ``first``, so it waits; when
    ``first`` finishes (the job's controller sets Finished) its quota is free
    and ``next`` is admitted without any eviction."""
    objects = kueue_objects(gpu_quota=16)
    h, sc, rec = start(harness_factory, objects, "auto")
    try:
        h.create(workload("first", 4, 4))
        until_settled(sc, h.api)
        h.create(workload("next", 2, 4))
        until_settled(sc, h.api)
        assert rec.kinds("admitted") == ["ml/first"]
        first = get_workload(h, "first")
        conds = [
            *first["status"]["conditions"],
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "Job finished successfully",
                "lastTransitionTime": "2026-01-01T00:05:00Z",
            },
        ]
        h.custom.patch_namespaced_custom_object_status(
            KUEUE,
            "v1beta2",
            "ml",
            "workloads",
            "first",
            {"status": {"conditions": conds}},
        )
        until_settled(sc, h.api)
    finally:
        rec.stop()
    assert rec.kinds("admitted") == ["ml/first", "ml/next"]
    assert rec.kinds("evicted") == []


@pytest.mark.parametrize(
    ("nodes", "pending", "seed", "solver"),
    [(16, 12, 3, "auto"), (16, 12, 7, "greedy")],
)
def test_generated_cluster_with_controllers(
    harness_factory: Callable[..., Harness],
    nodes: int,
    pending: int,
    seed: int,
    solver: str,
) -> None:
    """The issue's reproducer (and a held-out seed) with victims that really
    release: every preemption completes before its preemptor is admitted,
    the loop settles, nothing it admitted is evicted, the end state is sound."""
    objects = generated(nodes, pending, seed)
    h, sc, rec = start(harness_factory, objects, solver)
    try:
        until_settled(sc, h.api)
    finally:
        rec.stop()
    final = {
        f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
        for o in read_workloads(h.api)
    }
    uids = {o["metadata"]["uid"]: key for key, o in final.items()}
    for victim in rec.kinds("released"):
        preempted = next(
            c for c in final[victim]["status"]["conditions"] if c["type"] == "Preempted"
        )
        match = UID_IN_MESSAGE.search(preempted["message"])
        assert match, preempted
        admitted = rec.first(uids[match.group(1)], "admitted")
        released = rec.first(victim, "released")
        assert admitted is not None and released is not None and released < admitted
    assert rec.self_evictions() == []
    assert rec.kinds("admitted")
    snap, plan = as_admitted(objects, list(final.values()))
    assert validate(snap, plan) == []
