"""placewise's windowed policy: W arrivals placed jointly by CP-SAT.

Algorithm overview (per window of W consecutive arrivals; earlier placements
are fixed):

1. *Hint.*  Place the window one pod at a time with the stranding-aware
   greedy (:mod:`.greedy`) on a scratch copy.  This is a complete feasible
   solution, and the floor CP-SAT must beat.
2. *Options.*  Score every feasible (node, card) of every pod on the
   pre-window state: FGD's integer score, and the CPU stranding it adds.
   Keep each pod's top ``candidates`` nodes (all cards on them) plus its hint
   node; if the hint dropped a pod, keep at least W nodes per pod, which
   makes the restriction lossless for the question "do all pods fit?" (with
   W or more individually feasible nodes, a pod always finds one that no
   other window pod uses).
3. *Model.*  Booleans per option; per node CPU and memory rows; per card a
   capacity row where whole-GPU pods claim free cards through per-card
   Booleans (the device level below the host); per node a stranding
   variable ``st >= rho * gpu_left_after - cpu_left_after``.
4. *Solve.*  If the hint placed every pod, all pods must be placed and the
   objective is  sum(score) * 2^10 - sum(st)  (FGD's fragmentation score
   first, stranding second, evaluated jointly so two pods on one node see
   each other's CPU).  If it did not, a first solve maximises the GPU milli
   placed (then the pod count); only if that leaves pods out are they left
   out, and the second solve keeps that level.  An OPTIMAL first solve proves
   that not all pods fit; other cases are counted in :class:`WindowStats`.

Solves use deterministic time limits, one worker by default, and a fixed
random seed, so a seed's replay is reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.sat.python import cp_model

from benchmarks.fgd.cluster import ClusterState, Decision
from benchmarks.fgd.frag import TypicalPods
from benchmarks.fgd.policies.greedy import (
    CPU_PER_GPU,
    Options,
    StrandAwareFGD,
    pod_options,
)
from benchmarks.fgd.protocol import Workload
from benchmarks.fgd.trace import CARD_MILLI, Trace

__all__ = ["WindowParams", "WindowPolicy", "WindowStats"]

SCORE_WEIGHT = (
    1 << 10
)  # one FGD score point outweighs a node's stranding (0.1-core units)
STRAND_UNIT = 100  # stranding is counted in 0.1 cores: small coefficients, tight LP


@dataclass(frozen=True)
class WindowParams:
    """Knobs of the windowed policy; defaults are the measured configuration."""

    window: int = 32
    """Arrivals decided together (W)."""
    candidates: int = 8
    """Best nodes per pod kept in the model (more = slower, rarely better)."""
    time_limit: float = 1.0
    """CP-SAT deterministic time per solve (~seconds on this hardware)."""
    num_workers: int = 1
    """1 keeps runs reproducible; the bench parallelises across seeds instead."""
    rho: int = CPU_PER_GPU
    """milli-CPU per milli-GPU that the stranding term protects."""
    seed: int = 0
    """CP-SAT random seed."""


@dataclass
class WindowStats:
    """What happened across windows (for the report)."""

    windows: int = 0
    solves: int = 0
    status: dict[str, int] = field(default_factory=dict)
    improved: int = 0  # windows where CP-SAT changed the hint
    drop_windows: int = 0  # windows that left pods out
    drop_proven: int = 0  # ... with an OPTIMAL first solve (not all fit, proven)
    hint_dropped_more: int = 0  # windows where CP-SAT placed more than the hint
    model_bools: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


@dataclass
class _Model:
    m: cp_model.CpModel
    opt_pod: list[int]
    opt_node: list[int]
    opt_card: list[int]  # -1: whole cards or none
    opt_var: list[cp_model.IntVar]
    placed: list[cp_model.LinearExpr]
    free_card_var: dict[tuple[int, int], cp_model.IntVar]
    gpu_placed: cp_model.LinearExpr
    count_placed: cp_model.LinearExpr
    secondary: cp_model.LinearExpr


class WindowPolicy:
    """Joint placement of W arrivals at a time (see the module docstring)."""

    name = "window"

    def __init__(
        self,
        trace: Trace,
        workload: Workload,
        params: WindowParams | None = None,
        tp: TypicalPods | None = None,
    ) -> None:
        self.params = params or WindowParams()
        self.window = self.params.window
        self.greedy = StrandAwareFGD(trace, workload, rho=self.params.rho, tp=tp)
        self.tp = self.greedy.tp
        self._tie = workload.tie_key
        self.stats = WindowStats()

    # -- phases -----------------------------------------------------------

    def decide(self, state: ClusterState, pods: Sequence[int]) -> list[Decision | None]:
        t0 = time.perf_counter()
        pods = [int(p) for p in pods]
        hint = self.greedy._seq(state, pods)  # phase 1
        f_before = self.greedy.f_before(state)
        n_hint = sum(d is not None for d in hint)
        opts = [
            pod_options(self.tp, state, f_before, p, self._tie, self.params.rho)
            for p in pods
        ]
        if all(len(o.node) == 0 for o in opts):
            self._account(t0, [], "EMPTY")
            return [None] * len(pods)
        k = (
            self.params.candidates
            if n_hint == len(pods)
            else max(self.params.candidates, len(pods))
        )
        keep = [
            _top_nodes(o, k, None if d is None else d.node)
            for o, d in zip(opts, hint, strict=True)
        ]
        mdl = self._build(state, pods, opts, keep)  # phase 3
        self._set_hint(mdl, state, pods, hint)
        out, status = self._solve(
            mdl, state, pods, all_placed=n_hint == len(pods)
        )  # phase 4
        if out is None:
            self._account(t0, mdl.opt_var, "FALLBACK")
            return hint
        n_out = sum(d is not None for d in out)
        if n_out < len(pods):
            self.stats.drop_windows += 1
            self.stats.drop_proven += status[0] == "OPTIMAL"
        self.stats.hint_dropped_more += n_out > n_hint
        self.stats.improved += any(a != b for a, b in zip(out, hint, strict=True))
        self._account(t0, mdl.opt_var, status[-1])
        return out

    def _account(self, t0: float, bools: Sequence[object], status: str) -> None:
        st = self.stats
        st.windows += 1
        st.status[status] = st.status.get(status, 0) + 1
        st.model_bools.append(len(bools))
        st.seconds.append(time.perf_counter() - t0)

    def _build(
        self,
        state: ClusterState,
        pods: list[int],
        opts: list[Options],
        keep: list[np.ndarray],
    ) -> _Model:
        """Variables, per-node/per-card rows and the two objective expressions."""
        t = state.trace
        m = cp_model.CpModel()
        rho = self.params.rho
        opt_pod: list[int] = []
        opt_node: list[int] = []
        opt_card: list[int] = []
        opt_var: list[cp_model.IntVar] = []
        score_terms: list[cp_model.LinearExpr] = []
        placed: list[cp_model.LinearExpr] = []
        by_node: dict[int, list[int]] = {}
        for i, (p, o, sel) in enumerate(zip(pods, opts, keep, strict=True)):
            mine: list[cp_model.IntVar] = []
            for j in np.flatnonzero(sel):
                n, c = int(o.node[j]), int(o.card[j])
                v = m.new_bool_var(f"P{i}_N{n}_C{c}")
                opt_pod.append(i)
                opt_node.append(n)
                opt_card.append(c)
                opt_var.append(v)
                by_node.setdefault(n, []).append(len(opt_var) - 1)
                score_terms.append(int(o.score[j]) * v)
                mine.append(v)
            m.add_at_most_one(mine)
            placed.append(sum(mine) if mine else cp_model.LinearExpr.constant(0))
        free_card_var: dict[tuple[int, int], cp_model.IntVar] = {}
        strand_vars: list[cp_model.IntVar] = []
        for n, ix in by_node.items():
            cpu = [int(t.pod_cpu[pods[opt_pod[q]]]) * opt_var[q] for q in ix]
            mem = [int(t.pod_mem[pods[opt_pod[q]]]) * opt_var[q] for q in ix]
            gpu = [t.pod_gpu_milli(pods[opt_pod[q]]) * opt_var[q] for q in ix]
            m.add(sum(cpu) <= int(state.cpu_left[n]))
            m.add(sum(mem) <= int(state.mem_left[n]))
            self._cards(
                m, state, pods, n, ix, opt_pod, opt_card, opt_var, free_card_var
            )
            g0, c0 = int(state.gpu_left[n]), int(state.cpu_left[n])
            st = m.new_int_var(0, max(0, rho * g0) // STRAND_UNIT + 1, f"N{n}_strand")
            m.add(STRAND_UNIT * st >= rho * (g0 - sum(gpu)) - (c0 - sum(cpu)))
            strand_vars.append(st)
        gpu_placed = sum(
            t.pod_gpu_milli(p) * e for p, e in zip(pods, placed, strict=True)
        )
        return _Model(
            m=m,
            opt_pod=opt_pod,
            opt_node=opt_node,
            opt_card=opt_card,
            opt_var=opt_var,
            placed=placed,
            free_card_var=free_card_var,
            gpu_placed=gpu_placed,
            count_placed=sum(placed),
            secondary=SCORE_WEIGHT * sum(score_terms) - sum(strand_vars),
        )

    @staticmethod
    def _cards(
        m: cp_model.CpModel,
        state: ClusterState,
        pods: list[int],
        n: int,
        ix: list[int],
        opt_pod: list[int],
        opt_card: list[int],
        opt_var: list[cp_model.IntVar],
        free_card_var: dict[tuple[int, int], cp_model.IntVar],
    ) -> None:
        """Per-card capacity; whole-GPU pods claim free cards via Booleans."""
        t = state.trace
        row = state.cards[n]
        whole = [q for q in ix if opt_card[q] < 0 and t.pod_num[pods[opt_pod[q]]] > 0]
        share: dict[int, list[int]] = {}
        for q in ix:
            if opt_card[q] >= 0:
                share.setdefault(opt_card[q], []).append(q)
        claim: dict[int, cp_model.IntVar] = {}
        if whole:
            for c in np.flatnonzero(row == CARD_MILLI):
                claim[int(c)] = m.new_bool_var(f"N{n}_C{int(c)}_whole")
                free_card_var[n, int(c)] = claim[int(c)]
            m.add(
                sum(claim.values())
                == sum(int(t.pod_num[pods[opt_pod[q]]]) * opt_var[q] for q in whole)
            )
        for c in set(share) | set(claim):
            load = [
                int(t.pod_milli[pods[opt_pod[q]]]) * opt_var[q]
                for q in share.get(c, [])
            ]
            if c in claim:
                load.append(CARD_MILLI * claim[c])
            if len(load) > 1:
                m.add(sum(load) <= int(row[c]))

    @staticmethod
    def _set_hint(
        mdl: _Model, state: ClusterState, pods: list[int], hint: list[Decision | None]
    ) -> None:
        want: set[tuple[int, int, int]] = set()
        claims: set[tuple[int, int]] = set()
        for i, d in enumerate(hint):
            if d is None:
                continue
            sharing = state.trace.is_sharing(pods[i])
            want.add((i, d.node, d.cards[0] if sharing else -1))
            if not sharing:
                claims.update((d.node, c) for c in d.cards)
        for q, v in enumerate(mdl.opt_var):
            mdl.m.add_hint(
                v, (mdl.opt_pod[q], mdl.opt_node[q], mdl.opt_card[q]) in want
            )
        for key, v in mdl.free_card_var.items():
            mdl.m.add_hint(v, key in claims)

    def _solver(self) -> cp_model.CpSolver:
        s = cp_model.CpSolver()
        s.parameters.max_deterministic_time = self.params.time_limit
        s.parameters.max_time_in_seconds = (
            10.0 * self.params.time_limit + 5.0
        )  # safety net
        s.parameters.num_workers = self.params.num_workers
        s.parameters.random_seed = self.params.seed
        # Full LP relaxation: these small assignment models are then mostly
        # proved optimal in a few hundredths of deterministic time.
        s.parameters.linearization_level = 2
        return s

    def _solve(
        self, mdl: _Model, state: ClusterState, pods: list[int], all_placed: bool
    ) -> tuple[list[Decision | None] | None, list[str]]:
        """Stage 1 only when the hint left pods out; stage 2 always."""
        statuses: list[str] = []
        good = (cp_model.OPTIMAL, cp_model.FEASIBLE)
        if all_placed:
            for e in mdl.placed:
                mdl.m.add(e == 1)
        else:
            weight = len(pods) + 1  # 10 milli of GPU outweigh any pod count
            level = weight * mdl.gpu_placed + mdl.count_placed
            mdl.m.maximize(level)
            s = self._solver()
            code = s.solve(mdl.m)
            self.stats.solves += 1
            statuses.append(s.status_name(code))
            if code not in good:
                return None, statuses
            best = int(round(s.objective_value))
            mdl.m.clear_hints()
            for v in mdl.opt_var:
                mdl.m.add_hint(v, bool(s.boolean_value(v)))
            for v in mdl.free_card_var.values():
                mdl.m.add_hint(v, bool(s.boolean_value(v)))
            mdl.m.add(level >= best)
        mdl.m.maximize(mdl.secondary)
        s = self._solver()
        code = s.solve(mdl.m)
        self.stats.solves += 1
        statuses.append(s.status_name(code))
        if code not in good:
            return None, statuses
        return _decisions(mdl, s, state, pods), statuses


def _top_nodes(o: Options, k: int, must: int | None) -> np.ndarray:
    """Options on the pod's k best nodes (by best option key), plus ``must``."""
    if len(o.node) == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(-o.key, kind="stable")
    chosen: list[int] = []
    seen: set[int] = set()
    for j in order:
        n = int(o.node[j])
        if n not in seen:
            seen.add(n)
            chosen.append(n)
            if len(chosen) == k:
                break
    if must is not None:
        chosen.append(must)
    return np.isin(o.node, np.array(chosen, dtype=np.int64))


def _decisions(
    mdl: _Model, s: cp_model.CpSolver, state: ClusterState, pods: list[int]
) -> list[Decision | None]:
    """Chosen options to decisions; whole-GPU pods share out their node's claimed cards."""
    t = state.trace
    out: list[Decision | None] = [None] * len(pods)
    claimed: dict[int, list[int]] = {}
    for (n, c), v in sorted(mdl.free_card_var.items()):
        if s.boolean_value(v):
            claimed.setdefault(n, []).append(c)
    for q, v in enumerate(mdl.opt_var):
        if not s.boolean_value(v):
            continue
        i, n, c = mdl.opt_pod[q], mdl.opt_node[q], mdl.opt_card[q]
        num = int(t.pod_num[pods[i]])
        if num == 0:
            out[i] = Decision(n, ())
        elif c >= 0:
            out[i] = Decision(n, (c,))
        else:
            take, claimed[n] = claimed[n][:num], claimed[n][num:]
            out[i] = Decision(n, tuple(take))
    return out
