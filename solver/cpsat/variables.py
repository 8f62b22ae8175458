"""Decision variables of the joint model, bundled per entity.

Name scheme: ``W{w}_admit``, ``P{p}_n`` (pods admitted), ``G{g}_R{rg}_F{f}``
(flavor choice), ``P{p}_R{rg}_F{f}_u`` (pods under that flavor),
``P{p}_F{f}_L{leaf}`` (pods on a TAS leaf), ``P{p}_F{f}_D{level}_{domain}``
(required domain), ``V{v}_victim``, ``S{w}_{v}`` (w is v's preemptor).
Auxiliary variables for objective terms are created on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.cpsat.data import ModelData, PodSetData, leaf_fits


@dataclass(slots=True)
class PodSetVar:
    n: cp_model.IntVar | int
    """Pods admitted: a variable under minCount, else count * admit."""
    u: dict[tuple[int, str], cp_model.IntVar] = field(default_factory=dict)
    """(resource group, flavor) -> pods admitted under that flavor."""
    place: dict[tuple[str, int], cp_model.IntVar] = field(default_factory=dict)
    """(TAS flavor, leaf) -> pods on that leaf."""
    fits: dict[tuple[str, int], int] = field(default_factory=dict)
    """(TAS flavor, leaf) -> most pods that could ever go there."""


@dataclass(slots=True)
class WorkloadVar:
    admit: cp_model.IntVar
    flavor: dict[tuple[int, int, str], cp_model.IntVar] = field(default_factory=dict)
    """(group, resource group, flavor) -> chosen."""


class Variables:
    """Creates the core variables; lazily, the auxiliary ones."""

    def __init__(self, model: cp_model.CpModel, data: ModelData) -> None:
        self.model = model
        self.data = data
        self.workloads = [
            WorkloadVar(model.new_bool_var(f"W{wd.idx}_admit")) for wd in data.workloads
        ]
        self.victims = [model.new_bool_var(f"V{v.idx}_victim") for v in data.victims]
        self.pairs: dict[tuple[int, int], cp_model.IntVar] = {}
        for v, lst in sorted(data.pairs.items()):
            for pair in lst:
                w = pair.workload
                self.pairs[(w, v)] = model.new_bool_var(f"S{w}_{v}")
        self.pod_sets = [self._pod_set(pd) for pd in data.pod_sets]
        self._make_flavors()
        self._make_placements()

    def _pod_set(self, pd: PodSetData) -> PodSetVar:
        admit = self.workloads[pd.wl].admit
        if pd.min_count < pd.count:
            n = self.model.new_int_var(0, pd.count, f"P{pd.idx}_n")
            self.model.add(n >= pd.min_count).only_enforce_if(admit)
            self.model.add(n == 0).only_enforce_if(~admit)
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

    def _make_placements(self) -> None:
        data = self.data
        for pd in data.pod_sets:
            if not pd.tas:
                continue
            var = self.pod_sets[pd.idx]
            flavors = {f for (_rg, f) in var.u if f in data.topos}
            for f in sorted(flavors):
                fits = leaf_fits(data, pd, f, self._release_bound())
                cap = data.max_leaves
                if cap is not None and len(fits) > cap:
                    # Large instances: keep the leaves that hold the most pods.
                    fits = sorted(fits, key=lambda fl: (-fl[0], fl[1]))[:cap]
                for fit, leaf in sorted(fits, key=lambda fl: fl[1]):
                    var.fits[(f, leaf)] = fit
                    var.place[(f, leaf)] = self.model.new_int_var(
                        0, fit, f"P{pd.idx}_F{f}_L{leaf}"
                    )

    _release: dict[int, dict[str, int]] | None = None

    def _release_bound(self) -> dict[int, dict[str, int]]:
        """Per leaf, everything that preemptions could free there."""
        if self._release is None:
            out: dict[int, dict[str, int]] = {}
            for v in self.data.victims:
                if v.idx not in self.data.pairs:
                    continue
                for leaf, usage in v.leaf_usage.items():
                    acc = out.setdefault(leaf, {})
                    for r, q in usage.items():
                        acc[r] = acc.get(r, 0) + q
            self._release = out
        return self._release
