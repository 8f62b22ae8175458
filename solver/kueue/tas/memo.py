"""Keys and cached lookups of the TAS placer's repeated questions.

A greedy run at 10,000 hosts asks the same few questions again and again:
the simulate-empty placement of the same request (the answer reads only
static capacity), and whether an assignment it already holds still fits
(its leaves do not change). :class:`~placewise.solver.kueue.tas.state.TasState`
keeps the answers; what they are keyed by is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise

import numpy as np

from placewise.models.workload import TopologyAssignment
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.tas.types import TasPodSetRequest

Groups = Sequence[Sequence[TasPodSetRequest]]

EMPTY_CACHE = 1024
"""Simulate-empty results remembered; beyond that the cache starts over."""

FIT_ROWS_CACHE = 4096
"""Assignments whose leaves ``TasState.fits`` remembers."""

RequestsKey = tuple[tuple[str, tuple[tuple[object, ...], ...]], ...]


def requests_key(requests: Mapping[str, Groups]) -> RequestsKey:
    """Everything a placement reads from its requests, hashable."""
    return tuple(
        (
            flavor,
            tuple(
                tuple(
                    (
                        r.name,
                        r.count,
                        tuple(sorted(r.requests.items())),
                        r.topology,
                        r.placement,
                    )
                    for r in group
                )
                for group in requests[flavor]
            ),
        )
        for flavor in sorted(requests)
    )


def leaf_needs(
    tree: FlavorTree, assignment: TopologyAssignment
) -> tuple[IntArray, IntArray] | None:
    """(leaves, pods on each) of an assignment; None if a domain is missing."""
    leaves: list[int] = []
    counts: list[int] = []
    for dom in assignment.domains:
        leaf = tree.leaf_of(dom.values)
        if leaf is None:
            return None
        leaves.append(leaf)
        counts.append(dom.count)
    if not leaves:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if (
        min(counts) > -(1 << 53)
        and max(counts) < 1 << 53
        and all(a < b for a, b in pairwise(leaves))
    ):
        # What the placer builds: one domain per leaf, in leaf order (the
        # counts as exact as the float sums below).
        return np.asarray(leaves, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    uniq, inverse = np.unique(np.asarray(leaves, dtype=np.int64), return_inverse=True)
    need = np.bincount(inverse, weights=counts).astype(np.int64)
    return uniq, need
