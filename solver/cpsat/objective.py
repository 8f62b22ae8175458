"""The lexicographic objective, as an ordered list of linear criteria.

Order (README "Objective"): per priority tier, highest first, accelerator
demand running after the plan, then other demand; then preemption cost,
preferred-topology spread, fragmentation (empty hosts opened) and
borrowing.  Criteria are packed into stages whose weighted sums provably
preserve the order (each weight exceeds the whole range of everything after
it) and stay far inside int64; the stages are solved one after another with
the earlier ones held at their best found value.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from ortools.sat.python import cp_model

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat.constraints import Constraints
from placewise.solver.cpsat.data import PODS, ModelData
from placewise.solver.cpsat.variables import Variables

Terms = list[tuple[int, cp_model.IntVar]]
STAGE_RANGE = 1 << 60


@dataclass(frozen=True, slots=True)
class Policy:
    """Objective weights; ``--policy FILE`` (YAML) overrides the defaults."""

    accelerators: tuple[str, ...] = ("nvidia.com/gpu", "amd.com/gpu", "google.com/tpu")
    """Resources counted as "GPUs first" demand."""
    demand_scale: int = 1_000_000
    """Other resources count as millionths of their cluster-wide capacity."""
    preemption: bool = True
    topology: bool = True
    fragmentation: bool = True
    borrowing: bool = True

    @staticmethod
    def from_file(path: str | Path) -> Policy:
        return Policy.from_mapping(yaml.safe_load(Path(path).read_text()), str(path))

    @staticmethod
    def from_mapping(raw: object, source: str = "") -> Policy:
        """Every field checked: the weights built from a policy must stay
        inside int64, and a wrong type would only fail deep in the model."""
        raw = {} if raw is None else raw
        at = f"{source}: " if source else ""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{at}a policy file is a YAML mapping")
        unknown = sorted(
            str(k)[:80] for k in set(raw) - set(Policy.__dataclass_fields__)
        )
        if unknown:
            raise ValueError(f"{at}unknown policy keys {unknown}")
        values = dict(raw)
        acc = values.get("accelerators", ())
        if not isinstance(acc, list | tuple) or not all(
            isinstance(a, str) for a in acc
        ):
            raise ValueError(f"{at}accelerators must be a list of resource names")
        if "accelerators" in values:
            values["accelerators"] = tuple(acc)
        scale = values.get("demand_scale", 1)
        if isinstance(scale, bool) or not isinstance(scale, int):
            raise ValueError(f"{at}demand_scale must be an integer")
        if not 1 <= scale <= 10**9:
            raise ValueError(f"{at}demand_scale must be in [1, 10^9]")
        for name in ("preemption", "topology", "fragmentation", "borrowing"):
            if not isinstance(values.get(name, True), bool):
                raise ValueError(f"{at}{name} must be true or false")
        return Policy(**values)


@dataclass(slots=True)
class Criterion:
    """Maximise ``sum(terms)``; ``lo``/``hi`` bound it for safe weights."""

    name: str
    terms: Terms = field(default_factory=list)
    lo: int = 0
    hi: int = 0

    def add(self, coef: int, var: cp_model.IntVar, var_hi: int) -> None:
        if coef == 0:
            return
        self.terms.append((coef, var))
        if coef > 0:
            self.hi += coef * var_hi
        else:
            self.lo += coef * var_hi


def capacity(snapshot: Snapshot) -> dict[str, int]:
    """Cluster-wide size of each resource: what "other demand" is a share of."""
    cap: dict[str, int] = defaultdict(int)
    for node in snapshot.nodes.values():
        for r, q in node.allocatable.items():
            cap[r] += q
    for cq in snapshot.cluster_queues.values():
        for g in cq.resource_groups:
            for fq in g.flavors:
                for rq in fq.resources:
                    cap[rq.name] = max(cap[rq.name], rq.nominal)
    return cap


def other_demand(req: Mapping[str, int], cap: Mapping[str, int], pol: Policy) -> int:
    total = 0
    for r, q in req.items():
        if r in pol.accelerators or r == PODS or q <= 0:
            continue
        total += max(1, q * pol.demand_scale // max(cap.get(r, 1), 1))
    return total


def primary_vector(snapshot: Snapshot, plan: Plan, pol: Policy) -> list[int]:
    """Criteria 1-2 of a plan, computed from the plan alone (no model).

    Used as the floor when the greedy plan cannot be expressed in the model:
    per tier, highest first, (accelerators, other demand) added by the plan
    minus what its preemptions take away.
    """
    cap = capacity(snapshot)
    acc: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for a in plan.admissions:
        w = snapshot.workloads[a.workload]
        spec = {ps.name: ps for ps in w.pod_sets}
        for psa in a.pod_set_assignments:
            ps = spec.get(psa.name)
            if ps is None:
                continue
            acc[w.priority][0] += (
                sum(q for r, q in ps.requests.items() if r in pol.accelerators)
                * psa.count
            )
            acc[w.priority][1] += other_demand(ps.requests, cap, pol) * psa.count
    for p in plan.preemptions:
        v = snapshot.workloads[p.workload]
        usage: dict[str, int] = defaultdict(int)
        for (_f, r), q in v.usage().items():
            usage[r] += q
        acc[v.priority][0] -= sum(q for r, q in usage.items() if r in pol.accelerators)
        acc[v.priority][1] -= other_demand(usage, cap, pol)
    out: list[int] = []
    tiers = {w.priority for w in snapshot.workloads.values()}
    for tier in sorted(tiers, reverse=True):
        out += acc[tier]
    return out


class Objective:
    def __init__(
        self,
        model: cp_model.CpModel,
        data: ModelData,
        v: Variables,
        c: Constraints,
        policy: Policy,
    ) -> None:
        self.model, self.data, self.v, self.c, self.policy = model, data, v, c, policy
        self.criteria: list[Criterion] = []

    def build(self) -> list[list[Criterion]]:
        self._demand_per_tier()
        if self.policy.preemption:
            self._preemption_cost()
        if self.policy.topology:
            self._preferred_spread()
        if self.policy.fragmentation:
            self._empty_hosts_opened()
        if self.policy.borrowing:
            self._borrowing()
        return self.stages()

    def stages(self) -> list[list[Criterion]]:
        out: list[list[Criterion]] = []
        current: list[Criterion] = []
        span = 1
        for crit in self.criteria:
            if not crit.terms:
                continue
            width = crit.hi - crit.lo + 1
            if current and span * width > STAGE_RANGE:
                out.append(current)
                current, span = [], 1
            current.append(crit)
            span *= width
        if current:
            out.append(current)
        return out

    @staticmethod
    def weighted(stage: list[Criterion]) -> Terms:
        """Weights: each criterion outweighs the full range of all later ones."""
        terms: Terms = []
        weight = 1
        for crit in reversed(stage):
            terms += [(weight * c, x) for c, x in crit.terms]
            weight *= crit.hi - crit.lo + 1
        return terms

    # -- criteria ------------------------------------------------------------------

    def _demand_per_tier(self) -> None:
        data, pol = self.data, self.policy
        cap = capacity(data.snapshot)

        def other(req: dict[str, int]) -> int:
            return other_demand(req, cap, pol)

        tiers = sorted(
            {wd.info.priority for wd in data.workloads}
            | {vd.info.priority for vd in data.victims},
            reverse=True,
        )
        for tier in tiers:
            gpus, rest = Criterion(f"accelerators@{tier}"), Criterion(f"demand@{tier}")
            for pd in data.pod_sets:
                if data.workloads[pd.wl].info.priority != tier:
                    continue
                acc = sum(q for r, q in pd.ps.requests.items() if r in pol.accelerators)
                rest_coef = other(pd.ps.requests)
                n = self.v.pod_sets[pd.idx].n
                if pd.min_count < pd.count:
                    gpus.add(acc, n, pd.count)  # type: ignore[arg-type]
                    rest.add(rest_coef, n, pd.count)  # type: ignore[arg-type]
                else:
                    admit = self.v.workloads[pd.wl].admit
                    gpus.add(acc * pd.count, admit, 1)
                    rest.add(rest_coef * pd.count, admit, 1)
            for vd, x in zip(data.victims, self.v.victims, strict=True):
                if vd.info.priority != tier:
                    continue
                usage: dict[str, int] = defaultdict(int)
                for (_f, r), q in vd.info.usage.items():
                    usage[r] += q
                gpus.add(
                    -sum(q for r, q in usage.items() if r in pol.accelerators), x, 1
                )
                rest.add(-other(dict(usage)), x, 1)
            self.criteria += [gpus, rest]

    def _preemption_cost(self) -> None:
        crit = Criterion("preemption-cost")
        ranks = {
            p: i + 1
            for i, p in enumerate(
                sorted({vd.info.priority for vd in self.data.victims})
            )
        }
        for vd, x in zip(self.data.victims, self.v.victims, strict=True):
            size = sum(
                q
                for (_f, r), q in vd.info.usage.items()
                if r in self.policy.accelerators
            )
            crit.add(-ranks[vd.info.priority] * (1 + size), x, 1)
        self.criteria.append(crit)

    def _preferred_spread(self) -> None:
        """Fewest domains at the preferred level per pod set."""
        crit = Criterion("preferred-spread")
        for pd in self.data.pod_sets:
            level = pd.ps.topology.preferred
            if level is None:
                continue
            var = self.v.pod_sets[pd.idx]
            doms: dict[tuple[str, tuple[str, ...]], cp_model.IntVar] = {}
            for (f, leaf), place in var.place.items():
                if level not in self.data.topos[f].levels:
                    continue
                d = self.c.domain_of(f, leaf, level)
                if (f, d) not in doms:
                    doms[(f, d)] = self.model.new_bool_var(f"P{pd.idx}_pref_{f}_{d}")
                    crit.add(-1, doms[(f, d)], 1)
                self.model.add(place <= var.fits[(f, leaf)] * doms[(f, d)])
        self.criteria.append(crit)

    def _empty_hosts_opened(self) -> None:
        """Keep empty hosts empty: count hosts a plan starts using."""
        crit = Criterion("empty-hosts-opened")
        by_leaf: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
        for pd in self.data.pod_sets:
            var = self.v.pod_sets[pd.idx]
            for (f, leaf), place in var.place.items():
                by_leaf[leaf].append((var.fits[(f, leaf)], place))
        for leaf, places in sorted(by_leaf.items()):
            lf = self.data.leaves[leaf]
            node = self.data.snapshot.nodes.get(lf.node or "")
            if node is None or lf.free.get(PODS, 0) < node.allocatable.get(PODS, 0):
                continue  # not initially empty (something already runs there)
            opened = self.model.new_bool_var(f"L{leaf}_opened")
            self.model.add(
                sum(x for _f, x in places) <= sum(f for f, _x in places) * opened
            )
            crit.add(-1, opened, 1)
        self.criteria.append(crit)

    def _borrowing(self) -> None:
        crit = Criterion("borrowing")
        tree = self.data.tree
        for (cq, fr), (terms, const, scale) in sorted(
            self.c.cq_usage.items(), key=lambda kv: kv[0]
        ):
            nominal = tree.node(cq).nominal.get(fr, 0)
            top = sum(c * _upper(x) for c, x in terms if c > 0)
            hi = (top * scale + const - nominal) // scale + 1
            if hi <= 0:
                continue
            b = self.model.new_int_var(0, hi, f"B_{cq}_{fr[0]}_{fr[1]}")
            self.model.add(
                b * scale >= sum(c * x for c, x in terms) * scale + const - nominal
            )
            crit.add(-1, b, hi)
        self.criteria.append(crit)


def _upper(x: cp_model.IntVar) -> int:
    # The proto's repeated field does not support negative indexing.
    domain = list(x.proto.domain)
    return int(domain[-1])
