"""TAS placement in the aggregated model (see :mod:`placewise.solver.problem.layout`).

Variables: ``Y{c}_{k}`` hosts of class c using pattern k (``Y{c}_e`` left
empty), ``V{leaf}_{s}`` units of shape s on a linear leaf, ``X{spec}_{d}``
units of a pod set in a domain at its own level, ``Z{group}_{f}_{d}`` the
required domain, ``K...`` whole slices, ``Q...`` preferred domains used.
Every constraint is linear without enforcement literals, so the model's
LP relaxation is exactly the configuration LP the bound solves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.cpsat.model.foreign import ForeignRoom
from placewise.solver.cpsat.model.variables import Derive
from placewise.solver.problem.data import ModelData
from placewise.solver.problem.layout import (
    HostClass,
    Layout,
    Spec,
    leaf_units,
    linear_cap,
)

LinearTerms = list[tuple[int, cp_model.IntVar]]


def _prefixes(path: tuple[str, ...]) -> list[tuple[str, ...]]:
    return [path[:i] for i in range(len(path) + 1)]


@dataclass(slots=True)
class Placement:
    model: cp_model.CpModel
    data: ModelData
    layout: Layout
    victims: list[cp_model.IntVar]
    derive: Callable[[cp_model.IntVar, Derive], None]
    """Registers how an auxiliary variable follows from the decisions."""
    flavor_units: dict[tuple[int, str], cp_model.IntVar]
    """(pod set, TAS flavor) -> pods admitted under that flavor (``u`` var)."""
    flavor_chosen: dict[tuple[int, str], cp_model.IntVar]
    """(pod set, TAS flavor) -> the flavor-choice Boolean of its group."""
    y: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    empty: dict[int, cp_model.IntVar] = field(default_factory=dict)
    v: dict[tuple[int, int], cp_model.IntVar] = field(default_factory=dict)
    """(class index of a linear leaf, shape) -> units there."""
    x: dict[tuple[int, tuple[str, ...]], cp_model.IntVar] = field(default_factory=dict)
    """(spec, domain path at the spec's level) -> units."""
    z: dict[tuple[str, int, str, tuple[str, ...]], cp_model.IntVar] = field(
        default_factory=dict
    )
    """(group, workload, flavor, required-level path) -> chosen."""
    preferred: dict[tuple[int, tuple[str, ...]], cp_model.IntVar] = field(
        default_factory=dict
    )
    """(spec, preferred-level path) -> any units there."""
    slices: dict[tuple[int, tuple[str, ...]], cp_model.IntVar] = field(
        default_factory=dict
    )
    by_spec: dict[int, list[tuple[tuple[str, ...], cp_model.IntVar]]] = field(
        default_factory=dict
    )
    """spec -> its (domain path, units) variables."""
    foreign: ForeignRoom = field(default_factory=ForeignRoom)
    """:mod:`.foreign`'s variables, once the constraints add that family."""

    def build(self) -> None:
        self._classes()
        self._domains()
        self._hall()
        self._linear_capacity()
        self._required()
        self._slices()
        self._preferred()

    # -- supply ----------------------------------------------------------------

    def _classes(self) -> None:
        for cls in self.layout.classes:
            m = len(cls.leaves)
            if cls.linear:
                for s in cls.shapes:
                    cap = self._linear_units(cls, s)
                    if cap > 0:
                        self.v[(cls.idx, s)] = self.model.new_int_var(
                            0, cap, f"V{cls.idx}_{s}"
                        )
                continue
            ys = []
            for k in range(len(cls.patterns)):
                y = self.model.new_int_var(0, m, f"Y{cls.idx}_{k}")
                self.y[(cls.idx, k)] = y
                ys.append(y)
            e = self.model.new_int_var(0, m, f"Y{cls.idx}_e")
            self.empty[cls.idx] = e
            self.model.add(sum(ys) + e == m)

    def _linear_units(self, cls: HostClass, s: int) -> int:
        return linear_cap(self.data, self.layout, cls, s)

    def supply(self, cls: HostClass, s: int) -> LinearTerms:
        """Slots of shape ``s`` the class provides, as linear terms."""
        if cls.linear:
            var = self.v.get((cls.idx, s))
            return [(1, var)] if var is not None else []
        i = cls.shapes.index(s)
        return [
            (p[i], self.y[(cls.idx, k)]) for k, p in enumerate(cls.patterns) if p[i] > 0
        ]

    # -- demand ----------------------------------------------------------------

    def _domains(self) -> None:
        """Units per domain at each spec's level add up to the flavor's pods."""
        for i, spec in enumerate(self.layout.specs):
            pods = self.flavor_units.get((spec.pod_set, spec.flavor))
            if pods is None:
                continue
            xs = []
            for path, cap in sorted(spec.domains.items()):
                x = self.model.new_int_var(0, cap, f"X{i}_{'/'.join(path)}")
                self.x[(i, path)] = x
                self.by_spec.setdefault(i, []).append((path, x))
                xs.append(x)
            self.model.add(spec.unit * sum(xs) == pods)

    def _hall(self) -> None:
        """Per flavor, shape and domain: units that must land inside the
        domain fit the slots of the classes inside it."""
        demand: dict[tuple[int, tuple[str, ...]], LinearTerms] = defaultdict(list)
        for (i, path), x in self.x.items():
            s = self.layout.specs[i].shape
            for pre in _prefixes(path):
                demand[(s, pre)].append((1, x))
        supply: dict[tuple[int, tuple[str, ...]], LinearTerms] = defaultdict(list)
        for cls in self.layout.classes:
            for s in cls.shapes:
                terms = self.supply(cls, s)
                if not terms:
                    continue
                f = self.layout.shapes[s].flavor
                for pre in _prefixes(cls.paths[f]):
                    if (s, pre) in demand:
                        supply[(s, pre)] += terms
        implied: set[tuple[int, tuple[int, ...]]] = set()
        for key in sorted(demand, key=lambda k: (k[0], -len(k[1]), k[1])):
            terms = demand[key]
            sig = (key[0], tuple(sorted(x.index for _c, x in terms)))
            if sig in implied:
                continue  # a deeper domain had the same demand and fewer slots
            implied.add(sig)
            have = supply.get(key, [])
            self.model.add(sum(c * x for c, x in terms) <= sum(c * x for c, x in have))

    def _linear_capacity(self) -> None:
        """A linear leaf: units fit its free capacity plus what victims free.

        A leaf already over its allocatable (free < 0) is judged only when
        the plan places pods there, and then as it is: releases must cover
        the excess too.  ``U{c}`` says whether the plan places any."""
        for cls in self.layout.classes:
            if not cls.linear:
                continue
            leaf = cls.leaves[0]
            rows: dict[str, LinearTerms] = defaultdict(list)
            slots: list[cp_model.IntVar] = []
            for s in cls.shapes:
                var = self.v.get((cls.idx, s))
                if var is None:
                    continue
                slots.append(var)
                for r, q in self.layout.shapes[s].request:
                    rows[r].append((q, var))
            used = None
            if slots and any(cls.free.get(r, 0) < 0 for r in rows):
                used = self.model.new_bool_var(f"U{cls.idx}")
                for var in slots:
                    self.model.add(var <= _ub(var) * used)
                self.derive(used, _any_positive(slots))
            for vi, usage in self.layout.victims_on.get(leaf, []):
                for r, q in usage.items():
                    if q and r in rows:
                        rows[r].append((-q, self.victims[vi]))
            for r, terms in sorted(rows.items()):
                free = cls.free.get(r, 0)
                if free >= 1 << 61:
                    continue
                if free < 0 and used is not None:
                    # used -> rows <= free (< 0); unused -> releases only.
                    self.model.add(sum(c * x for c, x in terms) - free * used <= 0)
                else:
                    self.model.add(sum(c * x for c, x in terms) <= free)

    # -- topology rules --------------------------------------------------------

    def _required(self) -> None:
        """One domain at the required level per group, flavor and workload."""
        by_group: dict[tuple[str, int, str], list[int]] = defaultdict(list)
        for i, spec in enumerate(self.layout.specs):
            if spec.required is not None:
                wl = self.data.pod_sets[spec.pod_set].wl
                by_group[(spec.group, wl, spec.flavor)].append(i)
        for (group, wl, f), members in sorted(by_group.items()):
            level = self.layout.specs[members[0]].required
            assert level is not None
            zs: dict[tuple[str, ...], cp_model.IntVar] = {}
            for i in members:
                for path, x in self.by_spec.get(i, []):
                    dom = path[: level + 1]
                    if dom not in zs:
                        zs[dom] = self.model.new_bool_var(
                            f"Z{group}_{wl}_{f}_{'/'.join(dom)}"
                        )
                        self.z[(group, wl, f, dom)] = zs[dom]
                    self.model.add(x <= int(_ub(x)) * zs[dom])
            chosen = self.flavor_chosen[(self.layout.specs[members[0]].pod_set, f)]
            self.model.add(sum(zs.values()) == chosen)

    def _slices(self) -> None:
        """Units per slice-level domain come in whole slices."""
        for i, spec in enumerate(self.layout.specs):
            for level, size in spec.slices:
                if size <= 1:
                    continue
                by_dom: dict[tuple[str, ...], list[cp_model.IntVar]] = defaultdict(list)
                for path, x in self.by_spec.get(i, []):
                    by_dom[path[: level + 1]].append(x)
                for dom, xs in sorted(by_dom.items()):
                    hi = sum(int(_ub(x)) for x in xs) // size
                    k = self.model.new_int_var(0, hi, f"K{i}_{'/'.join(dom)}")
                    self.slices[(i, dom)] = k
                    self.model.add(sum(xs) == size * k)

    def _preferred(self) -> None:
        """Which domains at a preferred level a pod set uses (objective)."""
        for i, spec in enumerate(self.layout.specs):
            if spec.preferred is None:
                continue
            by_dom: dict[tuple[str, ...], list[cp_model.IntVar]] = defaultdict(list)
            for path, x in self.by_spec.get(i, []):
                by_dom[path[: spec.preferred + 1]].append(x)
            for dom, xs in sorted(by_dom.items()):
                q = self.model.new_bool_var(f"Q{i}_{'/'.join(dom)}")
                self.preferred[(i, dom)] = q
                hi = sum(int(_ub(x)) for x in xs)
                self.model.add(sum(xs) <= hi * q)

    # -- objective helpers -----------------------------------------------------

    def opened(self) -> LinearTerms:
        """Hosts of initially empty classes the plan starts using."""
        return [(-1, self.empty[c.idx]) for c in self.layout.classes if c.empty]

    def empty_hosts(self) -> int:
        return sum(len(c.leaves) for c in self.layout.classes if c.empty)

    def spec_units(self, i: int) -> list[tuple[tuple[str, ...], cp_model.IntVar]]:
        return self.by_spec.get(i, [])

    def leaf_cap(self, cls: HostClass, s: int) -> int:
        return leaf_units(self.layout, cls, s)

    def specs_of(self, pod_set: int) -> list[tuple[int, Spec]]:
        return [
            (i, self.layout.specs[i]) for i in self.layout.by_pod_set.get(pod_set, [])
        ]


def _any_positive(xs: list[cp_model.IntVar]) -> Derive:
    return lambda val: int(any(val[x.index] > 0 for x in xs))


def _ub(x: cp_model.IntVar) -> int:
    domain = list(x.proto.domain)
    return int(domain[-1])
