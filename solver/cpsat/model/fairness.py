"""Fair sharing in the objective: the largest weighted dominant share, made small.

With Kueue's fair sharing on, after the priority tiers the plan should share
each cohort fairly.  placewise minimises the **largest weighted dominant
resource share** of any ClusterQueue (min-max): it is the first criterion of
the lexicographic order Kueue's fair-sharing tournament works towards, it
needs one variable instead of a sorted vector, and it cannot be improved by
starving one queue to flatter an average (Jain's index, which the bench also
reports, can).  A share is what :class:`placewise.solver.kueue.fairsharing.Shares`
computes: per resource, the usage above the queue's quota summed over flavors,
per-mille of what the parent cohort could lend, divided by the weight; the
dominant resource is the largest.  Only queues with pending work in a cohort
compete; zero-weight queues are left out (Kueue ranks them after everyone,
whatever they borrow).

Here shares are measured in 1/SCALE per-mille and rounded per term: the
objective is a tie-break after the tiers, and the exact value is what the
bench and the validator report.
"""

from __future__ import annotations

from collections import defaultdict

from ortools.sat.python import cp_model

from placewise.solver.cpsat.model.constraints import Constraints
from placewise.solver.cpsat.model.variables import Derive, Variables
from placewise.solver.kueue.fairsharing import Shares, competing_queues
from placewise.solver.kueue.quota import FR
from placewise.solver.problem.data import ModelData

SCALE = 10_000
"""Resolution of a share in the model: 1/10,000 per-mille."""
Terms = list[tuple[int, cp_model.IntVar]]


def largest_share(
    model: cp_model.CpModel, data: ModelData, v: Variables, c: Constraints
) -> tuple[cp_model.IntVar, int] | None:
    """``z`` >= every fair-sharing queue's weighted share, and its upper end;
    None when no decision changes any share."""
    snap, tree = data.snapshot, data.tree
    shares = Shares.of(snap, tree)
    rows: list[tuple[Terms, int]] = []
    floor = 0
    for cq in competing_queues(snap):
        node = tree.node(cq)
        weight = shares.weights.get(node.id)
        if node.parent is None or weight is None or weight == 0:
            continue
        lendable = shares.lendable(node.parent)
        per_resource: dict[str, list[tuple[cp_model.IntVar, int]]] = defaultdict(list)
        constant: dict[str, int] = defaultdict(int)
        for fr, quota in node.subtree.items():
            b = _borrowed(model, v, c, cq, fr, quota)
            if isinstance(b, int):
                constant[fr[1]] += b
            else:
                per_resource[fr[1]].append(b)
        for r in set(per_resource) | set(constant):
            lr = lendable.get(r, 0)
            if lr <= 0:
                continue
            unit = SCALE * 1000 / (lr * weight)
            fixed = round(float(unit) * constant.get(r, 0))
            terms: Terms = [
                (k, var)
                for var, scale in per_resource.get(r, [])
                if (k := round(float(unit) * scale)) > 0
            ]
            if terms:
                rows.append((terms, fixed))
            else:
                floor = max(floor, fixed)
    if not rows:
        return None
    hi = max(floor, *(fixed + sum(k * _ub(x) for k, x in t) for t, fixed in rows))
    z = model.new_int_var(floor, max(hi, floor), "FAIR_max_share")
    for terms, fixed in rows:
        model.add(z >= sum(k * x for k, x in terms) + fixed)
    v.derive(z, _max_row(rows, floor))
    return z, max(hi, floor)


def _borrowed(
    model: cp_model.CpModel,
    v: Variables,
    c: Constraints,
    cq: str,
    fr: FR,
    quota: int,
) -> int | tuple[cp_model.IntVar, int]:
    """Usage above quota on one flavor-resource: a constant, or (variable in
    units of the resource's scale, that scale)."""
    got = c.cq_usage.get((cq, fr))
    if got is None:
        used = c.data.base_usage.get(cq, {}).get(fr, 0)
        return max(0, used - quota)
    terms, const, scale = got
    top = sum(k * _ub(x) for k, x in terms if k > 0)
    hi = max(0, (top * scale + const - quota) // scale + 1)
    b = model.new_int_var(0, hi, f"FAIR_{cq}_{fr[0]}_{fr[1]}")
    model.add(b * scale >= sum(k * x for k, x in terms) * scale + const - quota)
    v.derive(b, _excess(terms, const - quota, scale))
    return b, scale


def _excess(terms: Terms, const: int, scale: int) -> Derive:
    def value(val: dict[int, int]) -> int:
        total = scale * sum(k * val[x.index] for k, x in terms) + const
        return max(0, -(-total // scale))

    return value


def _max_row(rows: list[tuple[Terms, int]], floor: int) -> Derive:
    return lambda val: max(
        floor, *(sum(k * val[x.index] for k, x in t) + fixed for t, fixed in rows)
    )


def _ub(x: cp_model.IntVar) -> int:
    return int(list(x.proto.domain)[-1])
