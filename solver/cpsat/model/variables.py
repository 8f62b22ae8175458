"""Decision variables of the joint model, bundled per entity.

Name scheme: ``W{w}_admit``, ``P{p}_n`` (pods admitted), ``G{g}_R{rg}_F{f}``
(flavor choice), ``P{p}_R{rg}_F{f}_u`` (pods under that flavor),
``V{v}_victim``.  Who may preempt whom (``A`` links per preemptor class) is
in :mod:`.constraints`, TAS placement in :mod:`.placement`; auxiliary
variables are created on demand and register how they follow from these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.problem.data import ModelData, PodSetData


@dataclass(slots=True)
class PodSetVar:
    n: cp_model.IntVar | int
    """Pods admitted: a variable under minCount, else count * admit."""
    u: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    """(resource group, flavor) -> pods admitted under that flavor."""


@dataclass(slots=True)
class WorkloadVar:
    admit: cp_model.IntVar
    flavor: dict[tuple[int, int, str], cp_model.IntVar] = field(default_factory=dict)
    """(group, resource group, flavor) -> chosen."""


Derive = Callable[[dict[int, int]], int]


class Variables:
    """Creates the core variables; lazily, the auxiliary ones.

    Every auxiliary variable registers how its value follows from the
    decisions (:meth:`derive`), so a plan becomes a complete assignment —
    the search's hint — without a solve.
    """

    def __init__(self, model: cp_model.CpModel, data: ModelData) -> None:
        self.model = model
        self.data = data
        self.derived: list[tuple[cp_model.IntVar, Derive]] = []
        self.workloads = [
            WorkloadVar(model.new_bool_var(f"W{wd.idx}_admit")) for wd in data.workloads
        ]
        self.victims = [model.new_bool_var(f"V{v.idx}_victim") for v in data.victims]
        self.pod_sets = [self._pod_set(pd) for pd in data.pod_sets]
        self._make_flavors()

    def derive(self, var: cp_model.IntVar, value: Derive) -> None:
        """``var``'s value given the values of variables created before it."""
        self.derived.append((var, value))

    def complete(self, values: dict[int, int]) -> dict[int, int]:
        """Fill every derived variable into ``values`` (creation order)."""
        for var, value in self.derived:
            values[var.index] = value(values)
        return values

    def _pod_set(self, pd: PodSetData) -> PodSetVar:
        admit = self.workloads[pd.wl].admit
        if pd.min_count < pd.count:
            n = self.model.new_int_var(0, pd.count, f"P{pd.idx}_n")
            self.model.add(n >= pd.min_count * admit)
            self.model.add(n <= pd.count * admit)
            return PodSetVar(n)
        return PodSetVar(pd.count * admit)  # type: ignore[arg-type]

    def _make_flavors(self) -> None:
        for gd in self.data.groups:
            wv = self.workloads[gd.wl]
            for rg, flavors in sorted(gd.flavors.items()):
                for f in flavors:
                    wv.flavor[(gd.idx, rg, f)] = self.model.new_bool_var(
                        f"G{gd.idx}_R{rg}_F{f}"
                    )
                for p in gd.pod_sets:
                    pd = self.data.pod_sets[p]
                    for f in flavors:
                        self.pod_sets[p].u[(rg, f)] = self.model.new_int_var(
                            0, pd.count, f"P{p}_R{rg}_F{f}_u"
                        )
