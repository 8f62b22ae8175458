"""Which flavors a pod set may take (kueue-semantics §4.2).

Shared by every solver so that the greedy and the optimizer agree on the
static part of feasibility: the TAS match, flavor taints against pod and
flavor tolerations, and the pod's node affinity restricted to the keys the
flavor defines.
"""

from __future__ import annotations

from collections.abc import Sequence

from placewise.models.cluster import ClusterQueue, ResourceFlavor
from placewise.models.scheduling import untolerated
from placewise.models.snapshot import Snapshot
from placewise.models.workload import PodSet


def tas_only(snapshot: Snapshot, cq: ClusterQueue) -> bool:
    """Every flavor of the queue is a TAS flavor (pod sets get implied TAS)."""
    names = cq.flavor_names
    return bool(names) and all(
        f in snapshot.flavors and snapshot.flavors[f].is_tas for f in names
    )


def requests_tas(ps: PodSet, snapshot: Snapshot, cq: ClusterQueue) -> bool:
    return ps.topology.requests_tas or tas_only(snapshot, cq)


def tas_mismatch(
    snapshot: Snapshot,
    cq: ClusterQueue,
    ps: PodSet,
    flavor: ResourceFlavor,
    covered: Sequence[str],
) -> str | None:
    """Kueue's checkPodSetAndFlavorMatchForTAS."""
    explicit = ps.topology.requests_tas
    if explicit or tas_only(snapshot, cq):
        if not explicit:
            return None  # implied TAS accepts the queue's (TAS) flavors
        if not flavor.is_tas:
            if not any(r in covered for r in ps.requests):
                return None
            return f'Flavor "{flavor.name}" does not support TopologyAwareScheduling'
        topo = snapshot.topologies.get(flavor.topology_name or "")
        levels = topo.levels if topo is not None else ()
        wanted = [x for x in (ps.topology.required, ps.topology.preferred) if x]
        wanted += [s.level for s in ps.topology.slices]
        if any(level not in levels for level in wanted):
            return f'Flavor "{flavor.name}" does not contain the requested level'
        return None
    if flavor.is_tas:
        return f'Flavor "{flavor.name}" supports only TopologyAwareScheduling'
    return None


def flavor_rejection(
    snapshot: Snapshot,
    cq: ClusterQueue,
    name: str,
    pod_sets: Sequence[PodSet],
    covered: Sequence[str],
) -> str | None:
    """Why ``name`` cannot serve these pod sets, or None when it can."""
    flavor = snapshot.flavors.get(name)
    if flavor is None:
        return f"flavor {name} not found"
    for ps in pod_sets:
        why = tas_mismatch(snapshot, cq, ps, flavor, covered)
        if why is not None:
            return why
        bad = untolerated(
            flavor.node_taints, ps.placement.tolerations + flavor.tolerations
        )
        if bad:
            t = bad[0]
            return (
                f"untolerated taint {{{t.key} {t.value} {t.effect}}} in flavor {name}"
            )
        if not ps.placement.matches_flavor(flavor.node_labels):
            return f"flavor {name} doesn't match node affinity"
    return None
