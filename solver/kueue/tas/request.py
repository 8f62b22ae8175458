"""Turn a pod set's topology request into the placer's parameters.

Kueue validates the request against the flavor's levels only at placement
time (``findTopologyAssignment``), so every check here yields the reason
string Kueue reports, in Kueue's order, instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from placewise.models.workload import SliceLayer, TopologyRequest
from placewise.solver.kueue.tas.tree import FlavorTree


@dataclass(frozen=True, slots=True)
class Params:
    """Everything the phases need to know about one (leader +) workers group."""

    count: int
    leader_count: int
    slice_size: int
    requested_level: int
    slice_level: int
    required: bool
    unconstrained: bool
    inner_sizes: Mapping[int, int]
    """Level -> slice size of an inner slice layer that applies there."""
    layers: tuple[SliceLayer, ...]
    """Every slice layer when there are several (for the multi-layer reason)."""

    @property
    def best_fit(self) -> bool:
        """TASProfileMixed: only unconstrained requests use LeastFreeCapacity."""
        return not self.unconstrained


def is_implied(topology: TopologyRequest) -> bool:
    """A pod set without any topology field gets the implied request."""
    return not topology.requests_tas


def interpret(
    tree: FlavorTree, topology: TopologyRequest, count: int, leader_count: int
) -> Params | str:
    """Resolve levels and slice sizes against the flavor, or say why not."""
    if topology.invalid:
        return topology.invalid
    layers = topology.slices
    slice_size = layers[0].size if layers else 1
    if slice_size <= 0:
        return "slice topology requested, but slice size not provided"
    slice_only = bool(layers) and not topology.required and not topology.preferred
    unconstrained = topology.unconstrained or is_implied(topology) or slice_only
    levels = tree.levels
    if topology.required:
        key = topology.required
    elif topology.preferred:
        key = topology.preferred
    elif slice_only:
        key = levels[0]
    else:  # unconstrained or implied
        key = levels[-1]
    if key not in levels:
        return f"no requested topology level: {key}"
    requested = levels.index(key)
    slice_key = layers[0].level if layers else levels[-1]
    if slice_key not in levels:
        return f"no requested topology level for slices: {slice_key}"
    slice_level = levels.index(slice_key)
    if requested > slice_level:
        return f"podset slice topology {slice_key} is above the podset topology {key}"

    inner: dict[int, int] = {}
    prev_size, prev_level = slice_size, slice_level
    for layer in layers[1:]:
        if layer.level not in levels:
            return (
                f"no requested topology level for additional slice layer: {layer.level}"
            )
        level = levels.index(layer.level)
        if level <= prev_level:
            return (
                f"additional slice layer topology {layer.level} must be at a lower "
                f"level than {levels[prev_level]}"
            )
        if layer.size <= 0 or prev_size % layer.size != 0:
            return (
                f"additional slice layer size {layer.size} must evenly divide "
                f"parent layer size {prev_size}"
            )
        for lvl in range(prev_level + 1, level + 1):
            inner[lvl] = layer.size
        prev_size, prev_level = layer.size, level

    return Params(
        count=count,
        leader_count=leader_count,
        slice_size=slice_size,
        requested_level=requested,
        slice_level=slice_level,
        required=bool(topology.required),
        unconstrained=unconstrained,
        inner_sizes=inner,
        layers=layers if inner else (),
    )
