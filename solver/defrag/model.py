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
* at most ``count`` moves and ``lost`` GPU-seconds of lost work.

It minimises the lost work, then the moves (to admit), or the moves, then
the lost work (the certificate).  OPTIMAL under the latter proves the
fewest moves; INFEASIBLE proves that no set of moves within the limits
admits the gang (over this model's scope: moves within the flavor, leaves no victim
of the plan freed) — the certificate of ``pending[].fewestMoves``.
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


def solve_gang(
    fi: FlavorIndex,
    rem: IntArray,
    gang: Sequence[PodSetNeed],
    held: Sequence[Held],
    limits: Limits,
) -> GangResult:
    """Fewest moves admitting ``gang`` with free capacity ``rem``."""
    m = cp_model.CpModel()
    load: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}

    def place(
        needs: Sequence[PodSetNeed], on: cp_model.IntVar | int, tag: str
    ) -> dict[str, dict[int, cp_model.IntVar]]:
        out: dict[str, dict[int, cp_model.IntVar]] = {}
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
                    d = int(fi.domain_of[level][leaf])
                    if d not in doms:
                        doms[d] = m.new_bool_var(f"{tag}p{p}d{d}")
                    m.add(x <= need.count * doms[d])
            for leaf, x in xs.items():
                for i in need.vec.nonzero()[0].tolist():
                    load.setdefault((leaf, i), []).append((int(need.vec[i]), x))
            out[need.name] = xs
        for doms in groups.values():
            m.add(sum(doms.values()) == on)
        return out

    gx = place(gang, 1, "g")
    mv = [m.new_bool_var(f"mv{k}") for k in range(len(held))]
    zs = [place(h.pod_sets, mv[k], f"m{k}") for k, h in enumerate(held)]
    freed: dict[tuple[int, int], list[tuple[int, cp_model.IntVar]]] = {}
    for k, h in enumerate(held):
        for leaf, vec in h.old.items():
            for i in vec.nonzero()[0].tolist():
                freed.setdefault((leaf, i), []).append((int(vec[i]), mv[k]))
    for (leaf, i), terms in load.items():
        back = freed.get((leaf, i), [])
        m.add(
            sum(c * v for c, v in terms) - sum(c * v for c, v in back)
            <= int(rem[i, leaf])
        )
    if limits.count is not None:
        m.add(sum(mv) <= limits.count)
    if limits.lost is not None:
        m.add(sum(h.lost * mv[k] for k, h in enumerate(held)) <= limits.lost)
    if limits.first == "count":
        weight = sum(h.lost for h in held) + 1
        m.minimize(sum((weight + h.lost) * mv[k] for k, h in enumerate(held)))
    else:  # lost work in GPU-minutes: small coefficients, same order
        weight = len(held) + 1
        m.minimize(
            sum((weight * (h.lost // 60) + 1) * mv[k] for k, h in enumerate(held))
        )
    solver = cp_model.CpSolver()
    if limits.deterministic is not None:
        solver.parameters.max_deterministic_time = limits.deterministic
    else:
        solver.parameters.max_time_in_seconds = max(0.05, limits.seconds)
    solver.parameters.num_workers = max(1, limits.workers)
    solver.parameters.random_seed = limits.seed
    code = solver.solve(m)
    if code == cp_model.INFEASIBLE:
        return GangResult("infeasible")
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return GangResult("unknown")

    def values(xs: dict[str, dict[int, cp_model.IntVar]]) -> Placed:
        return {
            name: {leaf: n for leaf, x in per.items() if (n := solver.value(x)) > 0}
            for name, per in xs.items()
        }

    chosen = [k for k in range(len(held)) if solver.value(mv[k])]
    return GangResult(
        "optimal" if code == cp_model.OPTIMAL else "feasible",
        len(chosen),
        values(gx),
        {k: values(zs[k]) for k in chosen},
    )
