"""Greedy mechanisms one at a time, on hand-made instances.

Each test builds a tiny cluster in YAML, runs Kueue's cycles and checks the
decision Kueue's rules imply; every plan also passes the validator.
"""

from __future__ import annotations

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.greedy import solve_greedy
from tests.helpers import NS, flavor_yaml, snapshot
from tests.kueue_cases import assert_feasible


def cq(
    name: str,
    flavors: list[tuple[str, str, str | None]],
    cohort: str | None = None,
    extra: str = "",
    resource: str = "cpu",
) -> str:
    """A ClusterQueue with one resource group; flavors: (name, nominal, borrowing)."""
    lines = [
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: ClusterQueue",
        f"metadata: {{name: {name}}}",
        "spec:",
        "  namespaceSelector: {}",
    ]
    if cohort:
        lines.append(f"  cohortName: {cohort}")
    lines += [
        "  resourceGroups:",
        f"  - coveredResources: [{resource}]",
        "    flavors:",
    ]
    for f, nominal, borrow in flavors:
        res = f"{{name: {resource}, nominalQuota: '{nominal}'"
        res += f", borrowingLimit: '{borrow}'}}" if borrow is not None else "}"
        lines.append(f"    - {{name: {f}, resources: [{res}]}}")
    return "\n".join(lines) + "\n" + extra


def lq(name: str, cq_name: str) -> str:
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        f"metadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{clusterQueue: {cq_name}}}\n"
    )


def wl(
    name: str,
    queue: str,
    cpu: str,
    count: int = 1,
    priority: int = 0,
    ts: int = 0,
    min_count: int | None = None,
    running_in: str | None = None,
    flavor: str = "f",
) -> str:
    text = (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n"
        f"  name: {name}\n  namespace: default\n"
        f"  creationTimestamp: '2026-01-01T00:00:{ts:02d}Z'\nspec:\n"
        f"  queueName: {queue}\n  priority: {priority}\n  podSets:\n"
        f"  - name: main\n    count: {count}\n"
    )
    if min_count is not None:
        text += f"    minCount: {min_count}\n"
    text += (
        "    template: {spec: {containers: [{name: c, resources: "
        f"{{requests: {{cpu: '{cpu}'}}}}}}]}}}}\n"
    )
    if running_in:
        total = float(cpu) * count
        text += (
            f"status:\n  admission:\n    clusterQueue: {running_in}\n"
            f"    podSetAssignments:\n    - name: main\n      count: {count}\n"
            f"      flavors: {{cpu: {flavor}}}\n"
            f"      resourceUsage: {{cpu: '{total:g}'}}\n"
            f"  conditions:\n  - type: QuotaReserved\n    status: 'True'\n"
            f"    lastTransitionTime: '2026-01-01T00:01:{ts:02d}Z'\n"
        )
    return text


def run(snap: Snapshot, cycles: int | None = None) -> Plan:
    plan = solve_greedy(snap, cycles)
    assert_feasible(snap, plan)
    return plan


def flavors_of(plan: Plan, key: str) -> dict[str, str]:
    adm = next(a for a in plan.admissions if a.workload == key)
    return adm.pod_set_assignments[0].flavors


def test_fungibility_may_stop_search_takes_first_flavor_even_when_borrowing() -> None:
    """Default whenCanBorrow: MayStopSearch stops at the first flavor that fits."""
    snap = snapshot(
        NS,
        flavor_yaml("a"),
        flavor_yaml("b"),
        cq("cq", [("a", "1", None), ("b", "10", None)], cohort="co"),
        cq("lender", [("a", "10", None), ("b", "0", None)], cohort="co"),
        lq("q", "cq"),
        wl("w", "q", "4"),
    )
    assert flavors_of(run(snap), "default/w") == {"cpu": "a"}


def test_fungibility_try_next_flavor_avoids_borrowing() -> None:
    """whenCanBorrow: TryNextFlavor prefers a later flavor that needs no borrowing."""
    extra = "  flavorFungibility: {whenCanBorrow: TryNextFlavor}\n"
    snap = snapshot(
        NS,
        flavor_yaml("a"),
        flavor_yaml("b"),
        cq("cq", [("a", "1", None), ("b", "10", None)], cohort="co", extra=extra),
        cq("lender", [("a", "10", None), ("b", "0", None)], cohort="co"),
        lq("q", "cq"),
        wl("w", "q", "4"),
    )
    assert flavors_of(run(snap), "default/w") == {"cpu": "b"}


def test_preemption_order_and_fill_back() -> None:
    """Lowest priority first, newest first among equals; fill-back keeps it minimal."""
    extra = "  preemption: {withinClusterQueue: LowerPriority}\n"
    snap = snapshot(
        NS,
        flavor_yaml(),
        cq("cq", [("f", "10", None)], extra=extra),
        lq("q", "cq"),
        wl("big-low", "q", "6", priority=1, ts=1, running_in="cq"),
        wl("small-lowest", "q", "2", priority=0, ts=2, running_in="cq"),
        wl("small-low-new", "q", "2", priority=1, ts=3, running_in="cq"),
        wl("incoming", "q", "6", priority=5, ts=9),
    )
    plan = run(snap, cycles=1)
    # Candidates in order: small-lowest (prio 0), small-low-new (prio 1, newer
    # reservation), big-low; removing all three fits, fill-back re-adds the
    # two small ones (from the second-to-last back), so only big-low goes.
    assert {p.workload for p in plan.preemptions} == {"default/big-low"}
    assert all(p.reason == "InClusterQueue" for p in plan.preemptions)
    assert [p.workload for p in plan.pending] == ["default/incoming"]
    # A second cycle admits the preemptor once its victim is gone.
    assert "default/incoming" in {a.workload for a in run(snap).admissions}


def test_partial_admission_takes_largest_count_that_fits() -> None:
    """minCount: Kueue's search over counts admits the largest that fits (7 of 10)."""
    snap = snapshot(
        NS,
        flavor_yaml(),
        cq("cq", [("f", "7", None)]),
        lq("q", "cq"),
        wl("w", "q", "1", count=10, min_count=3),
    )
    adm = run(snap).admissions[0].pod_set_assignments[0]
    assert adm.count == 7
    assert adm.resource_usage == {"cpu": 7000}


def test_strict_fifo_blocks_best_effort_skips() -> None:
    """A head that does not fit blocks a StrictFIFO queue, not a BestEffortFIFO one."""
    for strategy, admitted in (
        ("StrictFIFO", []),
        ("BestEffortFIFO", ["default/small"]),
    ):
        extra = f"  queueingStrategy: {strategy}\n"
        snap = snapshot(
            NS,
            flavor_yaml(),
            cq("cq", [("f", "4", None)], extra=extra),
            lq("q", "cq"),
            wl("huge", "q", "8", priority=1, ts=1),
            wl("small", "q", "1", priority=0, ts=2),
        )
        plan = run(snap)
        assert [a.workload for a in plan.admissions] == admitted, strategy


def test_one_head_per_queue_per_cycle() -> None:
    """Ten fitting workloads in one queue need ten cycles (Kueue §8.1)."""
    docs = [NS, flavor_yaml(), cq("cq", [("f", "100", None)]), lq("q", "cq")]
    docs += [wl(f"w{i}", "q", "1", ts=i) for i in range(10)]
    snap = snapshot(*docs)
    assert len(run(snap, cycles=3).admissions) == 3
    assert len(run(snap).admissions) == 10


def test_reclaim_from_borrowing_queue() -> None:
    """A queue under its nominal quota reclaims what a neighbour borrowed."""
    extra = "  preemption: {reclaimWithinCohort: Any}\n"
    snap = snapshot(
        NS,
        flavor_yaml(),
        cq("a", [("f", "4", None)], cohort="co", extra=extra),
        cq("b", [("f", "4", None)], cohort="co"),
        lq("qa", "a"),
        lq("qb", "b"),
        wl("borrower", "qb", "7", running_in="b"),
        wl("owner", "qa", "3", ts=5),
    )
    plan = run(snap, cycles=1)
    assert [(p.workload, p.reason) for p in plan.preemptions] == [
        ("default/borrower", "InCohortReclamation")
    ]


def test_deterministic() -> None:
    """The same input gives the same plan (wall time aside)."""
    docs = [NS, flavor_yaml(), cq("cq", [("f", "5", None)]), lq("q", "cq")]
    docs += [wl(f"w{i}", "q", str(1 + i % 3), ts=i % 4) for i in range(12)]
    snap = snapshot(*docs)
    a, b = run(snap), run(snap)
    assert a.model_copy(update={"solver": b.solver}) == b
