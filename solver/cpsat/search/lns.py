"""Large-neighbourhood search over a few racks at a time.

CP-SAT's own LNS frees random variables; an improving move here is a
coordinated one — take a gang out of a rack, repack the rack's hosts with
other pod shapes, admit a gang that was waiting for whole free hosts — and
it lives inside a few topology domains.  Each round frees the placement of
a few domains at the deepest level the model places at (racks on the bench
families), chosen at random weighted by the GPUs the incumbent leaves
stranded there, and every workload decision that does not touch any other
domain; everything else is fixed at the incumbent.  The sub-model is a copy
of the stage's model with variable domains narrowed (built once, narrowed
per round), solved briefly with the incumbent as hint; a strictly better
stage value replaces the incumbent.
"""

from __future__ import annotations

import logging
import random
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from placewise.solver.budget import Budget
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import Stage
from placewise.solver.cpsat.tuning import (
    DOMAINS_PER_ROUND,
    LNS_FLOOR_SECONDS,
    MIN_DOMAINS,
    ROUND_SECONDS,
)

Path = tuple[str, ...]
log = logging.getLogger("placewise.cpsat")


@dataclass(slots=True)
class Neighbourhoods:
    """Which variables belong to which domain."""

    paths: dict[int, Path]
    """Variable index -> the topology path its value is about."""
    domains: list[Path]
    """Candidate domains (deepest placed level), sorted."""
    stranded: dict[Path, list[tuple[int, int]]]
    """Domain -> (variable index, GPUs each unit of it leaves unused)."""
    tagged: list[int] = field(default_factory=list)
    """Every variable with a path, in index order."""
    members: dict[Path, set[int]] = field(default_factory=dict)
    """Domain -> the variables a round that frees it frees (its own, its
    ancestors' and its descendants')."""
    clusters: bool = False
    """The model spans worker clusters (MultiKueue copies compete)."""

    def __post_init__(self) -> None:
        self.tagged = sorted(self.paths)
        # Relatedness is decided per distinct path (a few hundred), not per
        # variable and domain (1M checks, 0.8 s, at 1,000 hosts).
        by_path: dict[Path, list[int]] = defaultdict(list)
        for i, p in self.paths.items():
            by_path[p].append(i)
        for d in self.domains:
            self.members[d] = {
                i for p, ids in by_path.items() if _related(p, d) for i in ids
            }


def neighbourhoods(
    model: CPModel, accelerators: Sequence[str]
) -> Neighbourhoods | None:
    """The domain of each placement variable; None without TAS or with too
    few domains for a neighbourhood to be a small part of the model."""
    pl = model.cons.placement
    if pl is None:
        return None
    layout = pl.layout
    paths: dict[int, Path] = {}
    stranded: dict[Path, list[tuple[int, int]]] = defaultdict(list)
    deepest: set[Path] = set()
    for cls in layout.classes:
        for path in cls.paths.values():
            deepest.add(path)
    for (c, k), y in pl.y.items():
        cls = layout.classes[c]
        path = min(cls.paths.values())
        paths[y.index] = path
        used = sum(
            n * layout.shapes[s].need(r)
            for n, s in zip(cls.patterns[k], cls.shapes, strict=True)
            for r in accelerators
        )
        free = sum(cls.free.get(r, 0) for r in accelerators)
        stranded[path].append((y.index, max(0, free - used)))
    for c, e in pl.empty.items():
        cls = layout.classes[c]
        path = min(cls.paths.values())
        paths[e.index] = path
        stranded[path].append((e.index, sum(cls.free.get(r, 0) for r in accelerators)))
    for (c, _s), v in pl.v.items():
        paths[v.index] = min(layout.classes[c].paths.values())
    for (_i, path), x in pl.x.items():
        paths[x.index] = path
    for key, z in pl.z.items():
        paths[z.index] = key[3]
    for (_i, path), q in pl.preferred.items():
        paths[q.index] = path
    for (_i, path), sl in pl.slices.items():
        paths[sl.index] = path
    domains = sorted(p for p in deepest if p)
    if len(domains) < MIN_DOMAINS:
        return None
    clusters = any(wd.obj.exclusive is not None for wd in model.data.workloads)
    return Neighbourhoods(paths, domains, dict(stranded), clusters=clusters)


def _related(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


class RackSearch:
    """The LNS loop of one stage, in a thread beside the full model's search:
    :meth:`start`, then :meth:`result` (which stops it)."""

    def __init__(self, model: CPModel, hoods: Neighbourhoods, seed: int) -> None:
        self.model = model
        self.hoods = hoods
        self.rng = random.Random(seed)
        self.rounds = 0
        self.improved = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._solvers: list[cp_model.CpSolver] = []
        self._threads: list[threading.Thread] = []
        self.best: dict[int, int] | None = None
        self.ceiling: int | None = None
        self.listener: Callable[[int], None] | None = None
        """Told each better stage value the loop reaches."""

    def _pick(self, values: dict[int, int], rng: random.Random) -> list[Path]:
        """Domains to free, at random, weighted by the GPUs stranded there."""
        weights = []
        for d in self.hoods.domains:
            waste = sum(g * values[i] for i, g in self.hoods.stranded.get(d, []))
            weights.append(1 + waste)
        chosen: list[Path] = []
        pool = list(range(len(self.hoods.domains)))
        for _ in range(min(DOMAINS_PER_ROUND, len(pool))):
            k = rng.choices(range(len(pool)), [weights[j] for j in pool])[0]
            chosen.append(self.hoods.domains[pool.pop(k)])
        return chosen

    def start(
        self, stage: Stage, values: dict[int, int], budget: Budget, threads: int = 1
    ) -> None:
        """Search from ``values`` until ``budget`` ends in ``threads`` loops that
        share the incumbent."""
        self.best = values
        self._threads = [
            threading.Thread(
                target=self._loop,
                args=(stage, budget, random.Random(self.rng.randrange(1 << 30))),
                daemon=True,
            )
            for _ in range(threads)
        ]
        for t in self._threads:
            t.start()

    def wait(self) -> None:
        """Until the budget given to :meth:`start` ends."""
        for t in self._threads:
            t.join()

    def stop(self) -> None:
        """End the loop soon (without waiting for it)."""
        self._stop.set()
        with self._lock:
            for solver in self._solvers:
                solver.stop_search()

    def result(self) -> dict[int, int] | None:
        """Stop the loop; the best values it reached (the start included)."""
        self.stop()
        for t in self._threads:
            t.join()
        return self.best

    def settle_at(self, bound: int) -> None:
        """A proven bound on the stage: the loop ends once it is reached."""
        with self._lock:
            self.ceiling = bound if self.ceiling is None else min(self.ceiling, bound)

    def _loop(self, stage: Stage, budget: Budget, rng: random.Random) -> None:
        try:
            sub = _SubModel(self.model, self.hoods, stage)
        except ValueError as exc:
            log.debug("no rack search: %s", exc)
            return
        while not self._stop.is_set() and budget.remaining() > LNS_FLOOR_SECONDS:
            values = self.best
            assert values is not None
            if self.ceiling is not None and stage.value(values) >= self.ceiling:
                break
            free: set[int] = set()
            for d in self._pick(values, rng):
                free |= self.hoods.members[d]
            model = sub.around(values, free)
            solver = cp_model.CpSolver()
            p = solver.parameters
            p.num_workers = 1
            p.random_seed = rng.randrange(1 << 30)
            p.max_time_in_seconds = min(ROUND_SECONDS, budget.remaining())
            p.max_presolve_iterations = 1
            p.cp_model_probing_level = 0
            with self._lock:
                if self._stop.is_set():
                    break
                self._solvers.append(solver)
            status = solver.solve(model)
            found = None
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                found = dict(enumerate(solver.response_proto.solution))
            value = stage.value(found) if found is not None else None
            with self._lock:
                self._solvers.remove(solver)
                self.rounds += 1
                assert self.best is not None
                better = value is not None and value > stage.value(self.best)
                if better:
                    self.best = found
                    self.improved += 1
            if better and value is not None and self.listener is not None:
                self.listener(value)


class _SubModel:
    """One loop's copy of the stage's model, edited in place from round to
    round: fixing the ~16,000 placement variables afresh took 30 ms of a
    round's 40 ms of Python at 1,000 hosts, longer than most sub-solves."""

    def __init__(self, model: CPModel, hoods: Neighbourhoods, stage: Stage) -> None:
        self.sub = model.model.clone()
        self.sub.maximize(
            sum(
                c * self.sub.get_int_var_from_proto_index(x.index)
                for c, x in stage.terms
            )
        )
        variables = self.sub.proto.variables
        self.tagged = hoods.tagged
        if any(len(variables[i].domain) != 2 for i in self.tagged):
            raise ValueError("placement variables with holes in their domains")
        self.span = {
            i: (variables[i].domain[0], variables[i].domain[1]) for i in self.tagged
        }
        self.fixed: dict[int, int | None] = dict.fromkeys(self.tagged)
        """Variable -> the value its domain is fixed at (None: its own domain)."""
        self.synced: dict[int, int] | None = None
        self.freed: set[int] = set()
        self.everything = list(range(len(variables)))

    def around(self, values: dict[int, int], free: set[int]) -> cp_model.CpModel:
        """The model with every tagged variable outside ``free`` fixed at
        ``values``, hinted with ``values``."""
        variables = self.sub.proto.variables
        if values is not self.synced:
            changed = self.tagged
            self.sub.clear_hints()  # type: ignore[no-untyped-call]
            hint = self.sub.proto.solution_hint
            hint.vars.extend(self.everything)
            hint.values.extend([values[i] for i in self.everything])
            self.synced = values
        else:
            changed = sorted(self.freed | free)
        for i in changed:
            want = None if i in free else values[i]
            if self.fixed[i] == want:
                continue
            domain = variables[i].domain
            if want is None:
                domain[0], domain[1] = self.span[i]
            else:
                domain[0] = domain[1] = want
            self.fixed[i] = want
        self.freed = free
        return self.sub
