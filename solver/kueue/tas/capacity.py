"""Leaf free capacity and how many pods of a given shape fit in each leaf.

Capacity arrays are resource-major (``[resource, leaf]``) so one resource
of all leaves is a contiguous row. Integer floor division over 10,000
leaves is the most expensive step of a placement, and the greedy scheduler
asks again and again for the same few pod shapes while capacity changes in
a handful of leaves at a time, so :class:`FitCache` keeps each shape's leaf
counts and recomputes only the leaves touched since.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from placewise.models.cluster import PODS
from placewise.solver.kueue.tas.types import CAP, INT32_MAX, clip

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Demand:
    """A per-pod request as parallel tuples, resources in name order.

    Name order makes "first minimum" the alphabetical tie-break Kueue uses
    for the limiting resource. ``cols`` is -1 for a resource no node offers.
    """

    names: tuple[str, ...]
    cols: tuple[int, ...]
    vals: tuple[int, ...]


def demand(requests: Mapping[str, int], index: Mapping[str, int]) -> Demand:
    """Per-pod requests plus one ``pods``; negative values floor to zero and
    values beyond int64 saturate (a saturated request fits once in a
    saturated allocatable, as in Kueue)."""
    merged = {r: clip(max(0, v)) for r, v in requests.items()}
    merged[PODS] = merged.get(PODS, 0) + 1
    names = tuple(sorted(merged))
    return Demand(
        names=names,
        cols=tuple(index.get(r, -1) for r in names),
        vals=tuple(merged[r] for r in names),
    )


_CACHE_SHAPES = 64
"""Pod shapes remembered per flavor; beyond that the cache starts over."""
_LOG_LIMIT = 4096
"""Usage updates remembered for incremental refresh of cached counts."""


def fit_count(free: IntArray, d: Demand) -> IntArray:
    """``CountIn`` per column of ``free``: min over resources of floor(free/req).

    A zero request never limits; a resource no node has fits nowhere; the
    result is clamped to [0, INT32_MAX] as Kueue's int32 count is.
    """
    out = np.full(free.shape[1], INT32_MAX, dtype=np.int64)
    for col, val in zip(d.cols, d.vals, strict=True):
        if val <= 0:
            continue
        if col < 0:
            out[:] = 0
            break
        np.minimum(out, free[col] // val, out=out)
    np.maximum(out, 0, out=out)
    return out


Key = tuple[tuple[int, ...], tuple[int, ...]]


def _key(d: Demand) -> Key:
    return d.cols, d.vals


class FitCache:
    """Per-flavor leaf fit counts by pod shape, for current and base capacity.

    Counts on ``base`` (simulate-empty) never go stale. Counts on ``rem``
    carry the version they were computed at; :meth:`changed` logs the leaves
    each usage update touched, and a lookup recomputes just those.
    """

    def __init__(self) -> None:
        self._version = 0
        self._log: list[IntArray] = []
        self._log_start = 0
        self._live: dict[Key, tuple[int, IntArray]] = {}
        self._base: dict[Key, IntArray] = {}

    def changed(self, leaves: IntArray) -> None:
        self._log.append(leaves)
        self._version += 1
        if len(self._log) > _LOG_LIMIT:
            self._log.clear()
            self._log_start = self._version
            self._live.clear()

    def fit(self, free: IntArray, d: Demand, empty: bool) -> IntArray:
        """Read-only leaf counts of ``d`` on ``free`` (the tree's rem or base)."""
        key = _key(d)
        if empty:
            hit = self._base.get(key)
            if hit is None:
                hit = self._store(self._base, key, fit_count(free, d))
            return hit
        entry = self._live.get(key)
        if entry is not None and entry[0] == self._version:
            return entry[1]
        if entry is None or entry[0] < self._log_start:
            counts = fit_count(free, d)
        else:
            counts = entry[1].copy()
            pending = self._log[entry[0] - self._log_start :]
            rows = pending[0] if len(pending) == 1 else np.concatenate(pending)
            counts[rows] = fit_count(free[:, rows], d)
        counts.flags.writeable = False
        if len(self._live) >= _CACHE_SHAPES and key not in self._live:
            self._live.clear()
        self._live[key] = (self._version, counts)
        return counts

    @staticmethod
    def _store(table: dict[Key, IntArray], key: Key, counts: IntArray) -> IntArray:
        counts.flags.writeable = False
        if len(table) >= _CACHE_SHAPES:
            table.clear()
        table[key] = counts
        return counts


@dataclass(slots=True)
class Free:
    """The free capacity one placement sees.

    The flavor's ``rem`` (or ``base`` when simulating an empty cluster),
    minus the usage this call has already assumed for earlier groups in a
    few leaves (``rows``, ``assumed``), without copying the whole table.
    """

    table: IntArray
    cache: FitCache
    empty: bool
    rows: IntArray
    assumed: IntArray

    @property
    def n_leaves(self) -> int:
        return int(self.table.shape[1])

    def at(self, leaves: IntArray) -> IntArray:
        """``[resource, k]`` free capacity of the given leaves."""
        out = self.table[:, leaves]
        if self.rows.size:
            pos = np.searchsorted(self.rows, leaves)
            pos = np.minimum(pos, self.rows.size - 1)
            hit = self.rows[pos] == leaves
            if hit.any():
                out[:, hit] = np.clip(
                    out[:, hit] - self.assumed[:, pos[hit]], -CAP, CAP
                )
        return out

    def below(self, col: int, value: int) -> npt.NDArray[np.bool_]:
        """Leaves with less than ``value`` free of resource ``col``."""
        out: npt.NDArray[np.bool_] = np.less(self.table[col], value)
        if self.rows.size:
            out[self.rows] = self.at(self.rows)[col] < value
        return out

    def fit(self, d: Demand) -> IntArray:
        """Leaf counts of ``d`` (read-only)."""
        counts = self.cache.fit(self.table, d, self.empty)
        if not self.rows.size:
            return counts
        counts = counts.copy()
        counts[self.rows] = fit_count(self.at(self.rows), d)
        return counts


def free_view(
    table: IntArray,
    cache: FitCache,
    empty: bool,
    assumed: Sequence[tuple[int, Sequence[int]]],
) -> Free:
    """A :class:`Free` from (leaf, usage vector) pairs, summing duplicates."""
    if not assumed:
        empty_rows = np.zeros(0, dtype=np.int64)
        none = np.zeros((table.shape[0], 0), dtype=np.int64)
        return Free(table, cache, empty, empty_rows, none)
    merged: dict[int, list[int]] = {}
    for leaf, vec in assumed:
        acc = merged.get(leaf)
        merged[leaf] = (
            list(vec) if acc is None else [a + v for a, v in zip(acc, vec, strict=True)]
        )
    rows = np.asarray(sorted(merged), dtype=np.int64)
    usage = np.asarray(
        [[max(-CAP, min(CAP, v)) for v in merged[int(r)]] for r in rows], dtype=np.int64
    ).T
    return Free(table, cache, empty, rows, np.ascontiguousarray(usage))
