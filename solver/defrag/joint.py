"""The joint move model: which pending gangs of a flavor get in through
moves, and which running workloads move, decided together (CP-SAT).

Gang by gang, the first gang in queue order took whatever moves admitted
it, and the room it made or spent decided what the next could do; the
moves chosen were cheapest for one gang, not for the plan.  Here every
pending gang of the flavor has ``admit[g]``, placed as in
:mod:`.model` when admitted, on the room the chosen moves free:

1. the priority tiers first: per tier, highest first, the GPUs admitted
   (then gangs admitted, so gangs without GPUs count too);
2. then the least lost work (GPU-minutes), then the fewest moves — a
   second solve with the tiers held at what the first found;
3. each move is charged to one admitted gang (``charge[m, g]``), and a
   gang's charges must cost less than it gains
   (:mod:`placewise.solver.defrag.price`): a move pays for itself;
4. quota: each gang fits its queue alone (its flavor choice); gangs under
   one cohort tree together take at most what the tightest of their queues
   may still take (``caps``) — a sufficient rule, not Kueue's whole tree, so
   the caller's validator stays the judge.

The result is a plan candidate; the caller validates it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.baselines.records import FlavorIndex, IntArray
from placewise.solver.defrag.model import Limits, Placed, Room, Status, values
from placewise.solver.defrag.state import Held, PodSetNeed

STAGE_ONE = 0.6
"""Share of the time the tiers get; the rest minimises the lost work."""


@dataclass(frozen=True, slots=True)
class JointGang:
    needs: list[PodSetNeed]
    priority: int
    gpus: int
    pays: int | None
    """What admitting it gains, in :attr:`Held.cost` units; None: no price."""


Cap = tuple[list[tuple[int, int]], int]
"""(gang index, quota it takes) terms and the most they may take together."""


@dataclass(slots=True)
class JointResult:
    status: Status
    admitted: dict[int, Placed] = field(default_factory=dict)
    """Gang index -> its placement."""
    moved: dict[int, Placed] = field(default_factory=dict)
    """Held index -> its new placement."""


def tier_weights(gangs: Sequence[JointGang]) -> list[int]:
    """Per gang, its weight in one sum that orders plans as the tiers do:
    a gang's value is its GPUs x (gangs + 1) + 1 (a GPU outweighs any
    number of gangs without GPUs), and a tier's unit outweighs every gang
    of the tiers below together."""
    n = len(gangs) + 1
    value = [g.gpus * n + 1 for g in gangs]
    unit: dict[int, int] = {}
    below = 1
    for tier in sorted({g.priority for g in gangs}):
        unit[tier] = below
        below *= (
            sum(v for v, g in zip(value, gangs, strict=True) if g.priority == tier) + 1
        )
    return [unit[g.priority] * v for v, g in zip(value, gangs, strict=True)]


def solve_joint(
    fi: FlavorIndex,
    rem: IntArray,
    gangs: Sequence[JointGang],
    held: Sequence[Held],
    limits: Limits,
    caps: Sequence[Cap] = (),
) -> JointResult:
    room = Room(fi, held)
    m, mv = room.m, room.mv
    admit = [m.new_bool_var(f"admit{g}") for g in range(len(gangs))]
    xs = [room.place(g.needs, admit[i], f"g{i}") for i, g in enumerate(gangs)]
    room.fit(rem, limits)
    _charge(m, gangs, held, admit, mv)
    for terms, cap in caps:
        m.add(sum(q * admit[i] for i, q in terms) <= cap)
    weights = tier_weights(gangs)
    tiers = sum(w * a for w, a in zip(weights, admit, strict=True))
    # Fewer moves break ties already here: a stage-one plan kept as it is
    # (the second stage out of time) carries no move that admits nothing.
    m.maximize(tiers * (len(held) + 1) - sum(mv))
    solver = room.solver(limits, STAGE_ONE)
    code = solver.solve(m)
    if code == cp_model.INFEASIBLE:
        return JointResult("infeasible")
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return JointResult("unknown")
    first: Status = "optimal" if code == cp_model.OPTIMAL else "feasible"
    best = int(solver.value(tiers))
    if best == 0:
        return JointResult(first)
    for var in (*admit, *mv, *_all(xs), *_all(room.zs)):
        m.add_hint(var, solver.value(var))
    m.add(tiers >= best)
    m.minimize(room.fewest_then_least("lost"))
    second = room.solver(limits, 1 - STAGE_ONE)
    code2 = second.solve(m)
    if code2 in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        solver = second
    return JointResult(
        first,
        {i: values(solver, xs[i]) for i in range(len(gangs)) if solver.value(admit[i])},
        {
            k: values(solver, room.zs[k])
            for k in range(len(held))
            if solver.value(mv[k])
        },
    )


def _charge(
    m: cp_model.CpModel,
    gangs: Sequence[JointGang],
    held: Sequence[Held],
    admit: Sequence[cp_model.IntVar],
    mv: Sequence[cp_model.IntVar],
) -> None:
    """Each costly move charged to one admitted gang; a gang's charges
    cost less than it gains.  A free move (no price, or checkpointed with
    no reversal) needs no charge."""
    priced = [i for i, g in enumerate(gangs) if g.pays is not None]
    if not priced:
        return
    bills: dict[int, list[tuple[int, cp_model.IntVar]]] = {i: [] for i in priced}
    for k, h in enumerate(held):
        if h.cost <= 0:
            continue
        charge = {i: m.new_bool_var(f"c{k}g{i}") for i in priced}
        m.add(sum(charge.values()) == mv[k])
        for i, c in charge.items():
            bills[i].append((h.cost, c))
    for i, bill in bills.items():
        pays = gangs[i].pays
        assert pays is not None
        if bill:
            m.add(sum(c * v for c, v in bill) <= max(0, pays - 1) * admit[i])


def _all(
    placed: Sequence[dict[str, dict[int, cp_model.IntVar]]],
) -> list[cp_model.IntVar]:
    return [x for per in placed for xs in per.values() for x in xs.values()]
