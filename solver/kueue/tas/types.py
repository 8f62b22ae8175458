"""Request and result records of the TAS placer, plus its integer limits.

They are plain frozen dataclasses rather than pydantic models because the
greedy scheduler builds thousands of them per run and never serialises them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placewise.models.scheduling import PodPlacement
from placewise.models.workload import TopologyAssignment, TopologyRequest

INT32_MAX = 2**31 - 1
"""Kueue counts pods in int32 and clamps a leaf's fit count here."""

CAP = 1 << 61
"""Resource amounts are clipped to +-CAP so int64 sums of a few never wrap.

A quantity at CAP behaves as unlimited: no real request or usage comes near
it, and base - usage - assumed stays below 2**63.
"""


def clip(value: int) -> int:
    """Saturate an exact Python integer into the int64-safe range."""
    return -CAP if value < -CAP else CAP if value > CAP else value


@dataclass(frozen=True, slots=True)
class TasPodSetRequest:
    """One pod set to place in one TAS flavor.

    ``requests`` excludes ``pods``: the placer adds one ``pods`` per pod, as
    Kueue adds ``OnePodRequest`` to the pod spec's requests.
    """

    name: str
    count: int
    requests: Mapping[str, int]
    topology: TopologyRequest
    placement: PodPlacement


@dataclass(frozen=True, slots=True)
class TasResult:
    """Assignments per pod set name, or why the first failing group failed."""

    assignments: dict[str, TopologyAssignment] | None
    reason: str | None
    failed_pod_set: str | None

    @property
    def ok(self) -> bool:
        return self.assignments is not None
