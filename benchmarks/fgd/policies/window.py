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
from numpy.typing import NDArray

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState
from placewise.benchmarks.fgd.frag import TypicalPods
from placewise.benchmarks.fgd.policies.greedy import (
    CPU_PER_GPU,
    Options,
    StrandAwareFGD,
    pod_options,
)
from placewise.benchmarks.fgd.policies.window_model import SolveParams, WindowModel
from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import Trace

__all__ = ["WindowParams", "WindowPolicy", "WindowStats"]


@dataclass(frozen=True)
class WindowParams:
    """Knobs of the windowed policy; defaults are the measured configuration."""

    window: int = 32
    """Arrivals decided together (W)."""
    candidates: int = 8
    """Best nodes per pod kept in the model (more = slower, rarely better)."""
    time_limit: float = 0.5
    """CP-SAT deterministic time per solve; most windows finish far below it."""
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
    status: dict[str, int] = field(default_factory=dict)
    changed: int = 0  # windows where CP-SAT's plan differs from the greedy hint
    drop_windows: int = 0  # windows that left pods out
    drop_proven: int = 0  # ... after an OPTIMAL stage 1: not all fit, proven
    placed_more: int = 0  # windows where CP-SAT placed more pods than the hint
    model_bools: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)  # wall per window
    cpu_seconds: list[float] = field(default_factory=list)  # process CPU per window


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
        self._solve_params = SolveParams(
            self.params.time_limit, self.params.num_workers, self.params.seed
        )

    def decide(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        t0, c0 = time.perf_counter(), time.process_time()
        pods = [int(p) for p in pods]
        # Phase 1: the greedy, one pod at a time on a scratch copy.
        hint = self.greedy.decide_sequence(state, pods)
        n_hint = sum(d is not None for d in hint)
        all_fit = n_hint == len(pods)
        # Phase 2: every pod's options on the pre-window state, then the cut.
        f_before = self.greedy.f_before(state)
        opts = [
            pod_options(self.tp, state, f_before, p, self._tie, self.params.rho)
            for p in pods
        ]
        k = (
            self.params.candidates
            if all_fit
            else max(self.params.candidates, len(pods))
        )
        keep = [
            _top_nodes(o, k, None if d is None else d.node)
            for o, d in zip(opts, hint, strict=True)
        ]
        # Phases 3 and 4: the joint model, started from the greedy.
        model = WindowModel(state, pods, opts, keep, self.params.rho)
        model.hint(hint)
        out, statuses = model.solve(self._solve_params, all_fit)
        if out is None:
            out, statuses = hint, [*statuses, "FALLBACK"]
        n_out = sum(d is not None for d in out)
        st = self.stats
        if n_out < len(pods):
            st.drop_windows += 1
            st.drop_proven += bool(statuses) and statuses[0] == "OPTIMAL"
        st.placed_more += n_out > n_hint
        st.changed += out != hint
        st.windows += 1
        st.status[statuses[-1]] = st.status.get(statuses[-1], 0) + 1
        st.model_bools.append(model.n_bools)
        st.seconds.append(time.perf_counter() - t0)
        st.cpu_seconds.append(time.process_time() - c0)
        return out


def _top_nodes(o: Options, k: int, must: int | None) -> NDArray[np.bool_]:
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
    out: NDArray[np.bool_] = np.isin(o.node, np.array(chosen, dtype=np.int64))
    return out
