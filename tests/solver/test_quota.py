"""Incremental quota arithmetic against kueue-semantics §2.5's worked examples."""

from __future__ import annotations

from placewise.solver.kueue.quota import QuotaTree
from tests.helpers import cq_yaml, flavor_yaml, snapshot

FR = ("f", "cpu")


def hierarchical_tree() -> QuotaTree:
    cohort_c = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec:
  parentName: r
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: '0', borrowingLimit: '5'}
"""
    snap = snapshot(
        flavor_yaml(),
        cohort_c,
        cq_yaml("a", cohort="c", quotas={"cpu": ("10", None, "4")}),
        cq_yaml("b", cohort="r", quotas={"cpu": ("6", None, None)}),
    )
    return QuotaTree(snap)


def test_hierarchical_worked_example() -> None:
    """§2.5: local quota, subtree quota, propagation, available, potential."""
    tree = hierarchical_tree()
    a, c, r = tree.node("a"), tree.nodes["co:c"], tree.nodes["co:r"]
    assert a.local_quota(FR) == 6000
    assert c.subtree[FR] == 4000
    assert r.subtree[FR] == 10000
    tree.add_usage("a", {FR: 7000})  # cpu is in milli-units
    tree.add_usage("b", {FR: 3000})
    assert (a.usage[FR], c.usage.get(FR), r.usage.get(FR)) == (7000, 1000, 4000)
    assert tree.available("a", FR) == 6000
    assert tree.potential_available("a", FR) == 15000


def test_hierarchical_units_scale() -> None:
    """The tree stores milli-cpu: nominal 10 cores is 10000 units."""
    tree = hierarchical_tree()
    assert tree.node("a").nominal[FR] == 10000
    assert tree.node("a").local_quota(FR) == 6000


def test_flat_example_needs_reclaim() -> None:
    """§2.5 flat: A's unused nominal that B borrowed is not available to A."""
    snap = snapshot(flavor_yaml(), cq_yaml("a", cohort="co"), cq_yaml("b", cohort="co"))
    tree = QuotaTree(snap)
    tree.add_usage("a", {FR: 4000})
    tree.add_usage("b", {FR: 12000})
    assert tree.available("a", FR) == 4000
    assert tree.lowest_fitting_subtree("a", FR, 5000) == (0, True)
    assert tree.lowest_fitting_subtree("a", FR, 7000) == (1, False)


def test_remove_restores_every_level() -> None:
    """Adding then removing usage returns every node to its previous usage."""
    tree = hierarchical_tree()
    tree.add_usage("b", {FR: 2000})
    before = {k: dict(n.usage) for k, n in tree.nodes.items()}
    tree.add_usage("a", {FR: 9000})
    tree.remove_usage("a", {FR: 9000})
    after = {
        k: {fr: v for fr, v in n.usage.items() if v} for k, n in tree.nodes.items()
    }
    assert after == {k: {fr: v for fr, v in u.items() if v} for k, u in before.items()}


def test_standalone_queue() -> None:
    """A standalone queue is its own root: available = nominal - usage."""
    tree = QuotaTree(snapshot(flavor_yaml(), cq_yaml("solo")))
    tree.add_usage("solo", {FR: 2500})
    assert tree.available("solo", FR) == 7500
    assert tree.potential_available("solo", FR) == 10000
    assert tree.lowest_fitting_subtree("solo", FR, 9000) == (0, False)
