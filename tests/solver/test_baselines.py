"""The bench baselines: real policies whose plans the validator accepts.

Hand-made clusters pin down what makes each baseline what it is (gang or
not, binpack or spread, quota order); the generated families and the demo
check that every plan they emit is feasible.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot, snapshot_from_text
from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.baselines import BASELINES, run_baseline
from placewise.solver.baselines.binpack_gang import run_binpack_gang
from placewise.solver.baselines.kube_default import run_kube_default
from tests.shared import EXPECTED, requires_shared

ROOT = Path(__file__).resolve().parents[2]
DEMO = sorted((ROOT / "instances" / "demo").glob("*.yaml"))
RACK = "cloud.example.com/rack"
HOST = "kubernetes.io/hostname"


def cluster(
    racks: dict[str, list[str]],
    gpu_quota: int = 64,
    strategy: str = "BestEffortFIFO",
    within: str = "Never",
) -> list[str]:
    """A TAS flavor over hosts of 8 GPUs / 64 CPU, one queue with GPU quota
    (``within``: its withinClusterQueue preemption policy)."""
    docs = [
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {{name: t}}\n"
        f"spec:\n  levels:\n  - {{nodeLabel: {RACK}}}\n  - {{nodeLabel: {HOST}}}\n",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
        "metadata: {name: gpu}\nspec:\n  nodeLabels: {pool: gpu}\n  topologyName: t\n",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
        "metadata: {name: cq}\nspec:\n  namespaceSelector: {}\n"
        f"  queueingStrategy: {strategy}\n"
        f"  preemption: {{withinClusterQueue: {within}}}\n"
        "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n"
        "    flavors:\n    - name: gpu\n      resources:\n"
        "      - {name: cpu, nominalQuota: '1000'}\n"
        f"      - {{name: nvidia.com/gpu, nominalQuota: '{gpu_quota}'}}\n",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        "metadata: {name: q, namespace: team}\nspec: {clusterQueue: cq}\n",
    ]
    for rack, hosts in racks.items():
        for h in hosts:
            docs.append(
                f"apiVersion: v1\nkind: Node\nmetadata:\n  name: {h}\n  labels:\n"
                f"    pool: gpu\n    {RACK}: {rack}\n    {HOST}: {h}\n"
                "status:\n  allocatable: {cpu: '64', memory: 512Gi, "
                "nvidia.com/gpu: '8', pods: '110'}\n"
                "  conditions: [{type: Ready, status: 'True'}]\n"
            )
    return docs


def pod(name: str, node: str, gpus: int, cpu: int = 4) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: team}}\n"
        f"spec:\n  nodeName: {node}\n  containers:\n  - name: c\n    resources:\n"
        f"      requests: {{cpu: '{cpu}', nvidia.com/gpu: '{gpus}'}}\n"
        "status: {phase: Running}\n"
    )


def workload(
    name: str,
    count: int,
    gpus: int,
    minute: int = 0,
    priority: int = 0,
    topology: str = "",
    min_count: int | None = None,
) -> str:
    extra = f"    minCount: {min_count}\n" if min_count is not None else ""
    topo = f"    topologyRequest: {{{topology}}}\n" if topology else ""
    return (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n"
        f"metadata:\n  name: {name}\n  namespace: team\n"
        f"  creationTimestamp: '2026-01-01T00:{minute:02d}:00Z'\n"
        f"spec:\n  queueName: q\n  priority: {priority}\n  podSets:\n"
        f"  - name: main\n    count: {count}\n{extra}{topo}"
        "    template:\n      spec:\n        containers:\n        - name: c\n"
        "          resources:\n"
        f"            requests: {{cpu: '1', nvidia.com/gpu: '{gpus}'}}\n"
    )


def snap(*docs: str) -> Snapshot:
    return snapshot_from_text("---\n".join(docs))


def valid(s: Snapshot, name: str) -> tuple[set[str], object]:
    out = run_baseline(name, s, seed=0)
    assert validate(s, out.plan) == []
    assert out.plan.solver.name == name
    keys = {a.workload for a in out.plan.admissions}
    assert keys | {p.workload for p in out.plan.pending} == {w.key for w in s.pending}
    return keys, out


def hosts_of(plan: object, key: str) -> dict[str, int]:
    for a in plan.admissions:  # type: ignore[attr-defined]
        if a.workload == key:
            ta = a.pod_set_assignments[0].topology_assignment
            return {d.values[-1]: d.count for d in ta.domains}
    raise AssertionError(f"{key} not admitted")


# -- what each baseline is ----------------------------------------------------


def test_kube_default_binds_pods_of_a_gang_that_cannot_complete():
    """No gang semantics: two of three 6-GPU pods bind and hold 12 GPUs; the
    plan leaves the workload pending and the 2-GPU job behind it still fits."""
    s = snap(
        *cluster({"r1": ["h1", "h2"]}),
        workload("big", 3, 6, minute=0),
        workload("small", 1, 2, minute=1),
    )
    admitted, out = valid(s, "kube-default")
    assert admitted == {"team/small"}
    [partial] = [p for p in out.partial if p.workload == "team/big"]
    assert (partial.pods_placed, partial.pods_total) == (2, 3)
    assert partial.accelerators_held == 12
    assert sorted(partial.nodes) == ["h1", "h2"]


def test_binpack_gang_is_all_or_nothing():
    """The same gang binds nothing under a gang scheduler, so nothing is held."""
    s = snap(
        *cluster({"r1": ["h1", "h2"]}),
        workload("big", 3, 6, minute=0),
        workload("small", 1, 2, minute=1),
    )
    admitted, out = valid(s, "binpack-gang")
    assert admitted == {"team/small"}
    assert out.partial == []


def test_binpack_fills_the_fullest_node_and_kube_default_the_emptiest():
    s = snap(
        *cluster({"r1": ["h1", "h2"]}),
        pod("busy", "h1", gpus=6, cpu=48),
        workload("one", 1, 2),
    )
    _, packed = valid(s, "binpack-gang")
    _, spread = valid(s, "kube-default")
    assert hosts_of(packed.plan, "team/one") == {"h1": 1}
    assert hosts_of(spread.plan, "team/one") == {"h2": 1}


def test_binpack_gang_takes_the_tightest_rack_that_holds_the_gang():
    s = snap(
        *cluster({"r1": ["a1", "a2"], "r2": ["b1", "b2"]}),
        pod("p", "a1", gpus=4),
        workload("g", 2, 4, topology=f"required: {RACK}"),
    )
    _, out = valid(s, "binpack-gang")
    placed = hosts_of(out.plan, "team/g")
    assert set(placed) <= {"a1", "a2"}
    assert placed == {"a1": 1, "a2": 1}


def test_kube_default_required_rack_follows_its_first_pod():
    """Pod affinity to its own pods: the first pod picks the emptiest node
    (rack r2), the second must join it there, where no room is left."""
    s = snap(
        *cluster({"r1": ["a1", "a2"], "r2": ["b1"]}),
        pod("p1", "a1", gpus=1, cpu=40),
        pod("p2", "a2", gpus=1, cpu=40),
        workload("g", 2, 7, topology=f"required: {RACK}"),
    )
    admitted, out = valid(s, "kube-default")
    assert admitted == set()
    [partial] = out.partial
    assert partial.nodes.keys() == {"b1"}
    admitted, _ = valid(s, "binpack-gang")
    assert admitted == {"team/g"}


def test_quota_is_admitted_in_priority_then_fifo_order():
    """8 GPUs of quota: the later, higher-priority job wins it; no baseline
    lets the earlier one borrow or exceed nominal quota."""
    for name in BASELINES:
        s = snap(
            *cluster({"r1": ["h1", "h2"]}, gpu_quota=8),
            workload("early", 1, 8, minute=0, priority=0),
            workload("urgent", 1, 8, minute=5, priority=100),
        )
        admitted, _ = valid(s, name)
        assert admitted == {"team/urgent"}, name


def test_strict_fifo_blocks_behind_the_head():
    for name in BASELINES:
        s = snap(
            *cluster({"r1": ["h1"]}, strategy="StrictFIFO"),
            workload("head", 2, 8, minute=0),
            workload("next", 1, 1, minute=1),
        )
        admitted, out = valid(s, name)
        assert admitted == set(), name
        reason = {p.workload: p.reason for p in out.plan.pending}["team/next"]
        assert "StrictFIFO" in reason


def test_min_count_admits_what_quota_and_nodes_allow():
    s = snap(
        *cluster({"r1": ["h1", "h2"]}, gpu_quota=12),
        workload("elastic", 4, 4, min_count=2),
    )
    for name in BASELINES:
        _, out = valid(s, name)
        [adm] = out.plan.admissions
        assert adm.pod_set_assignments[0].count == 3, name


# -- every plan on realistic instances is feasible ----------------------------


@pytest.mark.parametrize("name", BASELINES)
def test_demo_plans_are_valid(name):
    s = load_snapshot(DEMO)
    admitted, _ = valid(s, name)
    assert admitted


FAMILIES = (
    "default",
    "fragmented",
    "multi-team",
    "preemption-heavy",
    "topology-heavy",
    "scale-100",
)


@pytest.fixture(scope="module")
def family_snapshots() -> dict[str, Snapshot]:
    return {f: generate_snapshot(Instance(f, 1)) for f in FAMILIES}


@pytest.mark.parametrize("family", FAMILIES)
def test_family_plans_are_valid(family, family_snapshots):
    s = family_snapshots[family]
    _, kube_out = valid(s, "kube-default")
    packed, pack_out = valid(s, "binpack-gang")
    assert packed, family
    assert pack_out.partial == []
    # Gangs binding without their siblings is what kube-default is for.
    assert all(p.pods_placed < p.pods_total for p in kube_out.partial)


def test_kube_default_strands_gpus_in_partial_gangs(family_snapshots):
    out = run_kube_default(family_snapshots["topology-heavy"], seed=1)
    partial = [p for p in out.partial if 0 < p.pods_placed < p.pods_total]
    assert partial
    assert sum(p.accelerators_held for p in partial) > 0
    gang = run_binpack_gang(family_snapshots["topology-heavy"], seed=1)
    assert len(gang.plan.admissions) > len(out.plan.admissions)


def test_kube_default_is_deterministic_for_a_seed(family_snapshots):
    s = family_snapshots["fragmented"]
    a = run_kube_default(s, seed=3).plan
    b = run_kube_default(s, seed=3).plan
    assert a.model_copy(update={"solver": b.solver}) == b


@requires_shared
def test_plans_are_valid_on_every_kueue_case():
    """Kueue's own unit-test instances cover corners the families do not
    (inactive queues, cohort trees, slices that cannot nest, taints)."""
    from tests.kueue_cases import case_id, instance_path, list_cases

    cases = list_cases()
    assert len(cases) >= sum(EXPECTED.values())
    bad = []
    for case in cases:
        s = load_snapshot([instance_path(case)])
        for name in BASELINES:
            plan = run_baseline(name, s, seed=0).plan
            bad += [f"{case_id(case)} {name}: {v}" for v in validate(s, plan)[:1]]
    assert bad == []
