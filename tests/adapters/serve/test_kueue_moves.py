"""``serve --mode kueue`` carries out moves, end to end through the emulator.

Two racks of two 4-GPU hosts; two small movable Workloads (2 GPUs each) sit
one per rack, so no rack has the two empty hosts a rack-required gang of
2 x 4 GPUs needs, though quota is free.  One move (a small Workload to the
other rack) lets the gang in.  Everything is observed through the API: the
tests wait on real conditions (the gang and every moved Workload holding
quota again), never on quiet time, and at every read-back on the way the
Workloads holding quota pass the validator (nothing overcommitted).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubernetes import client

from placewise.adapters.emulator import KueueControllers
from placewise.adapters.serve.modes.kueue_mode import PODS_STILL_UP
from placewise.models.moves import MOVABLE_LABEL, MoveRules
from placewise.models.validate import validate
from placewise.solver.policy import Policy
from tests.adapters.serve.conftest import GPU, Harness, metric, pod, wait_for
from tests.adapters.serve.kueue_e2e import (
    Recorder,
    as_admitted,
    holds,
    key_of,
    read_workloads,
)
from tests.adapters.serve.test_kueue_mode import kueue_objects, workload

JSON = dict[str, Any]
ROOT = Path(__file__).resolve().parents[3]


def running(name: str, host: str) -> JSON:
    """A movable 1 x 2-GPU Workload admitted on ``host``."""
    wl = workload(name, 1, 2)
    wl["metadata"]["labels"] = {MOVABLE_LABEL: "true"}
    wl["metadata"]["annotations"] = {"placewise.io/checkpointed": "true"}
    reserved = {
        "reason": "QuotaReserved",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "status": "True",
    }
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": 1,
                    "flavors": {"cpu": "tas", GPU: "tas"},
                    "resourceUsage": {"cpu": "1", GPU: "2"},
                    "topologyAssignment": {
                        "levels": ["kubernetes.io/hostname"],
                        "domains": [{"values": [host], "count": 1}],
                    },
                }
            ],
        },
        "conditions": [
            {"type": "QuotaReserved", **reserved},
            {"type": "Admitted", **reserved, "reason": "Admitted"},
        ],
    }
    return wl


def instance() -> list[JSON]:
    return [
        *kueue_objects(gpu_quota=16),
        running("a", "r1-h1"),
        running("b", "r2-h1"),
        workload("gang", 2, 4, required="rack"),
    ]


MOVABLE = ("ml/a", "ml/b")
EVERYONE = ("ml/a", "ml/b", "ml/gang")


def sound_until(
    h: Harness, done: Callable[[dict[str, JSON]], bool], timeout: float = 40.0
) -> dict[str, JSON]:
    """Read the Workloads back until ``done``; every read-back is sound."""
    deadline = time.monotonic() + timeout
    objects = instance()
    while True:
        now = {key_of(o): o for o in read_workloads(h.api)}
        snap, plan = as_admitted(objects, list(now.values()))
        assert validate(snap, plan) == [], [str(v) for v in validate(snap, plan)]
        if done(now):
            return now
        assert time.monotonic() < deadline, {k: holds(o) for k, o in now.items()}
        time.sleep(0.05)


def all_hold(now: dict[str, JSON]) -> bool:
    return all(holds(now[k]) for k in EVERYONE)


def hosts(wl: JSON) -> set[str]:
    psa = wl["status"]["admission"]["podSetAssignments"][0]
    ta = psa["topologyAssignment"]
    if "domains" in ta:
        return {d["values"][-1] for d in ta["domains"]}
    # v1beta2's compressed form: the hostname level of the one slice.
    level = ta["slices"][0]["valuesPerLevel"][-1]
    if "universal" in level:
        return {level["universal"]}
    ind = level["individual"]
    return {ind.get("prefix", "") + r + ind.get("suffix", "") for r in ind["roots"]}


def test_blocked_gang_gets_in_through_a_move(
    harness_factory: Callable[..., Harness],
) -> None:
    """The sidecar evicts one small Workload (Kueue's way), the stand-in
    releases it, and only then are the gang and the moved Workload admitted:
    the gang on one whole rack, the moved one on the other rack."""
    h = harness_factory(instance(), kueue_controllers=KueueControllers(0.3))
    rec = Recorder(h.api).start()
    policy = Policy(moves=MoveRules(count=2))
    try:
        h.sidecar(mode="kueue", solver="auto", time_limit=1.0, policy=policy)
        final = sound_until(h, all_hold)
        rec.catch_up(final)
    finally:
        rec.stop()
    (moved,) = rec.kinds("evicted")
    assert moved in MOVABLE
    assert rec.kinds("released") == [moved]
    released = rec.first(moved, "released")
    gang_in = rec.first("ml/gang", "admitted")
    assert released is not None and gang_in is not None and released < gang_in
    gang_hosts = hosts(final["ml/gang"])
    assert len(gang_hosts) == 2 and len({h_[:2] for h_ in gang_hosts}) == 1
    assert not hosts(final[moved]) & gang_hosts
    assert rec.kinds("admitted").count(moved) == 1  # once again, never doubled


def test_without_a_budget_nothing_moves(
    harness_factory: Callable[..., Harness],
) -> None:
    """No moves budget: the gang waits and nothing running is evicted."""
    h = harness_factory(instance(), kueue_controllers=KueueControllers(0.3))
    rec = Recorder(h.api).start()
    try:
        sc = h.sidecar(mode="kueue", solver="auto", time_limit=1.0)
        sound_until(
            h,
            lambda now: (
                sc.loop.solves >= 2
                and "pending" in str(now["ml/gang"]["status"].get("conditions")).lower()
            ),
        )
    finally:
        rec.stop()
    assert rec.kinds("evicted") == []


def test_sigkill_between_eviction_and_readmission_loses_nothing(
    harness_factory: Callable[..., Harness], tmp_path: Path
) -> None:
    """``placewise serve --mode kueue --moves 2`` in its own process is
    SIGKILLed as soon as its eviction is served (the stand-in releases 2 s
    later, so the moved Workload cannot have been admitted again).  The
    Workload goes back to its queue, pending; a restarted sidecar admits it
    and the gang, each exactly once."""
    h = harness_factory(instance(), kueue_controllers=KueueControllers(2.0))
    kubeconfig = h.emu.kubeconfig(tmp_path / "kubeconfig")
    rec = Recorder(h.api).start()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placewise",
            "serve",
            "--mode",
            "kueue",
            "--kubeconfig",
            str(kubeconfig),
            "--no-leader-elect",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
            "--time-limit",
            "1",
            "--workers",
            "1",
            "--moves",
            "2",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        try:
            evicted = sound_until(
                h, lambda now: any(_evicted(now[k]) for k in MOVABLE), timeout=30
            )
        finally:
            proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=10)
        (moved,) = [k for k in MOVABLE if _evicted(evicted[k])]
        assert proc.returncode == -signal.SIGKILL, err.decode()[-2000:]
        # Killed between eviction and re-admission: it was never admitted again.
        assert rec.kinds("admitted").count(moved) == 0
        # Kueue's side goes on: the Workload is released, pending in its queue.
        pending = sound_until(h, lambda now: not holds(now[moved]))
        assert pending[moved]["spec"]["queueName"] == "lq"
        assert "admission" not in pending[moved]["status"]
        h.sidecar(
            mode="kueue",
            solver="auto",
            time_limit=1.0,
            policy=Policy(moves=MoveRules(count=2)),
        )
        rec.catch_up(sound_until(h, all_hold))
    finally:
        rec.stop()
    assert rec.kinds("evicted") == [moved]  # the restart moved nothing else
    assert rec.kinds("admitted").count(moved) == 1
    assert rec.kinds("admitted").count("ml/gang") == 1


def _waits_for_pods(wl: JSON) -> bool:
    """The sidecar wrote that ``wl`` waits for an evicted Workload's pods."""
    return any(
        c["type"] == "QuotaReserved"
        and c["status"] == "False"
        and c.get("message") == PODS_STILL_UP
        for c in wl.get("status", {}).get("conditions") or []
    )


def _evicted(wl: JSON) -> bool:
    return any(
        c["type"] == "Evicted" and c["status"] == "True"
        for c in wl.get("status", {}).get("conditions") or []
    )


def job_pod(name: str, host: str) -> JSON:
    """The running pod of Workload ``name``'s job (both owned by the Job),
    TAS-managed so it is counted once, through the Workload."""
    p = pod(
        f"{name}-0",
        gpus=2,
        labels={"app": name},
        annotations={"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
        nodeName=host,
    )
    p["metadata"]["ownerReferences"] = [owner(name)]
    return p


def owner(name: str) -> JSON:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": name,
        "uid": f"job-{name}",
        "controller": True,
    }


def pdb(name: str, app: str) -> JSON:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
    }


def test_a_pod_disruption_budget_is_never_exceeded_by_a_move(
    harness_factory: Callable[..., Harness],
) -> None:
    """``b``'s PodDisruptionBudget allows no disruption, so ``b`` is never
    moved, though the first plan proposes moving it: the move is refused
    before anything is evicted and the next plan moves ``a`` instead.  Its
    re-admission waits until its pod is gone (deleted here, as Kueue's
    job reconciler would after the eviction)."""
    objects = instance()
    for wl in objects:
        if wl.get("kind") == "Workload" and wl["metadata"]["name"] in ("a", "b"):
            wl["metadata"]["ownerReferences"] = [owner(wl["metadata"]["name"])]
    h = harness_factory(
        [*objects, job_pod("a", "r1-h1"), job_pod("b", "r2-h1")],
        kueue_controllers=KueueControllers(0.3),
    )
    h.create(pdb("keep-b", "b"))
    budgets = client.PolicyV1Api(h.api)

    def guarded() -> bool:
        status = budgets.read_namespaced_pod_disruption_budget("keep-b", "ml").status
        return bool(status and status.current_healthy == 1)

    wait_for(guarded, what="the budget's status")
    rec = Recorder(h.api).start()
    try:
        sc = h.sidecar(
            mode="kueue",
            solver="auto",
            time_limit=1.0,
            policy=Policy(moves=MoveRules(count=2)),
        )
        sound_until(h, lambda now: _evicted(now["ml/a"]))
        # Released, a is planned again; the sidecar holds it back (and the
        # gang, whose hosts include a's) while a's pod is still up.
        held_back = sound_until(
            h,
            lambda now: (
                not holds(now["ml/a"])
                and any(_waits_for_pods(now[k]) for k in ("ml/a", "ml/gang"))
            ),
        )
        rec.catch_up(held_back)  # every transition so far recorded
        assert rec.kinds("admitted") == []
        gone = time.monotonic()
        h.core.delete_namespaced_pod("a-0", "ml", grace_period_seconds=0)
        rec.catch_up(sound_until(h, all_hold))
    finally:
        rec.stop()
    assert rec.kinds("evicted") == ["ml/a"]
    # The first plan (deterministic: one worker, seed 0) did propose ``b``.
    assert metric(sc, "placewise_moves_total", result="blocked") >= 1
    assert metric(sc, "placewise_moves_total", result="evicted") == 1
    readmitted = rec.first("ml/a", "admitted")
    assert readmitted is not None and readmitted > gone


def test_a_bad_move_budget_stops_serve_with_the_file_and_field(
    tmp_path: Path,
) -> None:
    """A negative budget in ``--policy``: exit 2 naming the file and field,
    before anything is contacted; a negative ``--moves``: exit 2 (usage)."""
    bad = tmp_path / "policy.yaml"
    bad.write_text("moves:\n  budget:\n    count: -1\n")
    base = [sys.executable, "-m", "placewise", "serve", "--mode", "kueue"]
    base += ["--kubeconfig", str(tmp_path / "absent")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    got = subprocess.run(
        [*base, "--policy", str(bad)], env=env, capture_output=True, timeout=60
    )
    assert got.returncode == 2, got.stderr
    err = got.stderr.decode()
    assert str(bad) in err and "moves.budget.count" in err
    assert "Traceback" not in err
    got = subprocess.run(
        [*base, "--moves", "-1"], env=env, capture_output=True, timeout=60
    )
    assert got.returncode == 2 and b"--moves" in got.stderr


def test_pods_still_up_are_found_for_jobs_and_pod_groups() -> None:
    """An evicted Workload's bound pods hold their hosts, whether a Job owns
    both (Job integration) or the pods own the Workload (pod groups);
    unbound pods and Workloads that hold quota do not count."""
    from placewise.adapters.serve.kube.informer import Cache
    from placewise.adapters.serve.modes.mover import Mover

    cache = Cache()
    job = running("j", "r1-h1")
    job["metadata"].update(uid="wl-j", ownerReferences=[owner("j")])
    del job["status"]["admission"]  # released: pending again
    group = workload("g", 1, 2)
    group["metadata"].update(
        uid="wl-g",
        ownerReferences=[{**owner("x"), "kind": "Pod", "uid": "pod-g"}],
    )
    held = running("h", "r2-h2")
    held["metadata"].update(uid="wl-h", ownerReferences=[owner("h")])
    for wl in (job, group, held):
        cache.apply("Workload", "ADDED", wl)
    pods = [job_pod("j", "r1-h1"), job_pod("h", "r2-h2"), pod("g-0", nodeName="r2-h1")]
    pods[-1]["metadata"]["uid"] = "pod-g"
    unbound = job_pod("j", "r1-h1")
    unbound["metadata"]["name"] = "j-1"
    del unbound["spec"]["nodeName"]
    for p in [*pods, unbound]:
        p["status"] = {"phase": "Running"}
        cache.apply("Pod", "ADDED", p)
    mover = Mover(cache, None, None, None, None, lambda: True)  # type: ignore[arg-type]
    assert mover.still_up() == ({"ml/j", "ml/g"}, {"r1-h1", "r2-h1"})


def test_a_move_not_yet_carried_out_is_planned_again() -> None:
    """The loop re-solves on its own writes (a gang's pending reason, a
    refused move's re-plan), so a plan with a move can be replaced before the
    actuator acts on it.  Nothing changed outside: the next plan makes the
    same move, not none (the gang would then wait for ever)."""
    from placewise.adapters.serve.engine.gangs import GangSources
    from placewise.adapters.serve.engine.metrics import Metrics
    from placewise.adapters.serve.engine.snapshot import SnapshotBuilder
    from placewise.adapters.serve.engine.solveloop import SolveLoop
    from placewise.adapters.serve.kube.informer import Cache
    from tests.adapters.serve.conftest import serve_config

    cache = Cache()
    for i, obj in enumerate(instance()):
        obj["metadata"].update(uid=f"uid-{i}", resourceVersion="1")
        cache.apply(obj["kind"], "ADDED", obj)
    cfg = serve_config(
        mode="kueue",
        solver="auto",
        time_limit=1.0,
        workers=1,
        policy=Policy(moves=MoveRules(count=2)),
    )
    builder = SnapshotBuilder(cache, cfg, lambda pod: False, GangSources)
    loop = SolveLoop(cache, builder, cfg, Metrics(), [])
    first = loop.solve_once()
    loop.publish(first)
    again = loop.solve_once()
    assert again.built.change is None  # the previous plan's decisions stand
    moved = [m.workload for m in first.plan.moves]
    assert len(moved) == 1 and moved[0] in MOVABLE
    assert [m.workload for m in again.plan.moves] == moved
    assert "ml/gang" in {a.workload for a in again.plan.admissions}
    assert again.built.kept == frozenset(MOVABLE) - set(moved)
