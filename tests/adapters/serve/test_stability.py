"""What counts as "something changed" between two solves (adapters/serve/stability)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.serve.engine.stability import (
    Baseline,
    Facts,
    held_back,
    protect,
)
from placewise.models.plan import Plan, PlanMove, PlanPreemption, SolverInfo
from placewise.models.snapshot import Objects
from tests.adapters.serve.conftest import GPU
from tests.adapters.serve.test_kueue_mode import kueue_objects, workload

JSON = dict[str, Any]


def admitted(obj: JSON, *extra: JSON) -> JSON:
    obj = copy.deepcopy(obj)
    obj["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": obj["spec"]["podSets"][0]["count"],
                    "flavors": {"cpu": "tas", GPU: "tas"},
                    "resourceUsage": {"cpu": "1", GPU: "4"},
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            *extra,
        ],
    }
    return obj


def tables(*objects: JSON) -> dict[str, Any]:
    problems: list[Any] = []
    decoded, _ = decode_objects(
        [RawObject(o, "cluster", None) for o in [*kueue_objects(), *objects]], problems
    )
    assert not problems, problems
    return {
        f.name: dict(getattr(decoded, f.name))
        for f in dataclasses.fields(Objects)
        if f.name != "now"  # the present, not a table
    }


BASE = [admitted(workload("mine", 1, 4)), workload("waiting", 2, 4)]


def change(*objects: JSON) -> str | None:
    return Facts.of(tables(*objects)).change_since(Facts.of(tables(*BASE)))


def test_status_writes_are_not_a_change() -> None:
    """Admitting, evicting and releasing (what the loop and Kueue's controllers
    write) leave the facts as they were."""
    evicted = {
        "type": "Evicted",
        "status": "True",
        "reason": "Preempted",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:01:00Z",
    }
    assert change(*BASE) is None
    assert change(BASE[0], admitted(BASE[1])) is None
    assert change(admitted(workload("mine", 1, 4), evicted), BASE[1]) is None
    assert change(workload("mine", 1, 4), BASE[1]) is None


def _priority(obj: JSON, value: int) -> JSON:
    obj = copy.deepcopy(obj)
    obj["spec"]["priority"] = value
    return obj


def _finished(obj: JSON) -> JSON:
    obj = copy.deepcopy(obj)
    obj["status"]["conditions"].append(
        {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "done",
            "lastTransitionTime": "2026-01-01T00:02:00Z",
        }
    )
    return obj


def _resized(obj: JSON) -> JSON:
    obj = copy.deepcopy(obj)
    obj["spec"]["podSets"][0]["count"] = 3
    return obj


def _bound_pod() -> JSON:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml"},
        "spec": {
            "nodeName": "r1-h1",
            "containers": [{"name": "c", "resources": {"requests": {GPU: "1"}}}],
        },
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        ((*BASE, workload("new", 1, 1)), "Workload ml/new appeared"),
        ((BASE[0],), "Workload ml/waiting went away"),
        ((BASE[0], _priority(BASE[1], 7)), "Workload ml/waiting changed"),
        ((_finished(BASE[0]), BASE[1]), "Workload ml/mine changed"),
        ((BASE[0], _resized(BASE[1])), "Workload ml/waiting changed"),
        ((*BASE, _bound_pod()), "bound pod ml/p appeared"),
    ],
)
def test_user_facing_changes(objects: tuple[JSON, ...], expected: str) -> None:
    """Arrival, deletion, priority change, completion, resize, a bound pod."""
    assert change(*objects) == expected


def test_node_and_queue_changes() -> None:
    before = Facts.of(tables(*BASE))
    t = tables(*BASE)
    node = t["nodes"]["r1-h1"]
    t["nodes"]["r1-h1"] = node.model_copy(update={"allocatable": {GPU: 2}})
    assert Facts.of(t).change_since(before) == "Node r1-h1 changed"
    t = tables(*BASE)
    del t["cluster_queues"]["cq"]
    assert Facts.of(t).change_since(before) == "ClusterQueue cq went away"


def test_held_back_keeps_what_the_previous_plan_kept() -> None:
    """No baseline: free.  Same facts: running workloads stay, except the
    previous plan's victims and those being evicted.  A change: free again."""
    t = tables(admitted(workload("a", 1, 4)), admitted(workload("b", 1, 4)), *BASE)
    facts = Facts.of(t)
    assert held_back(t["workloads"], None, facts) == ("first plan", frozenset())
    base = Baseline(facts, frozenset({"ml/b"}))
    assert held_back(t["workloads"], base, facts) == (
        None,
        frozenset({"ml/a", "ml/mine"}),
    )
    t["workloads"]["ml/a"] = t["workloads"]["ml/a"].model_copy(update={"evicted": True})
    assert held_back(t["workloads"], base, facts)[1] == frozenset({"ml/mine"})
    later = tables(admitted(workload("a", 1, 4)), *BASE)
    why, kept = held_back(later["workloads"], base, Facts.of(later))
    assert why == "Workload ml/b went away" and kept == frozenset()
    protect(t["workloads"], {"ml/mine", "ml/unknown"})
    assert t["workloads"]["ml/mine"].preemptible is False
    assert t["workloads"]["ml/a"].preemptible is True


def test_a_planned_move_stays_open_when_nothing_changed() -> None:
    """The previous plan's moved workloads are not kept in place, as its
    victims are not: a plan replaced before its move was carried out leaves
    the next plan free to make it (kept, it could never be moved again)."""
    t = tables(admitted(workload("a", 1, 4)), admitted(workload("b", 1, 4)), *BASE)
    facts = Facts.of(t)
    plan = Plan(
        solver=SolverInfo(name="cpsat", status="FEASIBLE"),
        preemptions=(
            PlanPreemption(
                workload="ml/b", preemptor="ml/waiting", reason="InClusterQueue"
            ),
        ),
        moves=(
            PlanMove(
                workload="ml/a",
                from_hosts=("h1",),
                to_hosts=("h2",),
                lost_gpu_hours=0.0,
            ),
        ),
    )
    base = Baseline.of(facts, plan)
    assert base.victims == frozenset({"ml/a", "ml/b"})
    assert held_back(t["workloads"], base, facts) == (None, frozenset({"ml/mine"}))


def test_a_victim_admitted_again_is_kept_like_any_other() -> None:
    """The evictor marks its victims as being evicted until the eviction is
    over.  Once the victim's reservation is released and the loop admits it
    again, that admission is a decision like any other: with nothing changed
    since, the next solve keeps it (a victim still read as evicted was free
    to take back, and the live replay saw it taken back)."""
    from placewise.adapters.serve.engine.gangs import GangSources
    from placewise.adapters.serve.engine.snapshot import SnapshotBuilder
    from placewise.adapters.serve.kube.informer import Cache
    from tests.adapters.serve.conftest import serve_config

    cache = Cache()
    for obj in [*kueue_objects(), *BASE]:
        cache.apply(obj["kind"], "ADDED", obj)
    builder = SnapshotBuilder(
        cache, serve_config(mode="kueue"), lambda pod: False, GangSources
    )
    builder.evicting.add("ml/mine")  # what the evictor does once it wrote
    assert builder.build(0.0).snapshot.workloads["ml/mine"].evicted
    evicted = {
        "type": "Evicted",
        "status": "True",
        "reason": "Preempted",
        "message": "m",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    released = workload("mine", 1, 4)
    released["status"] = {"conditions": [evicted]}
    cache.apply("Workload", "MODIFIED", released)
    assert not builder.build(1.0).snapshot.workloads["ml/mine"].is_running
    again = admitted(workload("mine", 1, 4), {**evicted, "status": "False"})
    cache.apply("Workload", "MODIFIED", again)
    first = builder.build(2.0)
    assert not first.snapshot.workloads["ml/mine"].evicted
    nothing = Plan(solver=SolverInfo(name="cpsat", status="OPTIMAL"))
    built = builder.build(3.0, Baseline.of(first.facts, nothing))
    assert built.change is None
    assert "ml/mine" in built.kept
    assert built.snapshot.workloads["ml/mine"].preemptible is False
