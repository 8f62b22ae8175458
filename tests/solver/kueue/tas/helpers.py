"""Builders for small TAS snapshots, straight from the domain model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from placewise.models.cluster import HOSTNAME_LABEL, Node, ResourceFlavor, Topology
from placewise.models.scheduling import PodPlacement, Taint, Toleration
from placewise.models.snapshot import Objects, Snapshot
from placewise.models.workload import SliceLayer, TopologyAssignment, TopologyRequest
from placewise.solver.kueue.tas import TasPodSetRequest, TasState

BLOCK, RACK, HOST = "block", "rack", HOSTNAME_LABEL
LEVELS3 = (BLOCK, RACK, HOST)


def node(
    name: str,
    path: Sequence[str],
    levels: Sequence[str] = LEVELS3,
    cpu: int = 1000,
    pods: int = 110,
    taints: Sequence[Taint] = (),
    labels: Mapping[str, str] | None = None,
    **extra: int,
) -> Node:
    """A Ready node; ``path`` gives its value per level (hostname included)."""
    lab = dict(zip(levels, path, strict=True))
    lab.update(labels or {})
    alloc = {"cpu": cpu, "pods": pods, **extra}
    return Node(name=name, labels=lab, allocatable=alloc, taints=tuple(taints))


def snapshot(
    nodes: Sequence[Node],
    levels: Sequence[str] = LEVELS3,
    flavors: Sequence[ResourceFlavor] | None = None,
) -> Snapshot:
    topo = Topology(name="default", levels=tuple(levels))
    rfs = flavors or [ResourceFlavor(name="tas", topology_name="default")]
    return Snapshot(
        Objects(
            flavors={f.name: f for f in rfs},
            topologies={"default": topo},
            nodes={n.name: n for n in nodes},
        )
    )


def request(
    count: int,
    cpu: int = 1000,
    name: str = "main",
    required: str | None = None,
    preferred: str | None = None,
    unconstrained: bool = False,
    slices: Sequence[tuple[str, int]] = (),
    selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Toleration] = (),
    **extra: int,
) -> TasPodSetRequest:
    topo = TopologyRequest(
        required=required,
        preferred=preferred,
        unconstrained=unconstrained,
        slices=tuple(SliceLayer(level=lvl, size=s) for lvl, s in slices),
    )
    placement = PodPlacement(
        node_selector=tuple(sorted((selector or {}).items())),
        tolerations=tuple(tolerations),
    )
    return TasPodSetRequest(
        name=name,
        count=count,
        requests={"cpu": cpu, **extra},
        topology=topo,
        placement=placement,
    )


def counts(ta: TopologyAssignment) -> dict[str, int]:
    """Last value of each domain (the hostname, or leaf) -> pods."""
    return {d.values[-1]: d.count for d in ta.domains}


def place(
    state: TasState, *reqs: TasPodSetRequest, flavor: str = "tas", empty: bool = False
) -> dict[str, TopologyAssignment]:
    res = state.find_assignments(flavor, [[r] for r in reqs], empty=empty)
    assert res.assignments is not None, res.reason
    return res.assignments
