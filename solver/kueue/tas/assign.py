"""Placement of one pod-set group (workers, optionally with a leader)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from placewise.models.scheduling import Toleration
from placewise.models.workload import TopologyAssignment, TopologyDomain
from placewise.solver.kueue.tas.balanced import balanced_placement
from placewise.solver.kueue.tas.capacity import Demand, Free
from placewise.solver.kueue.tas.counts import fill_counts, resource_exclusions
from placewise.solver.kueue.tas.distribute import Taken
from placewise.solver.kueue.tas.messages import Exclusions, multi_layer_not_fit, not_fit
from placewise.solver.kueue.tas.placement import descend, find_level
from placewise.solver.kueue.tas.request import interpret
from placewise.solver.kueue.tas.tree import FlavorTree
from placewise.solver.kueue.tas.types import TasPodSetRequest

_DOMAINS_KEPT = 1 << 16
"""Leaf domains remembered per tree (a few MB at most)."""


def assign_group(
    tree: FlavorTree,
    free: Free,
    workers: TasPodSetRequest,
    leader: TasPodSetRequest | None,
    extra_tolerations: tuple[Toleration, ...],
    demand_of: Callable[[Mapping[str, int]], Demand],
    quiet: bool = False,
    balanced: bool = False,
) -> dict[str, TopologyAssignment] | str:
    """Kueue's ``findTopologyAssignment`` for one group on capacity ``free``.

    Algorithm overview:
      0. Interpret the request: requested level (required / preferred /
         unconstrained / implied / slice-only), slice level and size, inner
         slice layers; the algorithm is BestFit unless unconstrained
         (LeastFreeCapacity).
      1. Bottom-up capacity: per leaf the pods (and leader) that fit in the
         free capacity, leaves failing taints/selector/affinity zeroed on
         hostname topologies; summed up the levels into pod, slice and
         with-leader counters.
      2a. Level choice: the tightest single domain at the requested level,
         climbing one level at a time for ``preferred``, else a greedy
         spread over several domains at the top (or unconstrained) level.
      2b. Descent: distribute the pods down to the leaves, pooled above the
         slice level, parent by parent from it.
      3. Build the assignments: leaves with pods, in value-path order; the
         leader's leaf separately.

    ``balanced`` (Kueue's TASBalancedPlacement gate) tries an even spread
    (:mod:`.balanced`) before phases 2a and 2b, which stay the fallback.

    Returns the assignments per pod set name, or Kueue's failure reason.
    """
    # Phase 0: request interpretation.
    params = interpret(
        tree, workers.topology, workers.count, 1 if leader is not None else 0
    )
    if isinstance(params, str):
        return params
    worker_demand = demand_of(workers.requests)
    leader_demand = demand_of(leader.requests) if leader is not None else None
    tolerations = workers.placement.tolerations + tree.tolerations + extra_tolerations

    # Phase 1: bottom-up capacity.
    leaf_filter = tree.leaf_filter(workers.placement, tolerations)
    counts = fill_counts(
        tree, free, worker_demand, leader_demand, leaf_filter.mask, params
    )

    def fail(level: int, fit: int, total: int) -> str:
        if quiet:
            return "does not fit"
        leaf_pc = counts.pc[tree.depth - 1]
        stats = Exclusions(
            leaf_filter,
            resource_exclusions(free, worker_demand, leaf_filter.mask, leaf_pc),
        )
        if params.layers:
            return multi_layer_not_fit(tree, counts, level, params, stats)
        return not_fit(tree, fit, total, params.slice_size, stats)

    if balanced:
        even = balanced_placement(tree, counts, params)
        if even is not None:
            return _assignments(tree, workers, leader, even)

    # Phase 2a: choose the level and the domains there.
    found = find_level(tree, counts, params, params.requested_level, fail)
    if isinstance(found, str):
        return found
    level, fit = found

    # Phase 2b: distribute down to the leaves.
    taken = descend(tree, counts, params, level, fit)
    if taken is None:
        # Kueue only logs "code assumptions violated" here and goes on with an
        # empty assignment; a failure is the honest answer.
        return (
            f'topology "{tree.topology_name}" could not distribute '
            f"{params.count} pod(s) below level {tree.levels[level]}"
        )

    return _assignments(tree, workers, leader, taken)


def _assignments(
    tree: FlavorTree,
    workers: TasPodSetRequest,
    leader: TasPodSetRequest | None,
    taken: Taken,
) -> dict[str, TopologyAssignment]:
    """Phase 3: build the assignments."""
    out: dict[str, TopologyAssignment] = {}
    if leader is not None:
        out[leader.name] = _build(tree, taken.idx, taken.leaders)
    out[workers.name] = _build(tree, taken.idx, taken.pods)
    return out


def _build(tree: FlavorTree, leaves: list[int], pods: list[int]) -> TopologyAssignment:
    """Leaves with pods in value-path order, as ``buildAssignment`` emits them."""
    # Values are known-good, so skip pydantic validation (hot path); the
    # models are frozen, so a leaf's domain with a given count is shared.
    known = tree.domains
    domains = []
    for leaf, count in sorted(zip(leaves, pods, strict=True)):
        if count > 0:
            dom = known.get((leaf, count))
            if dom is None:
                if len(known) >= _DOMAINS_KEPT:
                    known.clear()
                dom = known[(leaf, count)] = TopologyDomain.model_construct(
                    values=tree.leaf_values(leaf), count=count
                )
            domains.append(dom)
    return TopologyAssignment.model_construct(
        levels=tree.assignment_levels, domains=tuple(domains)
    )
