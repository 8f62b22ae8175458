"""A resource two resource groups list: Kueue's reading, in one model method.

Kueue's webhook forbids it, its unit tests do it; its flavor assigner walks
the requested resources by name, an unassigned one takes its first group and
that group assigns every requested resource it covers (overwriting).
"""

from __future__ import annotations

from placewise.models.cluster import ClusterQueue, FlavorQuotas, ResourceGroup
from placewise.models.cluster import ResourceQuota as Q


def queue(*groups: tuple[str, ...]) -> ClusterQueue:
    return ClusterQueue(
        name="cq",
        resource_groups=tuple(
            ResourceGroup(
                covered_resources=g,
                flavors=(
                    FlavorQuotas(
                        name=f"f{i}", resources=tuple(Q(name=r, nominal=1) for r in g)
                    ),
                ),
            )
            for i, g in enumerate(groups)
        ),
    )


def test_first_group_serves_a_repeated_resource() -> None:
    cq = queue(("cpu",), ("cpu",))
    assert cq.group_of("cpu") == 0
    assert cq.serving_groups({"cpu"}) == {"cpu": 0}


def test_a_later_group_overwrites_what_it_also_covers() -> None:
    """cpu takes group 0 (with memory); the gpu's group 1 covers all three
    and reassigns them (Kueue's leader-worker-set case)."""
    cq = queue(("cpu", "memory"), ("cpu", "memory", "gpu"))
    assert cq.serving_groups({"cpu", "memory", "gpu"}) == {
        "cpu": 1,
        "gpu": 1,
        "memory": 1,
    }
    assert cq.serving_groups({"cpu", "memory"}) == {"cpu": 0, "memory": 0}


def test_disjoint_groups_are_plain_group_of() -> None:
    cq = queue(("cpu", "memory"), ("gpu",))
    assert cq.serving_groups({"cpu", "gpu", "disk"}) == {"cpu": 0, "gpu": 1}
    assert cq.group_of("disk") is None
