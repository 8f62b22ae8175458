"""The accelerator bound: never below what a feasible plan achieves, exact
where nothing competes, and reachable from the command line.

A bound is only useful if it is valid, so most tests hold it against the
plans the greedy (Kueue's decisions) and the optimizer make on hand-made,
generated, random and Kueue-derived instances; a bound that is merely large
would pass those, so the demo and an "everything fits" instance pin exact
values.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, note, settings

from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import load_snapshot, snapshot_from_text
from placewise.cli import main
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.bound import (
    aggregate_bound,
    class_bound,
    gpus_after,
    lp_bound,
    running_gpus,
)
from placewise.solver.bound.tiers import class_tiers
from placewise.solver.budget import Budget
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy
from placewise.solver.problem.compile import compile_problem
from tests.shared import requires_shared
from tests.solver.exhaustive import SearchTooLarge, exhaustive_optimum, option_count
from tests.solver.strategies import instances
from tests.solver.test_greedy_kueue_cases import case_dirs

ROOT = Path(__file__).resolve().parents[2]
GPUS = Policy(objective="gpus")
DEMO = sorted(str(p) for p in (ROOT / "instances" / "demo").glob("*.yaml"))
PARAMS = CpSatParams(time_limit=2.0, workers=1, seed=0)


def _plans(snap: Snapshot) -> dict[str, Plan]:
    return {"greedy": solve_greedy(snap), "cpsat": solve_cpsat(snap, PARAMS)}


def _assert_bounds(snap: Snapshot, plans: dict[str, Plan], solver: str = "cbc") -> None:
    result = lp_bound(snap, solver)  # type: ignore[arg-type]
    assert result.lp is not None, result.status
    classes = class_bound(snap, solver)  # type: ignore[arg-type]
    # A relaxation of the full LP (demand summed per type): never tighter.
    assert classes >= result.lp, f"host-class LP {classes} < full LP {result.lp}"
    for name, plan in plans.items():
        got = gpus_after(snap, plan)
        assert result.lp >= got, f"LP bound {result.lp} < {name}'s {got}"
        assert result.aggregate >= got, f"ceiling {result.aggregate} < {name}'s {got}"
        assert result.value >= got
        assert classes >= got, f"host-class LP {classes} < {name}'s {got}"
    _assert_tier_bounds(snap, plans)


def _assert_tier_bounds(snap: Snapshot, plans: dict[str, Plan]) -> None:
    """Per tier, the host-class LP with the tiers above held at a plan's
    GPUs is never below that plan's GPUs in the tier (the plan is one of
    the points it maximises over)."""
    for name, plan in plans.items():
        problem = compile_problem(snap)
        params = CpSatParams(policy=Policy(preemption_price=0.0))
        got = class_tiers(snap, problem, params, plan, Budget.of(60.0))
        assert got is not None, name
        for tier in got[0]:
            assert tier.bound is not None
            assert tier.bound >= tier.gpus, f"{name}: {tier}"


# -- hand-made instances -------------------------------------------------------

HEADER = """apiVersion: v1
kind: Namespace
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
spec: {nodeLabels: {pool: gpu}, topologyName: topo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: topo}
spec:
  levels:
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
"""


def _node(name: str, rack: str, gpus: int, cpu: int = 32) -> str:
    return f"""apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, example.com/rack: {rack}, pool: gpu}}
status:
  allocatable: {{cpu: '{cpu}', nvidia.com/gpu: '{gpus}', pods: '110'}}
  conditions: [{{type: Ready, status: 'True'}}]
"""


def _queue(
    name: str,
    gpus: int,
    cohort: str | None = None,
    within: str = "Never",
    reclaim: str = "Never",
    extra: str = "",
) -> str:
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  {f"cohortName: {cohort}" if cohort else ""}
  preemption: {{withinClusterQueue: {within}, reclaimWithinCohort: {reclaim}}}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {{name: cpu, nominalQuota: '1000'}}
      - {{name: nvidia.com/gpu, nominalQuota: '{gpus}'{extra}}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: {name}, namespace: default}}
spec: {{clusterQueue: {name}}}
"""


def _pending(
    name: str,
    queue: str,
    count: int,
    gpus: int,
    priority: int = 0,
    minute: int = 1,
    topology: str = "unconstrained: true",
    min_count: int | None = None,
) -> str:
    mc = f"\n    minCount: {min_count}" if min_count else ""
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: default,
           creationTimestamp: '2026-01-01T00:{minute:02d}:00Z'}}
spec:
  queueName: {queue}
  priority: {priority}
  podSets:
  - name: main
    count: {count}{mc}
    template:
      spec:
        containers:
        - name: c
          resources:
            requests: {{cpu: '1', nvidia.com/gpu: '{gpus}'}}
    topologyRequest: {{{topology}}}
"""


def _running(
    name: str, queue: str, host: str, count: int, gpus: int, priority: int = 0
) -> str:
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: default,
           creationTimestamp: '2026-01-01T00:00:00Z'}}
spec:
  queueName: {queue}
  priority: {priority}
  podSets:
  - name: main
    count: {count}
    template:
      spec:
        containers:
        - name: c
          resources:
            requests: {{cpu: '1', nvidia.com/gpu: '{gpus}'}}
    topologyRequest: {{unconstrained: true}}
status:
  admission:
    clusterQueue: {queue}
    podSetAssignments:
    - name: main
      count: {count}
      flavors: {{cpu: gpu, nvidia.com/gpu: gpu}}
      resourceUsage: {{cpu: '{count}', nvidia.com/gpu: '{count * gpus}'}}
      topologyAssignment:
        levels: [kubernetes.io/hostname]
        domains: [{{values: [{host}], count: {count}}}]
  conditions:
  - {{type: QuotaReserved, status: 'True', reason: QuotaReserved,
     lastTransitionTime: '2026-01-01T00:00:30Z'}}
"""


def _snap(*docs: str) -> Snapshot:
    return snapshot_from_text("---\n".join([HEADER, *docs]))


def test_bound_is_exact_when_everything_fits() -> None:
    """Ample quota and hosts: every pending GPU is admitted, and the bound
    (LP and ceiling alike) is exactly running plus pending GPUs."""
    snap = _snap(
        _node("h1", "r1", 8),
        _node("h2", "r1", 8),
        _node("h3", "r2", 8),
        _queue("q", 100),
        _running("old", "q", "h1", 2, 1),
        _pending("a", "q", 2, 4, topology="required: example.com/rack"),
        _pending("b", "q", 3, 2, minute=2, min_count=1),
        _pending("c", "q", 1, 1, minute=3),
    )
    plans = _plans(snap)
    _assert_bounds(snap, plans)
    result = lp_bound(snap, "cbc")
    assert result.running == 2
    assert result.value == result.lp == result.aggregate == 2 + 8 + 6 + 1
    assert gpus_after(snap, plans["greedy"]) == result.value
    assert gpus_after(snap, plans["cpsat"]) == result.value


def test_bound_on_the_demo_is_tight_and_solvers_agree() -> None:
    """The demo's workloads hold at most 56 GPUs (8 running, 48 pending; 6 of
    the 64 are held by bound pods): the optimizer reaches it by preempting
    nothing, Kueue's greedy falls 8 short, and HiGHS and CBC prove the same
    LP bound."""
    snap = load_snapshot(DEMO)
    plans = _plans(snap)
    _assert_bounds(snap, plans, "highs")
    highs, cbc = lp_bound(snap, "highs"), lp_bound(snap, "cbc")
    assert highs.lp == cbc.lp == 56
    assert highs.method == "lp-highs" and cbc.method == "lp-cbc"
    assert gpus_after(snap, plans["cpsat"]) == 56
    assert gpus_after(snap, plans["greedy"]) == 48


def test_required_rack_bound_sees_fragmentation() -> None:
    """Two racks with 6 free GPUs each cannot hold an 8-GPU gang that must sit
    in one rack: the LP's domain rows cap it below the 12 free GPUs, where
    the capacity ceiling cannot."""
    snap = _snap(
        _node("h1", "r1", 4),
        _node("h2", "r1", 4),
        _node("h3", "r2", 4),
        _node("h4", "r2", 4),
        _queue("q", 100),
        _running("x", "q", "h1", 1, 2),
        _running("y", "q", "h3", 1, 2),
        _pending("gang", "q", 4, 2, topology="required: example.com/rack"),
    )
    plans = _plans(snap)
    _assert_bounds(snap, plans)
    result = lp_bound(snap, "cbc")
    assert gpus_after(snap, plans["cpsat"]) == 4  # the gang stays pending
    assert result.aggregate == 4 + 8
    assert result.lp is not None and result.lp < result.aggregate
    assert class_bound(snap, "cbc") == result.lp  # no domain holds the gang


def test_bound_counts_preemption_and_quota() -> None:
    """A high-priority gang may evict a low-priority job in its queue and
    borrow from a cohort peer; the bound covers the plan that does both, and
    stays within the cohort's quota."""
    snap = _snap(
        _node("h1", "r1", 8),
        _node("h2", "r1", 8),
        _node("h3", "r2", 8),
        _queue("q1", 8, cohort="co", within="LowerPriority", reclaim="Any"),
        _queue("q2", 8, cohort="co"),
        _running("low", "q1", "h1", 4, 2, priority=0),
        _pending("high", "q1", 3, 4, priority=100),
        _pending("other", "q2", 2, 2, minute=2),
    )
    plans = _plans(snap)
    assert plans["cpsat"].preemptions, "the optimizer should evict 'low'"
    _assert_bounds(snap, plans)
    result = lp_bound(snap, "cbc")
    assert result.value <= 16  # the cohort's GPU quota
    assert result.value >= gpus_after(snap, plans["cpsat"]) == 16


def test_workloads_outside_the_model_still_count() -> None:
    """minCount on two pod sets is beyond the CP-SAT model (greedy decides
    them); the bound must still count their GPUs, not drop them."""
    doc = _pending("two-min", "q", 2, 2, min_count=1).replace(
        "    topologyRequest: {unconstrained: true}\n",
        "    topologyRequest: {unconstrained: true}\n"
        "  - name: extra\n    count: 2\n    minCount: 1\n    template:\n"
        "      spec:\n        containers:\n        - name: c\n"
        "          resources:\n            requests: {cpu: '1', nvidia.com/gpu: '1'}\n"
        "    topologyRequest: {unconstrained: true}\n",
    )
    snap = _snap(_node("h1", "r1", 8), _queue("q", 100), doc)
    greedy = solve_greedy(snap)
    assert gpus_after(snap, greedy) == 6
    _assert_bounds(snap, {"greedy": greedy})
    assert lp_bound(snap, "cbc").value == 6
    assert aggregate_bound(snap) == 6


@pytest.mark.parametrize("solver", ["cbc", "highs"])
def test_large_models_get_the_host_class_lp(
    monkeypatch: pytest.MonkeyPatch, solver: str
) -> None:
    """Beyond LARGE_CELLS the full LP is skipped (it does not finish at
    10,000 hosts): the host-class LP is the bound, between the full LP and
    the aggregate ceiling, above every plan, and the status says why."""
    import placewise.solver.bound.lp as lp_module

    config = family("fragmented").with_overrides(nodes=8, pending=12)
    snap = snapshot_from_text(dumps(generate(config, 1)))
    full = lp_bound(snap, "cbc")
    monkeypatch.setattr(lp_module, "LARGE_CELLS", 0)
    large = lp_bound(snap, solver)  # type: ignore[arg-type]
    assert large.lp is not None and large.method == f"classes-{solver}"
    assert "skipped" in large.status and "host-class LP" in large.status
    assert large.aggregate == full.aggregate == aggregate_bound(snap)
    assert full.value <= large.value <= large.aggregate
    for plan in _plans(snap).values():
        assert large.value >= gpus_after(snap, plan)


# -- generated, random and Kueue-derived instances -----------------------------


@pytest.mark.parametrize(
    "name",
    ["default", "fragmented", "preemption-heavy", "topology-heavy", "multi-team"],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_bound_holds_on_small_generated_instances(name: str, seed: int) -> None:
    """Generator families cut down to 8 hosts and 12 pending workloads."""
    config = family(name).with_overrides(nodes=8, pending=12)
    snap = snapshot_from_text(dumps(generate(config, seed)))
    _assert_bounds(snap, _plans(snap))


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(instances())
def test_bound_holds_on_random_instances(inst: object) -> None:
    """Random cohorts, TAS hosts, preemptible running work and partial
    admission: the bound is above both solvers' plans."""
    note(inst.yaml)  # type: ignore[attr-defined]
    snap = snapshot_from_text(inst.yaml)  # type: ignore[attr-defined]
    plans = _plans(snap)
    _assert_bounds(snap, plans)
    assert lp_bound(snap, "cbc").running == running_gpus(snap)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(instances(max_pending=5, max_running=2))
def test_bounds_are_never_below_the_exhaustive_optimum(inst: object) -> None:
    """A brute force over every validator-accepted plan (sharing no code with
    the model) finds the most GPUs any plan keeps running; the LP bound and
    the optimizer's own proven bounds (``gpus`` objective: on the total;
    ``tiers``: on the top tier) never fall below it."""
    note(inst.yaml)  # type: ignore[attr-defined]
    snap = snapshot_from_text(inst.yaml)  # type: ignore[attr-defined]
    assume(option_count(snap) <= 100_000)
    try:
        gpus = exhaustive_optimum(snap, 2500, lambda s, p: (gpus_after(s, p),))
        tiers = exhaustive_optimum(snap, 2500)
    except SearchTooLarge:
        assume(False)
        return
    best = gpus.vector[0]
    note(f"exhaustive best: {best} GPUs, tier vector {tiers.vector}")
    assert lp_bound(snap, "cbc").value >= best
    assert class_bound(snap, "cbc") >= best
    _assert_tier_bounds(snap, {"exhaustive": tiers.plan})
    logging.disable(logging.WARNING)
    try:
        total = solve_cpsat(snap, CpSatParams(time_limit=2, workers=1, policy=GPUS))
        tiered = solve_cpsat(snap, CpSatParams(time_limit=2, workers=1))
    finally:
        logging.disable(logging.NOTSET)
    if total.solver.bound is not None:
        assert total.solver.bound >= best
    if tiered.solver.tiers and tiered.solver.tiers[0].bound is not None:
        assert tiered.solver.tiers[0].bound >= tiers.vector[0]


@requires_shared
def test_bound_holds_on_kueue_cases_for_cpu_and_gpus() -> None:
    """Kueue's own cases (mostly CPU quotas): with ``cpu`` or GPUs as the
    counted resource, the bound is never below the greedy's (Kueue's) plan."""
    logging.disable(logging.WARNING)
    try:
        checked = 0
        for case in case_dirs():
            snap = load_snapshot([case / "instance.yaml"])
            plan = solve_greedy(snap)
            for acc in (("cpu",), ("nvidia.com/gpu",)):
                result = lp_bound(snap, "cbc", acc)
                got = gpus_after(snap, plan, acc)
                assert result.value >= got, f"{case.name} {acc}: {result} < {got}"
            checked += 1
    finally:
        logging.disable(logging.NOTSET)
    assert checked == len(case_dirs()) > 100


def test_cli_prints_bound_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    """Text output names the bound, the LP and the capacity ceiling."""
    assert main(["bound", *DEMO, "--lp-solver", "cbc"]) == 0
    out = capsys.readouterr().out
    assert "GPUs busy after any plan (" in out
    assert "at most 62/64 (lp-cbc" in out  # 56 in Workloads + 6 in plain pods
    assert "in Workloads, at most:      56" in out
    assert "capacity/quota ceiling:     56" in out
    assert "busy now:                   14/64" in out


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    """JSON output is machine-readable with the same figures."""
    assert main(["bound", *DEMO, "--format", "json", "--lp-solver", "cbc"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bound"] == 56 and report["lp"] == 56 and report["capacity"] == 56
    assert report["busy"] == {
        "capacity": 64,
        "outsideWorkloads": 6,
        "now": 14,
        "bound": 62,
    }
    assert report["running"] == 8 and report["method"] == "lp-cbc"
    assert report["lpStatus"] == "Optimal"


def test_cli_custom_accelerators(capsys: pytest.CaptureFixture[str]) -> None:
    """Another resource can be counted: nothing requests TPUs in the demo."""
    assert (
        main(
            [
                "bound",
                *DEMO,
                "--format",
                "json",
                "--lp-solver",
                "cbc",
                "--accelerators",
                "google.com/tpu",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["bound"] == 0


def test_cli_missing_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unreadable instance is an input error, named on stderr."""
    assert main(["bound", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_cli_malformed_instance_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """YAML syntax errors exit 2 with the file named."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: [unclosed\n")
    assert main(["bound", str(bad)]) == 2
    assert "bad.yaml" in capsys.readouterr().err


def test_cli_usage_error_exits_2() -> None:
    """No instance at all is a usage error (argparse's exit 2)."""
    with pytest.raises(SystemExit) as exc:
        main(["bound"])
    assert exc.value.code == 2
