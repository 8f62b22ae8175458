"""What the baselines decide and keep: flavor choices, placements, partial
gangs, and the per-flavor arrays their placers score with.

:class:`placewise.solver.baselines.common.BaselineScheduler` makes them;
the placers (``kube_default``, ``binpack_gang``) read and fill them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from placewise.models.plan import Plan
from placewise.models.workload import PodSet, TopologyAssignment
from placewise.solver.kueue.quota import FR
from placewise.solver.kueue.tas import FlavorTree

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class FlavorChoice:
    """One flavor per resource group, and what the workload costs in quota."""

    flavors: Mapping[int, str]
    """resource group index -> flavor."""
    counts: tuple[int, ...]
    """Pods per pod set that quota admits (partial admission may lower them)."""
    usage: Mapping[FR, int]
    borrows: bool


@dataclass(slots=True)
class PodSetPlacement:
    """Where the pods of one pod set went (``count`` may be short of asked)."""

    name: str
    count: int
    asked: int
    flavor: str | None
    """The TAS flavor, or None for a pod set that is not topology-placed."""
    topology: TopologyAssignment | None = None
    leaf_pods: dict[int, int] = field(default_factory=dict)
    per_pod: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Placement:
    """A workload's placement attempt: complete, or why not."""

    pod_sets: list[PodSetPlacement]
    failure: str | None = None
    """Why the placement cannot be admitted as it stands (None when it can)."""

    @property
    def complete(self) -> bool:
        return self.failure is None


@dataclass(frozen=True, slots=True)
class PartialGang:
    """A quota-admitted workload whose pods only partly found nodes."""

    workload: str
    pods_placed: int
    pods_total: int
    accelerators_held: int
    nodes: Mapping[str, Mapping[str, int]]
    """node (leaf) name -> resources its placed pods hold there."""


@dataclass(slots=True)
class BaselineOutcome:
    """The plan plus what a plan cannot say (pods that hold nodes unadmitted)."""

    plan: Plan
    partial: list[PartialGang] = field(default_factory=list)


@dataclass(slots=True)
class FlavorIndex:
    """Static per-flavor arrays the placers score with, built once per run."""

    tree: FlavorTree
    alloc: IntArray
    """[resource, leaf] allocatable (before any pod), for utilisation scores."""
    domain_of: list[IntArray]
    """Per level, the domain index of every leaf."""


class GroupDomains:
    """The required-level domain each ``podSetGroupName`` group is bound to.

    Kueue places a leader/worker group in one domain of its required level;
    the group's first placed pod set fixes it for the others.
    """

    def __init__(self) -> None:
        self._fixed: dict[str, tuple[int, int]] = {}

    def get(self, ps: PodSet) -> tuple[int, int] | None:
        """(level index, domain index) fixed for ``ps``'s group, if any."""
        return self._fixed.get(ps.topology.group) if ps.topology.group else None

    def note(self, ps: PodSet, fi: FlavorIndex, leaf_pods: Mapping[int, int]) -> None:
        group, level = ps.topology.group, ps.topology.required
        if not group or level not in fi.tree.levels or not leaf_pods:
            return
        k = fi.tree.levels.index(level or "")
        first = next(iter(leaf_pods))
        self._fixed.setdefault(group, (k, int(fi.domain_of[k][first])))


@dataclass(slots=True)
class PodSetStart:
    """One pod set about to be placed: its record and what its placer needs."""

    ps: PodSet
    placed: PodSetPlacement
    fi: FlavorIndex | None = None
    vec: IntArray | None = None
    problem: str | None = None
    """Why its TAS flavor cannot hold it at all (``fi``/``vec`` are None)."""
