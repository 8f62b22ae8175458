"""Stable across re-solves (issue 19, item 4): what runs was acted on.

Cohort ``c``: queues ``a`` and ``b`` own 4 GPUs each and reclaim (policy
Any).  ``b`` runs ``old`` (2 hours in) and ``fresh`` (admitted by the
previous plan, this very second), borrowing ``a``'s 4 GPUs; ``eager``
(4 GPUs and many cores) waits in ``a``.  Reclaiming ``fresh`` for
``eager`` runs as many GPUs, and more cores: a plan as good on GPUs with a
better tie-break.  Without a price on reversing a decision, the optimizer
evicts ``fresh`` — lost work nil — to take it; with the default price the
plan acted on stands.  Every plan is validated.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.lost_work import lost_work, victim_units
from placewise.solver.policy import Policy
from placewise.solver.solve import SolveParams, solve

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _queue(name: str) -> str:
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {name}}}
spec:
  namespaceSelector: {{}}
  cohortName: c
  preemption: {{reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu, cpu]
    flavors: [{{name: h100, resources: [{{name: nvidia.com/gpu, nominalQuota: "4"}},
      {{name: cpu, nominalQuota: "200"}}]}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q{name}, namespace: default}}
spec: {{clusterQueue: {name}}}
"""


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _job(name: str, queue: str, cpu: int, since: datetime | None = None) -> str:
    pod = (
        "template: {spec: {containers: [{name: c, resources: "
        f"{{requests: {{nvidia.com/gpu: '1', cpu: '{cpu}'}}}}}}]}}}}"
    )
    text = f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: {name}, namespace: default, creationTimestamp: "{_stamp(NOW)}"}}
spec:
  queueName: q{queue}
  priority: 100
  podSets: [{{name: main, count: 4, {pod}}}]
"""
    if since is None:
        return text
    return (
        text
        + f"""status:
  admission:
    clusterQueue: {queue}
    podSetAssignments: [{{name: main, flavors: {{nvidia.com/gpu: h100, cpu: h100}},
      resourceUsage: {{nvidia.com/gpu: "4", cpu: "{4 * cpu}"}}, count: 4}}]
  conditions:
  - {{type: QuotaReserved, status: "True", lastTransitionTime: "{_stamp(since)}"}}
  - {{type: Admitted, status: "True", lastTransitionTime: "{_stamp(since)}"}}
"""
    )


FLAVOR = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {}
"""


def cluster() -> Snapshot:
    docs = [
        FLAVOR,
        _queue("a"),
        _queue("b"),
        _job("old", "b", 1, NOW - timedelta(hours=2)),
        _job("fresh", "b", 1, NOW),
        _job("eager", "a", 40),
    ]
    return snapshot_from_text("---\n".join(docs))


def cpsat(snap: Snapshot, policy: Policy) -> Plan:
    params = SolveParams(
        solver="cpsat",
        time_limit=2.0,
        workers=1,
        seed=0,
        deterministic_time=2.0,
        policy=policy,
    )
    plan = solve(snap, params)
    assert validate(snap, plan) == []
    return plan


def test_reversing_costs_whole_gpus_of_the_victims_tier() -> None:
    pol = Policy()
    lw = lost_work(cluster(), pol)
    assert lw.timed and lw.gpus == {"default/old": 4, "default/fresh": 4}
    assert victim_units(lw, "default/fresh", 1000, pol) == 1000  # 1 GPU
    assert victim_units(lw, "default/old", 1000, pol) == 9000  # + 8 GPU-hours
    assert victim_units(lw, "default/fresh", 1000, Policy(reversal_gpus=0)) == 0
    assert victim_units(lw, "default/fresh", 1000, Policy(reversal_gpus=9)) == 4000


def test_an_equally_good_plan_does_not_reverse_a_fresh_admission() -> None:
    snap = cluster()
    flip = cpsat(snap, Policy(reversal_gpus=0.0))
    assert [p.workload for p in flip.preemptions] == ["default/fresh"]
    assert [a.workload for a in flip.admissions] == ["default/eager"]
    plan = cpsat(snap, Policy())
    assert plan.preemptions == () and plan.admissions == ()
    again = cpsat(snap, Policy())  # the same state re-solved: the same plan
    assert again.model_dump(exclude={"solver"}) == plan.model_dump(exclude={"solver"})


def test_kueue_itself_reclaims() -> None:
    """The baseline: Kueue's rules allow the reclaim (the greedy takes it)."""
    plan = solve(cluster(), SolveParams(solver="greedy"))
    assert [p.workload for p in plan.preemptions] == ["default/fresh"]
