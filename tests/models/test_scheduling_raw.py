"""The raw-JSON entries of models/scheduling (emulator, sidecar) follow its rules."""

from __future__ import annotations

from placewise.adapters.emulator.fit import matches_affinity, tolerates
from placewise.adapters.serve.engine.preempt import selector_matches
from placewise.models.scheduling import raw_requirement, raw_tolerates

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_tolerations() -> None:
    assert raw_tolerates([{"operator": "Exists"}], GPU_TAINT)
    assert raw_tolerates([{"key": "nvidia.com/gpu", "operator": "Exists"}], GPU_TAINT)
    assert raw_tolerates(
        [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        GPU_TAINT,
    )
    assert not raw_tolerates([{"key": "nvidia.com/gpu", "value": "absent"}], GPU_TAINT)
    assert not raw_tolerates(
        [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
        GPU_TAINT,
    )
    assert not tolerates([], GPU_TAINT)


def test_requirements_and_selectors() -> None:
    assert raw_requirement({"key": "a", "operator": "Bogus"}) is None
    gt = raw_requirement({"key": "gen", "operator": "Gt", "values": ["3"]})
    assert gt is not None and gt.matches({"gen": "4"}) and not gt.matches({"gen": "x"})
    sel = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]}
    assert selector_matches(sel, {"team": "a"})
    assert not selector_matches(sel, {"team": "b"})
    assert not selector_matches(None, {"team": "a"})
    assert selector_matches({}, {})


def test_node_affinity_on_raw_objects() -> None:
    node = {"metadata": {"name": "n1", "labels": {"zone": "z1"}}}
    term = {
        "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]}]
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term]
            }
        }
    }
    assert matches_affinity({"spec": {"affinity": affinity}}, node)
    term["matchExpressions"][0]["values"] = ["z1"]
    assert not matches_affinity({"spec": {"affinity": affinity}}, node)
    fields = {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]
    }
    affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [fields]
    }
    assert matches_affinity({"spec": {"affinity": affinity}}, node)
