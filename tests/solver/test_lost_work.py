"""Preemption priced in lost work (issue 19): what the optimizer gives up.

One cohort: queue ``a`` owns 8 GPUs and reclaims (policy Any); queue ``b``
owns none and borrows 4 of them for ``borrower``.  ``big`` (8 GPUs) waits
in ``a``: admitting it means reclaiming ``borrower`` — +4 GPUs net at the
preemptor's tier.  Kueue (the greedy) always reclaims; the optimizer does
only where the gain pays for the victim's lost work, never for work about
to finish, and always for a higher tier.  Every plan is validated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from placewise.adapters.io.loader import snapshot_from_text
from placewise.cli import main
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.lost_work import lost_work
from placewise.solver.policy import Policy
from placewise.solver.solve import SolveParams, solve

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

QUEUES = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
spec: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a}
spec:
  namespaceSelector: {}
  cohortName: c
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: "8"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: b}
spec:
  namespaceSelector: {}
  cohortName: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: "0"}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: qa, namespace: default}
spec: {clusterQueue: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: qb, namespace: default}
spec: {clusterQueue: b}
"""


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def instance(
    ran: timedelta | None,
    priority: int = 100,
    max_seconds: int | None = None,
    *extra: str,
) -> Snapshot:
    return snapshot_from_text(instance_text(ran, priority, max_seconds, *extra))


def instance_text(
    ran: timedelta | None,
    priority: int = 100,
    max_seconds: int | None = None,
    *extra: str,
) -> str:
    """``borrower`` running for ``ran`` (None: no time recorded anywhere),
    ``big`` pending at ``priority``; now is ``big``'s creation."""
    created = f'creationTimestamp: "{_stamp(NOW)}"' if ran is not None else ""
    since = f', lastTransitionTime: "{_stamp(NOW - ran)}"' if ran is not None else ""
    limit = f"maximumExecutionTimeSeconds: {max_seconds}" if max_seconds else ""
    pod = (
        "template: {spec: {containers: [{name: c, resources: "
        "{requests: {nvidia.com/gpu: '1'}}}]}}"
    )
    borrower = f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: borrower, namespace: default}}
spec:
  queueName: qb
  priority: 100
  {limit}
  podSets: [{{name: main, count: 4, {pod}}}]
status:
  admission:
    clusterQueue: b
    podSetAssignments: [{{name: main, flavors: {{nvidia.com/gpu: h100}},
      resourceUsage: {{nvidia.com/gpu: "4"}}, count: 4}}]
  conditions:
  - {{type: QuotaReserved, status: "True"{since}}}
  - {{type: Admitted, status: "True"{since}}}
"""
    big = f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {{name: big, namespace: default, {created}}}
spec:
  queueName: qa
  priority: {priority}
  podSets: [{{name: main, count: 8, {pod}}}]
"""
    return "---\n".join([QUEUES, borrower, big, *extra])


def cpsat(snap: Snapshot, policy: Policy | None = None) -> Plan:
    params = SolveParams(
        solver="cpsat",
        time_limit=2.0,
        workers=1,
        seed=0,
        deterministic_time=2.0,
        policy=policy or Policy(),
    )
    plan = solve(snap, params)
    assert validate(snap, plan) == []
    return plan


def preempted(plan: Plan) -> list[str]:
    return [p.workload for p in plan.preemptions]


def admitted(plan: Plan) -> list[str]:
    return [a.workload for a in plan.admissions]


def test_kueue_reclaims_whatever_the_time() -> None:
    """The baseline: Kueue does not price (the greedy is unchanged)."""
    plan = solve(instance(timedelta(hours=2)), SolveParams(solver="greedy"))
    assert preempted(plan) == ["default/borrower"]


def test_a_long_run_is_not_thrown_away_for_a_small_gain_at_its_tier() -> None:
    """4 GPUs x 2 h = 8 GPU-hours lost costs 8 GPUs at price 1: more than
    the 4 GPUs net it would add to priority 100."""
    plan = cpsat(instance(timedelta(hours=2)))
    assert preempted(plan) == [] and admitted(plan) == []
    tier = plan.solver.tiers[0]
    assert (tier.priority, tier.gpus) == (100, 4)
    assert tier.bound == 8  # on GPUs (reclaiming reaches 8), not on the price
    # On the wall clock the unpriced LP bounds it: still a bound on GPUs.
    # A loaded machine can spend the 2 s before the search, or stop the
    # tier's stage before it proves: a looser ceiling (12 seen at load 16-18)
    # comes back then, a bound still; the exact one once the stage proves.
    params = SolveParams(solver="cpsat", time_limit=2.0, workers=1)
    plan = solve(instance(timedelta(hours=2)), params)
    assert preempted(plan) == []
    bound = plan.solver.tiers[0].bound
    assert bound is not None and bound >= 8
    if plan.solver.status == "OPTIMAL":
        assert bound == 8


def test_a_short_run_is_preempted_when_the_gain_pays() -> None:
    """10 minutes x 4 GPUs costs under a GPU: +4 GPUs pays for it."""
    plan = cpsat(instance(timedelta(minutes=10)))
    assert preempted(plan) == ["default/borrower"]
    assert admitted(plan) == ["default/big"]


def test_a_higher_tier_always_may_preempt() -> None:
    """The tiers above come first: a 1000-priority gang reclaims the
    long-running 100-priority victim whatever it loses."""
    plan = cpsat(instance(timedelta(hours=2), priority=1000))
    assert preempted(plan) == ["default/borrower"]
    assert admitted(plan) == ["default/big"]


def test_work_about_to_finish_is_left_to_finish() -> None:
    """Cheap to preempt (10 minutes in) but its maximum execution time ends
    it in 2 minutes, inside the 5-minute finish window: not preempted —
    unless the window is off."""
    snap = instance(timedelta(minutes=10), max_seconds=12 * 60)
    assert lost_work(snap, Policy()).finishing == {"default/borrower"}
    plan = cpsat(snap)
    assert preempted(plan) == [] and admitted(plan) == []
    assert plan.solver.tiers[0].greedy == 8  # Kueue's own plan reclaims it
    plan = cpsat(snap, Policy(finish_window_minutes=0))
    assert preempted(plan) == ["default/borrower"]


TODAYS_PLAN = {
    # `solve --deterministic-time 2 --workers 1 --seed 0 --format json` on
    # instance(2 h) at 2bb3db7, before pricing (wallSeconds dropped).
    "apiVersion": "placewise.io/v1alpha1",
    "kind": "Plan",
    "solver": {
        "name": "cpsat",
        "status": "OPTIMAL",
        "objective": 8,
        "tiers": [{"priority": 100, "gpus": 8, "bound": 8, "greedy": 8}],
    },
    "admissions": [
        {
            "workload": "default/big",
            "clusterQueue": "a",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "h100"},
                    "resourceUsage": {"nvidia.com/gpu": "8"},
                    "count": 8,
                }
            ],
        }
    ],
    "preemptions": [
        {
            "workload": "default/borrower",
            "preemptor": "default/big",
            "reason": "InCohortReclamation",
        }
    ],
    "pending": [],
}


def test_price_zero_solves_todays_plan(tmp_path: Path) -> None:
    """``preemption_price: 0`` through the CLI: byte for byte the plan the
    optimizer printed before pricing existed."""
    path, policy, out = tmp_path / "i.yaml", tmp_path / "p.yaml", tmp_path / "o"
    path.write_text(instance_text(timedelta(hours=2)))
    policy.write_text("preemption_price: 0\n")
    args = ["solve", str(path), "--deterministic-time", "2", "--workers", "1"]
    args += ["--seed", "0", "--format", "json", "--policy", str(policy)]
    assert main([*args, "-o", str(out)]) == 0
    plan = json.loads(out.read_text())
    plan["solver"].pop("wallSeconds")
    assert plan == TODAYS_PLAN
    assert main([*args[:-2], "-o", str(out)]) == 0  # priced: not preempted
    assert json.loads(out.read_text())["preemptions"] == []


def test_price_zero_is_the_objective_before_pricing() -> None:
    """With the price at 0 the model is exactly the unpriced one: the same
    plan as on the instance without any time (where nothing is priced)."""
    timed = cpsat(instance(timedelta(hours=2)), Policy(preemption_price=0))
    timeless = cpsat(instance(None))
    assert preempted(timed) == preempted(timeless) == ["default/borrower"]
    assert timed.admissions == timeless.admissions
    assert timed.solver.tiers == timeless.solver.tiers
    assert lost_work(instance(timedelta(hours=2)), Policy(preemption_price=0)) == (
        lost_work(instance(None), Policy())
    )


UNTIMED = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: untimed, namespace: default}
spec:
  queueName: qb
  priority: 100
  podSets: [{name: main, count: 2, template: {spec: {containers: [{name: c}]}}}]
status:
  admission:
    clusterQueue: b
    podSetAssignments: [{name: main, flavors: {nvidia.com/gpu: h100},
      resourceUsage: {nvidia.com/gpu: "2"}, count: 2}]
  conditions: [{type: QuotaReserved, status: "True"}]
"""


def test_unknown_elapsed_is_the_median_and_none_known_prices_nothing() -> None:
    """``untimed`` records no start: it is assumed to have run the median of
    the known runs (here borrower's 2 h), never zero."""
    snap = instance(timedelta(hours=2), 100, None, UNTIMED)
    assert snap.run_times["default/untimed"].elapsed is None
    lost = lost_work(snap, Policy())
    assert lost.assumed_elapsed == 2 * 3600
    assert lost.gpu_seconds == {
        "default/borrower": 4 * 2 * 3600,
        "default/untimed": 2 * 2 * 3600,
    }
    assert not lost_work(instance(None), Policy()).priced


def test_policy_checks_its_price_and_window() -> None:
    assert Policy.from_mapping({"preemption_price": 2}).preemption_price == 2.0
    for bad in (
        {"preemption_price": -1},
        {"preemption_price": "cheap"},
        {"preemption_price": 10**6},
        {"finish_window_minutes": 2.5},
        {"finish_window_minutes": -1},
    ):
        with pytest.raises(ValueError, match=r"preemption_price|finish_window"):
            Policy.from_mapping(bad)
