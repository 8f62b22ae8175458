"""Elastic workload slices in Kueue's cycle (ElasticJobsViaWorkloadSlices).

Kueue hands the flavor assigner the running slice a scale-up slice replaces
(``workloadslicing.ReplacedWorkloadSlice``): each pod set must keep the old
slice's flavors, and only the growth (new minus old) is checked against
quota.  The old slice is also the entry's first preemption target, so the
fit re-check runs without it and an entry whose target another preemptor
took is skipped; on admission it is finished, not evicted.  The greedy gets
the same arithmetic by assigning the new slice with the old one's quota
removed from the state (the full new request against usage without the old
is the delta against usage with it), pinned to the old flavors.  On a
topology the old slice's pods stay where they are (its placement stays in
the state) and only the growth is placed, as Kueue's
ElasticJobsViaWorkloadSlicesWithTAS does for unconstrained requests.
"""

from __future__ import annotations

from collections.abc import Mapping

from placewise.models.snapshot import Snapshot
from placewise.models.workload import TopologyAssignment, TopologyDomain, Workload
from placewise.solver.greedy.state import ClusterState
from placewise.solver.kueue.workload import WlInfo

TAS_SLICE = (
    "elastic workload slice with a required or preferred topology (or slice "
    "layers) whose running slice is placed on a topology: Kueue grows such "
    "slices only unconstrained (ElasticJobsViaWorkloadSlicesWithTAS)"
)

Kept = dict[str, tuple[int, TopologyAssignment]]
"""Pod set -> (pods the old slice runs, where): they stay put."""


def unsupported(snapshot: Snapshot, w: Workload) -> str | None:
    """Why the greedy leaves this slice pending, if it does: growing a placed
    slice keeps its pods and places the growth anywhere, which only an
    unconstrained request allows (Kueue refuses the others too)."""
    old = snapshot.replaced_slice(w)
    if old is None or old.admission is None:
        return None
    placed = {
        p.name for p in old.admission.pod_set_assignments if p.topology_assignment
    }
    for ps in w.pod_sets:
        t = ps.topology
        if ps.name in placed and (t.required or t.preferred or t.slices):
            return TAS_SLICE
    return None


def kept_pods(old: WlInfo) -> Kept:
    """The old slice's placed pods per pod set."""
    assert old.obj.admission is not None
    return {
        p.name: (p.count, p.topology_assignment)
        for p in old.obj.admission.pod_set_assignments
        if p.topology_assignment is not None
    }


def merged(
    old: TopologyAssignment, growth: TopologyAssignment
) -> TopologyAssignment | None:
    """The old pods' domains plus the growth's (None if the levels differ)."""
    if old.levels != growth.levels:
        return None
    counts = old.as_counts()
    for values, n in growth.as_counts().items():
        counts[values] = counts.get(values, 0) + n
    return TopologyAssignment(
        levels=old.levels,
        domains=tuple(
            TopologyDomain(values=v, count=n) for v, n in sorted(counts.items())
        ),
    )


def old_slice(snapshot: Snapshot, state: ClusterState, info: WlInfo) -> WlInfo | None:
    """The running slice ``info`` replaces, while it still holds quota in
    this run (a slice preempted or replaced meanwhile is gone: Kueue then
    finds nothing to replace and schedules the new one on its own)."""
    old = snapshot.replaced_slice(info.obj)
    if old is None:
        return None
    return state.running.get(info.cq, {}).get(old.key)


def pinned_flavors(
    old: WlInfo, pinned: Mapping[str, Mapping[str, str]] | None
) -> dict[str, dict[str, str]]:
    """The old slice's flavor per pod set and resource: the only ones the
    new slice may take (Kueue: "could not assign ... since the original
    workload is assigned ...").  A nomination pin, when given, agrees."""
    assert old.obj.admission is not None
    out = {p.name: dict(p.flavors) for p in old.obj.admission.pod_set_assignments}
    for ps, flavors in (pinned or {}).items():
        out.setdefault(ps, {}).update(flavors)
    return out
