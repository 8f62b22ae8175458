"""The move model: admit one gang with the fewest moves (CP-SAT).

For a pending gang on one TAS flavor, and the movable running workloads of
that flavor, it decides which of them move, where their pods go, and where
the gang's pods go:

* ``x[p, l]`` gang pods of pod set ``p`` on leaf ``l`` (allowed leaves only),
  all of them (``sum x = count``), inside one domain of a required level;
* ``mv[m]`` whether running workload ``m`` moves; ``z[m, q, l]`` its pods of
  pod set ``q`` on ``l`` (``sum z = count * mv``), its own required level
  kept;
* per leaf and resource: the gang's and the moved workloads' new pods fit
  the free capacity plus what the moved workloads free there;
* at most ``count`` moves and ``lost`` GPU-seconds of lost work;
* with a price, the moves cost less than the gang gains
  (:mod:`placewise.solver.defrag.price`).

It minimises the lost work, then the moves (to admit), or the moves, then
the lost work (the certificate).  OPTIMAL under the latter proves the
fewest moves (the certificate's model has no count limit and no price,
only the lost-work budget); INFEASIBLE proves that no set of moves within
the limits admits the gang (over this model's scope: moves within the
flavor, leaves no victim of the plan freed) — the certificate of
``pending[].fewestMoves``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ortools.sat.python import cp_model

from placewise.solver.baselines.records import FlavorIndex, IntArray
from placewise.solver.defrag.state import Held, PodSetNeed

Status = Literal["optimal", "feasible", "infeasible", "unknown"]
Placed = dict[str, dict[int, int]]
"""Pod set -> leaf -> pods."""


@dataclass(frozen=True, slots=True)
class Limits:
    count: int | None
    """At most this many moves (None: no count limit)."""
    lost: int | None
    """At most this many GPU-seconds lost (None: no limit)."""
    seconds: float
    workers: int = 1
    seed: int = 0
    deterministic: float | None = None
    """A deterministic work budget instead of ``seconds`` (reproducible)."""
    first: Literal["lost", "count"] = "lost"
    """What the objective minimises first: the lost work (then the moves),
    or the moves (then the lost work) — the certificate's count."""


@dataclass(slots=True)
class GangResult:
    status: Status
    moves: int = 0
    gang: Placed = field(default_factory=dict)
    moved: dict[int, Placed] = field(default_factory=dict)
    """Candidate index -> its new placement."""


class Room:
    """The part both move models share: pods placed on leaves, and per
    leaf and resource the new pods within the free capacity plus what the
    moved workloads free there."""

    def __init__(self, fi: FlavorIndex, held: Sequence[Held]) -> None:
        self.m = cp_model.CpModel()
        self.fi = fi
        self.load: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}
        self.mv = [self.m.new_bool_var(f"mv{k}") for k in range(len(held))]
        self.zs = [
            self.place(h.pod_sets, self.mv[k], f"m{k}") for k, h in enumerate(held)
        ]
        self.held = held

    def place(
        self, needs: Sequence[PodSetNeed], on: cp_model.IntVar | int, tag: str
    ) -> dict[str, dict[int, cp_model.IntVar]]:
        """All of ``needs``' pods on allowed leaves when ``on``, none else;
        each pod set (or group) inside one domain of its required level."""
        m, out = self.m, {}
        groups: dict[str, dict[int, cp_model.IntVar]] = {}
        for p, need in enumerate(needs):
            xs = {
                leaf: m.new_int_var(0, need.count, f"{tag}p{p}l{leaf}")
                for leaf in need.allowed
            }
            m.add(sum(xs.values()) == need.count * on)
            if need.level is not None:
                level = need.level
                key = f"{need.group}@{level}" if need.group else f"#{p}@{level}"
                doms = groups.setdefault(key, {})
                for leaf, x in xs.items():
                    d = int(self.fi.domain_of[level][leaf])
                    if d not in doms:
                        doms[d] = m.new_bool_var(f"{tag}p{p}d{d}")
                    m.add(x <= need.count * doms[d])
            for leaf, x in xs.items():
                for i in need.vec.nonzero()[0].tolist():
                    self.load.setdefault((leaf, i), []).append((int(need.vec[i]), x))
            out[need.name] = xs
        for doms in groups.values():
            m.add(sum(doms.values()) == on)
        return out

    def fit(self, rem: IntArray, limits: Limits) -> None:
        """Capacity per leaf and resource, and the budget's limits."""
        freed: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}
        for k, h in enumerate(self.held):
            for leaf, vec in h.old.items():
                for i in vec.nonzero()[0].tolist():
                    freed.setdefault((leaf, i), []).append((int(vec[i]), self.mv[k]))
        for (leaf, i), terms in self.load.items():
            back = freed.get((leaf, i), [])
            self.m.add(
                sum(c * v for c, v in terms) - sum(c * v for c, v in back)
                <= int(rem[i, leaf])
            )
        if limits.count is not None:
            self.m.add(sum(self.mv) <= limits.count)
        if limits.lost is not None:
            self.m.add(
                sum(h.lost * self.mv[k] for k, h in enumerate(self.held)) <= limits.lost
            )

    def fewest_then_least(
        self, first: Literal["lost", "count"]
    ) -> cp_model.LinearExprT:
        """The moves, then the lost work (``count``), or the lost work in
        GPU-minutes, then the moves (``lost``): one weighted sum."""
        held, mv = self.held, self.mv
        if first == "count":
            weight = sum(h.lost for h in held) + 1
            return sum((weight + h.lost) * mv[k] for k, h in enumerate(held))
        weight = len(held) + 1  # lost work in GPU-minutes: small coefficients
        return sum((weight * (h.lost // 60) + 1) * mv[k] for k, h in enumerate(held))

    def solver(self, limits: Limits, share: float = 1.0) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        if limits.deterministic is not None:
            solver.parameters.max_deterministic_time = limits.deterministic * share
        else:
            solver.parameters.max_time_in_seconds = max(0.05, limits.seconds * share)
        solver.parameters.num_workers = max(1, limits.workers)
        solver.parameters.random_seed = limits.seed
        return solver


def values(
    solver: cp_model.CpSolver, xs: dict[str, dict[int, cp_model.IntVar]]
) -> Placed:
    return {
        name: {leaf: n for leaf, x in per.items() if (n := solver.value(x)) > 0}
        for name, per in xs.items()
    }


def solve_gang(
    fi: FlavorIndex,
    rem: IntArray,
    gang: Sequence[PodSetNeed],
    held: Sequence[Held],
    limits: Limits,
    pays: int | None = None,
) -> GangResult:
    """Fewest moves admitting ``gang`` with free capacity ``rem``;
    ``pays``: what the gang gains, in the units of :attr:`Held.cost` (its
    moves must cost less; a gang without GPUs gains nothing, so only free
    moves), None: no price."""
    room = Room(fi, held)
    m, mv = room.m, room.mv
    gx = room.place(gang, 1, "g")
    room.fit(rem, limits)
    if pays is not None:
        m.add(sum(h.cost * mv[k] for k, h in enumerate(held)) <= max(0, pays - 1))
    m.minimize(room.fewest_then_least(limits.first))
    solver = room.solver(limits)
    code = solver.solve(m)
    if code == cp_model.INFEASIBLE:
        return GangResult("infeasible")
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return GangResult("unknown")

    chosen = [k for k in range(len(held)) if solver.value(mv[k])]
    return GangResult(
        "optimal" if code == cp_model.OPTIMAL else "feasible",
        len(chosen),
        values(solver, gx),
        {k: values(solver, room.zs[k]) for k in chosen},
    )
