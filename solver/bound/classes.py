"""The configuration LP over host classes, built in arrays: a bound that fits
the budget at 10,000 hosts.

The full model's LP (:mod:`.lp`) has one column per pod set and candidate
domain: 610,000 cells at 10,000 hosts, which neither CP-SAT's Python
builder nor HiGHS gets through in a solve's budget.  Its LP relaxation does
not need them: with the required-domain Booleans relaxed, pod sets of one
*demand type* — the same unit shape, the same level and the same candidate
domains — are interchangeable, so their units per domain can be added up
into one column per (type, domain).  Every plan the validator accepts maps
to a point of the aggregated LP (sum its pod sets' units per domain), so
the LP's optimum is an upper bound; at 10,000 hosts it has ~2,000 demand
columns instead of 610,000.

What the LP keeps, per its rows:

* admission, flavors, quota on the cohort tree and who may preempt whom:
  the relaxed model's rows (:class:`~placewise.solver.cpsat.model.cpmodel.CPModel`
  in ``relaxed`` mode, exported), one home for those rules;
* supply: hosts of a class using each packing pattern (Gilmore-Gomory), or,
  on hosts where victims may leave, units per shape within the free
  capacity plus what the evicted victims give back;
* Hall rows per shape and domain, down to the deepest level any pod set
  constrains (the classes are already grouped that far and no further).

It drops what only tightens integer plans: which one domain a required
level picks, whole slices, StrictFIFO order (the validator does not judge
it).  Dropping rows only widens the LP, so the bound stays valid.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.search.export import export
from placewise.solver.highs import Arrays, FloatArray, IntArray
from placewise.solver.problem.data import ModelData
from placewise.solver.problem.layout import HostClass, Layout, linear_cap

Path = tuple[str, ...]
TOLERANCE = 1e-6
"""Relative slack before flooring: a simplex optimum a hair below an integer
must not lose that integer."""
UNBOUNDED_FREE = 1 << 61
"""Free capacity at or above this is unlimited: no capacity row."""


@dataclass(slots=True)
class _Block:
    """Columns and rows appended to the exported model, in COO form."""

    first: int
    """Index of the first new column."""
    col_hi: list[float] = field(default_factory=list)
    rows_lo: list[float] = field(default_factory=list)
    rows_hi: list[float] = field(default_factory=list)
    r: list[int] = field(default_factory=list)
    c: list[int] = field(default_factory=list)
    v: list[float] = field(default_factory=list)

    def column(self, hi: float) -> int:
        self.col_hi.append(hi)
        return self.first + len(self.col_hi) - 1

    def row(self, terms: list[tuple[float, int]], lo: float, hi: float) -> None:
        k = len(self.rows_lo)
        self.rows_lo.append(lo)
        self.rows_hi.append(hi)
        for coef, col in terms:
            self.r.append(k)
            self.c.append(col)
            self.v.append(coef)


@dataclass(slots=True)
class _Type:
    """Pod sets of one demand type: units of ``shape`` that must land in the
    ``region`` (the classes below their candidate domains)."""

    shape: int
    unit: int
    members: tuple[int, ...]
    """Specs."""
    region: npt.NDArray[np.bool_]
    """Per host class: inside the candidate domains."""


def _types(data: ModelData, layout: Layout) -> list[_Type]:
    """Specs grouped by demand type: shape, level, and what decides their
    candidate domains (a whole required domain must hold minCount)."""
    keyed: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for i, spec in enumerate(layout.specs):
        if not spec.domains:
            continue
        whole = spec.required is not None and spec.required == spec.depth
        need = data.pod_sets[spec.pod_set].min_count // spec.unit if whole else 0
        keyed[(spec.shape, spec.depth, need)].append(i)
    out = []
    for (shape, depth, _need), members in sorted(keyed.items()):
        domains = _domains(layout, members)
        flavor = layout.shapes[shape].flavor
        region = np.asarray(
            [
                shape in cls.shapes and cls.paths[flavor][: depth + 1] in domains
                for cls in layout.classes
            ],
            dtype=bool,
        )
        unit = layout.specs[members[0]].unit
        out.append(_Type(shape, unit, tuple(members), region))
    return out


def _domains(layout: Layout, members: list[int]) -> set[Path]:
    """The type's candidate domains: the same for every member by
    construction; their union otherwise (a relaxation, still valid)."""
    first = layout.specs[members[0]].domains
    if all(len(layout.specs[i].domains) == len(first) for i in members):
        return set(first)
    union: set[Path] = set()
    for i in members:
        union.update(layout.specs[i].domains)
    return union


def _pods_column(model: CPModel, pod_set: int, flavor: str) -> int | None:
    """The ``u`` variable: pods of ``pod_set`` admitted under ``flavor``."""
    for (_rg, f), u in model.vars.pod_sets[pod_set].u.items():
        if f == flavor:
            return int(u.index)
    return None


def _supply(
    model: CPModel, block: _Block, types: list[_Type]
) -> dict[int, list[tuple[tuple[bool, ...], list[tuple[float, int]]]]]:
    """Per shape: (membership in each type's region, slot terms) of every
    group of host classes.  Classes are merged across domains when they
    hold the same capacity and sit in the same regions — the rows below
    see no finer than that."""
    data = model.data
    layout = model.problem.layout
    victims = [int(x.index) for x in model.vars.victims]
    memo: dict[tuple[object, ...], dict[int, int]] = {}

    def caps(cls: HostClass) -> dict[int, int]:
        """Per shape, linear_cap: once per distinct (free, releasable)."""
        back = layout.released.get(cls.leaves[0], {})
        key = (tuple(sorted(cls.free.items())), tuple(sorted(back.items())))
        if key not in memo:
            memo[key] = {s: linear_cap(data, layout, cls, s) for s in cls.shapes}
        return memo[key]

    groups: dict[tuple[object, ...], list[int]] = defaultdict(list)
    within: dict[tuple[object, ...], tuple[bool, ...]] = {}
    for c, cls in enumerate(layout.classes):
        inside = tuple(bool(t.region[c]) for t in types)
        key: tuple[object, ...] = (
            cls.linear,
            tuple(sorted(cls.free.items())),
            cls.shapes,
            inside,
        )
        groups[key].append(c)
        within[key] = inside
    out: dict[int, list[tuple[tuple[bool, ...], list[tuple[float, int]]]]] = (
        defaultdict(list)
    )
    for key, members in sorted(groups.items(), key=lambda kv: kv[1][0]):
        inside = within[key]
        first = layout.classes[members[0]]
        hosts = sum(len(layout.classes[c].leaves) for c in members)
        per_shape: dict[int, list[tuple[float, int]]] = defaultdict(list)
        if first.linear:
            rows: dict[str, list[tuple[float, int]]] = defaultdict(list)
            each = [caps(layout.classes[c]) for c in members]
            for s in first.shapes:
                cap = sum(max(got[s], 0) for got in each)
                if cap <= 0:
                    continue
                col = block.column(float(cap))
                per_shape[s].append((1.0, col))
                for r, q in layout.shapes[s].request:
                    rows[r].append((float(q), col))
            back: dict[tuple[int, str], int] = defaultdict(int)
            for c in members:
                for vi, usage in layout.victims_on.get(layout.classes[c].leaves[0], []):
                    for r, q in usage.items():
                        if q and r in rows:
                            back[(vi, r)] += q
            for (vi, r), q in sorted(back.items()):
                rows[r].append((-float(q), victims[vi]))
            for r, terms in sorted(rows.items()):
                free = first.free.get(r, 0)
                if free >= UNBOUNDED_FREE:
                    continue
                # A leaf over its allocatable takes pods only if releases
                # cover the excess too: within max(free, 0) is a relaxation.
                block.row(terms, -np.inf, float(max(free, 0) * hosts))
        else:
            ys = [block.column(float(hosts)) for _ in first.patterns]
            if ys:
                block.row([(1.0, y) for y in ys], -np.inf, float(hosts))
            for i, s in enumerate(first.shapes):
                for p, y in zip(first.patterns, ys, strict=True):
                    if p[i] > 0:
                        per_shape[s].append((float(p[i]), y))
        for s, terms in per_shape.items():
            out[s].append((inside, terms))
    return out


def placement_block(model: CPModel, first: int) -> _Block:
    """Demand, supply and Hall rows of the placement, and the capacity rows
    of hosts where victims may leave, as columns from ``first`` on."""
    data = model.data
    layout = model.problem.layout
    block = _Block(first)
    types = _types(data, layout)
    xs = []
    for t in types:
        x = block.column(np.inf)
        xs.append(x)
        pods: list[tuple[float, int]] = []
        for i in t.members:
            spec = layout.specs[i]
            u = _pods_column(model, spec.pod_set, spec.flavor)
            if u is not None:
                pods.append((-1.0, u))
        # unit * (units of the type) == pods admitted under the flavor
        block.row([(float(t.unit), x), *pods], 0.0, 0.0)
    for spec in layout.specs:
        u = _pods_column(model, spec.pod_set, spec.flavor)
        if not spec.domains and u is not None:
            block.row([(1.0, u)], 0.0, 0.0)  # no domain holds a unit of it
    supply = _supply(model, block, types)
    for s in sorted({t.shape for t in types}):
        mine = [k for k, t in enumerate(types) if t.shape == s]
        # One row per distinct region (a type standing for it), and one for
        # every class: units whose region lies inside it need its slots —
        # Hall's condition, valid for any set of leaves.
        rows: dict[bytes, int] = {}
        for j in mine:
            rows.setdefault(types[j].region.tobytes(), j)
        for k in [*rows.values(), None]:
            inner = [
                xs[j]
                for j in mine
                if k is None or not (types[j].region & ~types[k].region).any()
            ]
            have = [
                (-c, col)
                for inside, terms in supply.get(s, [])
                if k is None or inside[k]
                for c, col in terms
            ]
            block.row([(1.0, x) for x in inner] + have, -np.inf, 0.0)
    return block


def class_lp(model: CPModel) -> Arrays:
    """The relaxed model's rows plus the aggregated placement, no objective
    (the caller sets ``cost``).  ``model`` is built in ``classes`` mode:
    every rule but the placement's."""
    base = export(model.model, [])
    n = base.cost.size
    block = placement_block(model, n)
    added = len(block.col_hi)
    r = np.asarray(block.r, dtype=np.int64)
    order = np.argsort(r, kind="stable")
    counts = np.bincount(r, minlength=len(block.rows_lo))
    starts = base.start[-1] + np.concatenate(([0], np.cumsum(counts)))
    arrays = Arrays(
        cost=np.zeros(n + added),
        offset=0.0,
        col_lo=np.concatenate((base.col_lo, np.zeros(added))),
        col_hi=np.concatenate((base.col_hi, np.asarray(block.col_hi))),
        row_lo=np.concatenate((base.row_lo, np.asarray(block.rows_lo))),
        row_hi=np.concatenate((base.row_hi, np.asarray(block.rows_hi))),
        start=np.concatenate((base.start, starts[1:])).astype(np.int64),
        index=np.concatenate((base.index, np.asarray(block.c, dtype=np.int64)[order])),
        value=np.concatenate((base.value, np.asarray(block.v)[order])),
        integer=np.zeros(n + added, dtype=bool),
    )
    return _scaled(arrays)


def _scaled(arrays: Arrays) -> Arrays:
    """Every row divided by its largest coefficient: the same LP, but rows in
    bytes (memory) or millicores beside rows in GPUs left HiGHS's simplex
    ten times slower (coefficients up to 3e12 at 10,000 hosts)."""
    rows = np.repeat(np.arange(arrays.row_lo.size), np.diff(arrays.start))
    peak = np.zeros(arrays.row_lo.size)
    np.maximum.at(peak, rows, np.abs(arrays.value))
    peak[peak == 0] = 1.0
    return replace(
        arrays,
        value=arrays.value / peak[rows],
        row_lo=arrays.row_lo / peak,
        row_hi=arrays.row_hi / peak,
    )


def gpu_terms(stage: Stage) -> tuple[IntArray, FloatArray]:
    """(columns, coefficients) of a stage's GPU terms (admitted minus
    preempted), without the weights and prices of its objective."""
    cols = np.asarray([x.index for _c, x in stage.gpus], dtype=np.int64)
    coefs = np.asarray([float(c) for c, _x in stage.gpus])
    # A workload's pod sets share its admit variable: one entry per column
    # (HiGHS loops on a row that names a column twice).
    unique, where = np.unique(cols, return_inverse=True)
    summed = np.zeros(unique.size)
    np.add.at(summed, where, coefs)
    return unique, summed


def with_objective(arrays: Arrays, stage: Stage) -> Arrays:
    """``arrays`` maximising the stage's GPUs."""
    cost = np.zeros_like(arrays.cost)
    cols, coefs = gpu_terms(stage)
    np.add.at(cost, cols, coefs)
    return replace(arrays, cost=cost)


def floor_bound(x: float) -> int:
    """An LP optimum on whole GPUs, floored (with :data:`TOLERANCE`)."""
    return math.floor(x + TOLERANCE * max(1.0, abs(x)))
