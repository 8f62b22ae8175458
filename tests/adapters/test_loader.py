"""Instance loading: formats, decoding rules, located errors, dangling references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot, snapshot_from_text
from placewise.cli import main
from placewise.models.errors import InstanceError
from placewise.models.quantity import UNLIMITED
from tests.shared import EXPECTED, KUEUE_CASES, requires_shared

DATA = Path(__file__).resolve().parents[1] / "data"

# file -> (substrings every message must contain)
MALFORMED = {
    "bad-quantity.yaml": [
        ":1: Node gpu-1: field status.allocatable.nvidia.com/gpu",
        "not a valid quantity",
    ],
    "duplicate-object.yaml": [
        ":7: ResourceFlavor h100: field metadata.name",
        "duplicate ResourceFlavor h100",
    ],
    "unsupported-api-version.yaml": [
        "ClusterQueue team-a: field apiVersion",
        "unsupported apiVersion kueue.x-k8s.io/v1alpha2",
    ],
    "yaml-syntax.yaml": ["yaml-syntax.yaml:1", "YAML syntax error"],
    "json-syntax.json": ["json-syntax.json:3", "JSON syntax error"],
    "negative-count.yaml": [
        "Workload team-a/train: field spec.podSets[0].count",
        "must be >= 0",
    ],
    "negative-allocatable.yaml": [
        "Node gpu-1: field status.allocatable.cpu",
        "must not be negative",
    ],
    "lending-over-nominal.yaml": [
        "ClusterQueue team-a: field spec.resourceGroups[0]"
        ".flavors[0].resources[0].lendingLimit",
        "exceeds nominalQuota",
    ],
    "slice-not-dividing.yaml": [
        "Workload team-a/train: field spec.podSets[0].topologyRequest",
        "slice size 4 does not divide count 6",
    ],
}


@requires_shared
def test_every_kueue_case_loads() -> None:
    """All instance.yaml files under ../shared/kueue-cases load without error."""
    paths = sorted(KUEUE_CASES.glob("*/*/instance.yaml"))
    assert len(paths) >= sum(EXPECTED.values())
    for path in paths:
        snap = load_snapshot([path])
        assert snap.workloads, path


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_is_a_located_error(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2, the message names file, object and field; nothing written to -o."""
    out = tmp_path / "plan.yaml"
    code = main(
        ["solve", str(DATA / "malformed" / name), "--solver", "greedy", "-o", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert not out.exists()
    assert str(DATA / "malformed" / name) in err
    for fragment in MALFORMED[name]:
        assert fragment in err, err


def test_all_problems_are_listed() -> None:
    """Decoding continues after a problem: both bad nodes are reported."""
    with pytest.raises(InstanceError) as info:
        load_snapshot([DATA / "malformed" / "several-problems.yaml"])
    text = str(info.value)
    assert "Node gpu-1" in text and "Node gpu-2" in text
    assert len(info.value.problems) == 2


@pytest.mark.parametrize(
    ("name", "reason", "warning"),
    [
        ("missing-flavor.yaml", "flavor ghost not found", "ClusterQueue team-a-cq"),
        ("cohort-cycle.yaml", "cohort tree has a cycle", "Cohort left"),
        (
            "missing-cluster-queue.yaml",
            "ClusterQueue nowhere doesn't exist",
            "LocalQueue team-a/main",
        ),
    ],
)
def test_dangling_reference_is_a_warning_and_a_pending_reason(
    name: str,
    reason: str,
    warning: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Exit 0, a warning names the object, the workload is pending with a reason."""
    code = main(
        [
            "solve",
            str(DATA / "dangling" / name),
            "--solver",
            "greedy",
            "--format",
            "json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    plan = json.loads(captured.out)
    assert plan["admissions"] == []
    assert [p["workload"] for p in plan["pending"]] == ["team-a/job-1"]
    assert reason in plan["pending"][0]["reason"]
    assert any(warning in r.getMessage() for r in caplog.records)


NODE = """apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 1Gi}}
  conditions: [{{type: Ready, status: "True"}}]
"""


def test_list_and_json_and_multi_document_agree(tmp_path: Path) -> None:
    """kind: List, JSON and a multi-document stream decode to the same objects."""
    docs = [NODE.format(name="a", cpu="2"), NODE.format(name="b", cpu="500m")]
    multi = tmp_path / "multi.yaml"
    multi.write_text("---\n".join(docs))
    import yaml

    items = [yaml.safe_load(d) for d in docs]
    listed = tmp_path / "list.yaml"
    listed.write_text(
        yaml.safe_dump({"apiVersion": "v1", "kind": "NodeList", "items": items})
    )
    as_json = tmp_path / "list.json"
    as_json.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    snaps = [load_snapshot([p]) for p in (multi, listed, as_json)]
    assert all(s.nodes == snaps[0].nodes for s in snaps)
    assert snaps[0].nodes["b"].allocatable["cpu"] == 500


def test_several_files_merge(tmp_path: Path) -> None:
    """Objects from several files form one snapshot; duplicates across files fail."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(NODE.format(name="a", cpu="1"))
    b.write_text(NODE.format(name="b", cpu="1"))
    assert set(load_snapshot([a, b]).nodes) == {"a", "b"}
    with pytest.raises(InstanceError, match="duplicate Node a"):
        load_snapshot([a, a])


def test_effective_pod_request() -> None:
    """max(app + sidecars, init + earlier sidecars) + overhead; limits as requests."""
    snap = snapshot_from_text("""apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  nodeName: n1
  overhead: {cpu: 100m}
  initContainers:
  - {name: side, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
  - {name: init, resources: {requests: {cpu: "4", memory: 1Gi}}}
  containers:
  - {name: a, resources: {requests: {cpu: "1"}}}
  - {name: b, resources: {limits: {cpu: "2", memory: 2Gi}}}
""")
    pod = snap.pods["default/p"]
    # app 3 + sidecar 1 = 4 cpu vs init 4 + sidecar 1 = 5 cpu; +100m overhead
    assert pod.requests == {"cpu": 5100, "memory": 2 * 2**30}


def test_v1beta2_compressed_topology_assignment() -> None:
    """Slices with prefix/roots/suffix and universal counts decode to domains."""
    snap = snapshot_from_text("""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: default}
spec:
  podSets:
  - name: main
    count: 5
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
status:
  admission:
    clusterQueue: cq
    podSetAssignments:
    - name: main
      count: 5
      flavors: {cpu: f}
      resourceUsage: {cpu: "5"}
      topologyAssignment:
        levels: [rack, kubernetes.io/hostname]
        slices:
        - domainCount: 2
          valuesPerLevel:
          - universal: r1
          - individual: {prefix: node-, roots: ["1", "2"], suffix: -x}
          podCounts: {individual: [2, 3]}
  conditions: [{type: QuotaReserved, status: "True"}]
""")
    ta = (
        snap.workloads["default/w"].admission.pod_set_assignments[0].topology_assignment
    )
    assert ta.as_counts() == {("r1", "node-1-x"): 2, ("r1", "node-2-x"): 3}


def test_beyond_int64_saturates_and_unknown_kinds_warn() -> None:
    """9223372036854775000m cpu fits int64 in milli; a larger value is unlimited."""
    snap = snapshot_from_text("""apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: 9223372036854775000m, memory: 99999999999999999999Ei}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
""")
    assert snap.nodes["n"].allocatable["cpu"] == 9223372036854775000
    assert snap.nodes["n"].allocatable["memory"] == UNLIMITED
    assert any("Deployment" in str(w) for w in snap.warnings)


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    """--version prints the distribution version."""
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("placewise ")
