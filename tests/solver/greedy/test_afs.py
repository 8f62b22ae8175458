"""The greedy under Kueue's admission fair sharing, on hand-made instances:
heads of a usage-based ClusterQueue come by their LocalQueue's usage over
its weight, resource weights count, and every admission charges its
LocalQueue the entry penalty at once.  Kueue's own table cases are in
``test_greedy_kueue_cases`` (more/afs/)."""

from __future__ import annotations

from fractions import Fraction

from placewise.models.cluster import AdmissionFairSharing
from placewise.solver.greedy import solve_greedy
from placewise.solver.greedy.queues import PendingQueue
from placewise.solver.kueue.afs import AfsLedger, alpha
from placewise.solver.kueue.workload import WlInfo
from tests.helpers import NS, cq_yaml, flavor_yaml, snapshot
from tests.solver.greedy.test_mechanisms import wl

USAGE_BASED = "  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n"


def config(weights: str = "") -> str:
    text = (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "admissionFairSharing:\n  usageHalfLifeTime: 10s\n"
        "  usageSamplingInterval: 1s\n"
    )
    return text + (f"  resourceWeights: {{{weights}}}\n" if weights else "")


def local_queue(name: str, consumed: str = "", weight: str = "1") -> str:
    text = (
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
        f"metadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{clusterQueue: cq, fairSharing: {{weight: '{weight}'}}}}\n"
    )
    if consumed:
        text += (
            "status:\n  fairSharing:\n    weightedShare: 0\n"
            "    admissionFairSharingStatus:\n"
            f"      consumedResources: {{{consumed}}}\n"
            "      lastUpdate: '2026-01-01T00:00:00Z'\n"
        )
    return text


def admitted(*docs: str, cycles: int | None = None) -> list[str]:
    plan = solve_greedy(snapshot(NS, flavor_yaml(), *docs), cycles=cycles)
    return sorted(a.workload for a in plan.admissions)


def two_teams(usage_based: bool) -> list[str]:
    """Equal recorded usage; team a submitted first, twice; room for two."""
    extra = USAGE_BASED if usage_based else ""
    return admitted(
        config(),
        cq_yaml("cq", quotas={"cpu": ("2", None, None)}, extra=extra),
        local_queue("a", "cpu: '4'"),
        local_queue("b", "cpu: '4'"),
        wl("a1", "a", "1", ts=0),
        wl("a2", "a", "1", ts=1),
        wl("b1", "b", "1", ts=2),
    )


def test_entry_penalty_hands_the_next_slot_to_the_other_queue() -> None:
    """After a1, team a's usage is 4 + alpha x 1 cpu > 4: b1 comes before a2."""
    assert two_teams(usage_based=True) == ["default/a1", "default/b1"]


def test_without_the_admission_mode_the_order_is_classical() -> None:
    assert two_teams(usage_based=False) == ["default/a1", "default/a2"]


def one_slot(weights: str, lq_a: str = "1", lq_b: str = "1") -> list[str]:
    """Room for one; a recorded 2 cpu, b 1 GPU; a submitted first."""
    return admitted(
        config(weights),
        cq_yaml("cq", quotas={"cpu": ("1", None, None)}, extra=USAGE_BASED),
        local_queue("a", "cpu: '2'", weight=lq_a),
        local_queue("b", "nvidia.com/gpu: '1'", weight=lq_b),
        wl("a1", "a", "1", ts=0),
        wl("b1", "b", "1", ts=1),
        cycles=1,
    )


def test_resource_weights_decide() -> None:
    assert one_slot("") == ["default/b1"]  # 1 GPU < 2 cpu
    assert one_slot("nvidia.com/gpu: 4") == ["default/a1"]  # 4 > 2


def test_local_queue_weight_divides_usage() -> None:
    assert one_slot("", lq_a="4") == ["default/a1"]  # 2/4 < 1/1
    assert one_slot("", lq_b="0") == ["default/a1"]  # weight 0: last


def test_alpha_is_kueues_rate() -> None:
    """1 - 0.5^(sampling / half-life); 0 for a zero half-life."""
    cfg = AdmissionFairSharing(
        usage_half_life_ns=10 * 10**9, usage_sampling_interval_ns=10**9
    )
    assert abs(alpha(cfg) - (1 - 0.5**0.1)) < 1e-15
    assert alpha(cfg.model_copy(update={"usage_half_life_ns": 0})) == 0.0
    assert Fraction(repr(alpha(cfg))) < Fraction(7, 100)


def test_usage_comes_before_the_sticky_preemptor() -> None:
    """Kueue's AFS comparator puts the LocalQueue's usage ahead of the base
    order, the sticky preemptor included: the sticky head of a busier
    LocalQueue waits; among equal usage it goes first."""
    snap = snapshot(
        NS,
        flavor_yaml(),
        config(),
        cq_yaml("cq", extra=USAGE_BASED),
        local_queue("a", "cpu: '4'"),
        local_queue("b", "cpu: '1'"),
        local_queue("c", "cpu: '1'"),
        wl("a1", "a", "1", ts=0),
        wl("b1", "b", "1", ts=1),
        wl("c1", "c", "1", ts=2),
    )
    ledger = AfsLedger.of(snap)
    assert ledger is not None
    queue = PendingQueue(snap.cluster_queues["cq"], ledger)
    for w in snap.pending:
        queue.push(WlInfo(obj=w, cq="cq"))
    queue.sticky = "default/a1"
    assert queue.head_key() == "default/b1"  # usage 1 < 4
    queue.sticky = "default/c1"
    assert queue.head_key() == "default/c1"  # usage ties b: sticky first
    popped = queue.pop()
    assert popped is not None and popped.key == "default/c1"
    ledger.charge(popped.obj, {})  # c's usage grows by alpha x 1 cpu
    assert queue.head_key() == "default/b1"
