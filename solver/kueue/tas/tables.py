"""The TAS capacity tables' usage accounting: prepared usages in and out.

Split from :mod:`.state` (which places pods on the tables): every change of
a table goes through :meth:`UsageTables.move_rows`, which keeps each
flavor's ``rem`` (base minus usage) up to date, so a placement only reads
it, and bumps the version that placements are remembered by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from placewise.models.cluster import PODS
from placewise.models.workload import TopologyAssignment
from placewise.solver.kueue.tas.tree import FlavorTree, IntArray
from placewise.solver.kueue.tas.types import CAP, clip


@dataclass(frozen=True, slots=True)
class Prepared:
    """A usage ready to add to or remove from the capacity tables."""

    owner: FlavorTree | None
    """The flavor tree whose own usage table it touches; None: the shared
    per-host table of hostname-level flavors."""
    keys: IntArray
    delta: IntArray
    """[domain, resource] usage (per pod x count, plus pods)."""
    unique: bool = True
    """No key repeats (then a plain fancy-index add is exact)."""
    big: bool = False
    """Some delta is large enough that sums need saturating."""


_BIG = 1 << 40
"""Deltas below this cannot push sums near CAP in any realistic number of
updates, so their tables skip saturation."""
_PLAIN = 1 << 60
"""A base capacity below this minus such sums stays within +-CAP."""


def _clamp(a: IntArray) -> IntArray:
    """In-place saturation to +-CAP (np.clip costs more on small arrays)."""
    np.maximum(a, -CAP, out=a)
    np.minimum(a, CAP, out=a)
    return a


def plain_flavors(trees: Mapping[str, FlavorTree]) -> set[str]:
    """The flavors whose every base capacity is below ``_PLAIN``."""
    return {
        name
        for name, tree in trees.items()
        if not tree.base.size or int(np.abs(tree.base).max()) < _PLAIN
    }


class UsageTables:
    """Usage accounting of :class:`~.state.TasState` (its tables are set up
    there)."""

    resources: tuple[str, ...]
    resource_index: dict[str, int]
    _trees: dict[str, FlavorTree]
    _host_index: dict[str, int]
    _host_usage: IntArray
    _host_leaf: dict[str, IntArray]
    _host_identity: set[str]
    _plain: set[str]
    _all_plain: bool
    _saturated: bool
    _version: int
    _built: dict[int, tuple[str, TopologyAssignment, dict[str, int], Prepared]]

    def _vector(self, per_pod: Mapping[str, int]) -> list[int]:
        """Per-pod usage over the resource table, with one ``pods``."""
        vec = [0] * len(self.resources)
        for r, v in per_pod.items():
            i = self.resource_index.get(r)
            if i is not None:
                vec[i] = clip(max(0, v))
        vec[self.resource_index[PODS]] += 1
        return vec

    def add_usage(
        self, flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
    ) -> None:
        self.apply([self.prepare(flavor, assignment, per_pod)], 1)

    def remove_usage(
        self, flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
    ) -> None:
        self.apply([self.prepare(flavor, assignment, per_pod)], -1)

    def prepare(
        self, flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
    ) -> Prepared:
        """Precompute one usage's table rows and deltas (it is moved often)."""
        tree = self._trees[flavor]
        keys: list[int] = []
        counts: list[int] = []
        for dom in assignment.domains:
            if tree.hostname:
                key = self._host_index.get(dom.values[-1]) if dom.values else None
            else:
                key = tree.leaf_of(dom.values)
            if key is not None:
                keys.append(key)
                counts.append(dom.count)
        vec = self._vector(per_pod)
        owner = None if tree.hostname else tree
        top = max(vec, default=0) * max(counts, default=0)
        if counts and min(counts) >= 0 and top < _BIG:
            # The common case: no product saturates or is large (vec is
            # never negative), so one outer product is the same table.
            return Prepared(
                owner,
                np.asarray(keys, dtype=np.int64),
                np.outer(
                    np.asarray(counts, dtype=np.int64), np.asarray(vec, dtype=np.int64)
                ),
                unique=len(set(keys)) == len(keys),
            )
        delta = np.asarray(
            [[clip(v * c) for v in vec] for c in counts], dtype=np.int64
        ).reshape(len(counts), len(vec))
        return Prepared(
            owner,
            np.asarray(keys, dtype=np.int64),
            delta,
            unique=len(set(keys)) == len(keys),
            big=bool(delta.size) and int(np.abs(delta).max()) >= _BIG,
        )

    def built_rows(
        self, flavor: str, assignment: TopologyAssignment, per_pod: Mapping[str, int]
    ) -> Prepared | None:
        """The rows :meth:`build` prepared for exactly this usage, if it did
        (the same :meth:`prepare` call: its answer, not a second one)."""
        hit = self._built.get(id(assignment))
        if hit is None or hit[1] is not assignment:
            return None
        flavor_was, _, per_pod_was, rows = hit
        return rows if flavor_was == flavor and per_pod_was == per_pod else None

    def forget_built(self) -> None:
        self._built.clear()

    def apply(self, items: Sequence[Prepared], sign: int) -> None:
        """Add (1) or remove (-1) prepared usages, one table update per table.

        A preemption search moves many workloads in and out of the
        simulation; one numpy update per touched table instead of one per
        workload is what keeps it fast on 10,000 nodes.
        """
        groups: dict[int, list[Prepared]] = {}
        for item in items:
            if len(item.keys):
                groups.setdefault(
                    -1 if item.owner is None else id(item.owner), []
                ).append(item)
        for group in groups.values():
            big = any(g.big for g in group)
            if len(group) == 1 and group[0].unique:
                # The common single-workload move: no repeated keys.
                self.move_rows(group[0].owner, group[0].keys, group[0].delta, sign, big)
            else:
                self.move_rows(
                    group[0].owner,
                    np.concatenate([g.keys for g in group]),
                    np.concatenate([g.delta for g in group]),
                    sign,
                    big,
                    unique=False,
                )

    def move_rows(
        self,
        owner: FlavorTree | None,
        keys: IntArray,
        delta: IntArray,
        sign: int,
        big: bool,
        unique: bool = True,
    ) -> None:
        """One table update: ``delta`` rows (per key, ``[key, resource]``) of
        prepared usages that share ``owner``, concatenated by the caller.

        Public so that a caller moving the same runs of usages again and
        again (the preemption walk) concatenates them once, not per move.
        ``unique``: no key repeats (a plain fancy-index add is then exact).
        """
        self._version += 1
        usage = self._host_usage if owner is None else owner.usage
        if unique:
            rows = keys
            if sign > 0:
                usage[:, rows] += delta.T
            else:
                usage[:, rows] -= delta.T
            if self._all_plain and not big and not self._saturated:
                self._shift(owner, rows, delta.T if sign < 0 else -delta.T)
                return
        else:
            np.add.at(usage.T, keys, delta if sign > 0 else -delta)
            rows = np.unique(keys)
        if big:
            usage[:, rows] = _clamp(usage[:, rows])
            self._saturated = True
        self._refresh(owner, rows, usage)

    def _rem(self, tree: FlavorTree, base: IntArray, used: IntArray) -> IntArray:
        """``base - used`` for ``tree``'s rows, saturated when it may need it."""
        out = base - used
        if tree.name not in self._plain or self._saturated:
            out = _clamp(out)
        return out

    def update_many(
        self,
        items: Sequence[tuple[str, TopologyAssignment, Mapping[str, int]]],
        sign: int,
    ) -> None:
        """:meth:`apply` for unprepared usages."""
        self.apply([self.prepare(f, a, p) for f, a, p in items], sign)

    def _shift(
        self, owner: FlavorTree | None, rows: IntArray, change: IntArray
    ) -> None:
        """:meth:`_refresh` by adding ``change`` (``[resource, row]``, minus the
        usage change) to ``rem``: while every base is plain and nothing
        saturated, ``rem`` is exactly ``base - usage`` (see ``_saturated``),
        so this is the same table."""
        trees: list[tuple[FlavorTree, IntArray, IntArray]] = []
        if owner is not None:
            trees.append((owner, rows, change))
        else:
            for name, table in self._host_leaf.items():
                t = self._trees[name]
                if name in self._host_identity:
                    trees.append((t, rows, change))
                    continue
                leaves = table[rows]
                hit = leaves >= 0
                if hit.any():
                    trees.append((t, leaves[hit], change[:, hit]))
        for t, sel, d in trees:
            t.rem[:, sel] += d
            t.fit_cache.changed(sel)

    def _refresh(
        self, tree: FlavorTree | None, rows: IntArray, usage: IntArray
    ) -> None:
        """Recompute remaining capacity of the touched leaves (hosts)."""
        if tree is not None:
            tree.rem[:, rows] = self._rem(tree, tree.base[:, rows], usage[:, rows])
            tree.fit_cache.changed(rows)
            return
        for name, table in self._host_leaf.items():
            t = self._trees[name]
            if name in self._host_identity:
                # Leaf i is host i (one hostname flavor over every host).
                t.rem[:, rows] = self._rem(t, t.base[:, rows], usage[:, rows])
                t.fit_cache.changed(rows)
                continue
            leaves = table[rows]
            hit = leaves >= 0
            if not hit.any():
                continue
            sel, used = leaves[hit], usage[:, rows[hit]]
            t.rem[:, sel] = self._rem(t, t.base[:, sel], used)
            t.fit_cache.changed(sel)
