"""Kueue's TAS failure reasons, word for word.

The greedy scheduler surfaces these as pending reasons, and users compare
them with what Kueue prints, so the wording follows ``notFitMessage`` and
``multiLayerNotFitMessage`` exactly, including the exclusion suffix.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from placewise.solver.kueue.tas.counts import Counts
from placewise.solver.kueue.tas.request import Params
from placewise.solver.kueue.tas.tree import FlavorTree, LeafFilter


@dataclass(frozen=True, slots=True)
class Exclusions:
    """Why leaves could not take a pod: filters, then the limiting resource."""

    filter: LeafFilter
    resources: Mapping[str, int]

    def suffix(self) -> str:
        f = self.filter
        parts = []
        if f.node_selector:
            parts.append(f"nodeSelector: {f.node_selector}")
        if f.affinity:
            parts.append(f"affinity: {f.affinity}")
        parts += [f"taint {_quote(t)}: {n}" for t, n in sorted(f.taints.items())]
        parts += [
            f"resource {_quote(r)}: {n}" for r, n in sorted(self.resources.items())
        ]
        if not parts:
            return ""
        return f". Total nodes: {f.total}; excluded: {', '.join(sorted(parts))}"


def _quote(text: str) -> str:
    """Go's %q for the plain ASCII names that appear here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def not_fit(
    tree: FlavorTree, fit: int, total: int, slice_size: int, stats: Exclusions
) -> str:
    unit = "pod" if slice_size == 1 else "slice"
    name = _quote(tree.topology_name)
    if fit == 0:
        head = f"topology {name} doesn't allow to fit any of {total} {unit}(s)"
    else:
        head = f"topology {name} allows to fit only {fit} out of {total} {unit}(s)"
    return head + stats.suffix()


def multi_layer_not_fit(
    tree: FlavorTree, counts: Counts, level: int, params: Params, stats: Exclusions
) -> str:
    """Slices per layer that the best domain of ``level`` could hold."""
    text = f"topology {_quote(tree.topology_name)} doesn't allow to fit"
    if tree.sizes[level] == 0:
        return text
    sc = counts.sc[level]
    top = int(sc.max())
    ids = tree.domain_ids(level)
    best = min((ids[d], d) for d in np.flatnonzero(sc == top).tolist())[1]
    for layer in params.layers:
        if layer.level not in tree.levels:
            continue
        target = tree.levels.index(layer.level)
        need = params.count // layer.size
        text += (
            f"; {_slices_below(tree, counts, level, best, target, layer.size)}/{need}"
            f" slice(s) fit on level {layer.level}"
        )
    return text + stats.suffix()


def _slices_below(
    tree: FlavorTree, counts: Counts, level: int, domain: int, target: int, size: int
) -> int:
    """``countSlicesInSubtree``: whole slices in each descendant on ``target``."""
    if target < level:
        return 0
    per = counts.pc[target] // size
    anc = np.arange(tree.sizes[target])
    for lvl in range(target, level, -1):
        anc = tree.parent[lvl][anc]
    return int(per[anc == domain].sum())
