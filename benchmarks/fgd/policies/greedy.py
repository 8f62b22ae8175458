"""placewise's online greedy: FGD's score with a CPU-stranding tie-break.

Why: on openb the GPU that FGD leaves idle at 130% is mostly (a) the 190 milli
left beside each 810-milli sharing pod, which no placement can avoid when
every pod that fits must be placed, and (b) whole cards on nodes whose CPU is
gone.  FGD's integer score ties on most nodes and the simulator then picks a
node by its random name prefix; breaking those ties by the stranding a node
would suffer keeps CPU next to idle GPU instead (measured: +0.5 points).

Stranding of a node with ``g`` idle GPU milli and ``c`` free milli-CPU is
``max(0, rho * g - c)``: the CPU that idle GPU would need, at ``rho``
milli-CPU per milli-GPU (12 = 12 cores per GPU, openb's G2 ratio), but
cannot get.  This module also provides the vectorised option scoring the
window policy builds its CP-SAT model from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState
from placewise.benchmarks.fgd.frag import TypicalPods, typical_pods
from placewise.benchmarks.fgd.policies.base import first_cards
from placewise.benchmarks.fgd.policies.fgd import FragCache, fgd_scores, sharing_options
from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import CARD_MILLI, Trace

__all__ = ["CPU_PER_GPU", "Options", "StrandAwareFGD", "pod_options", "stranding"]

IntArray = NDArray[np.int64]

CPU_PER_GPU = 12  # milli-CPU per milli-GPU the stranding term protects


def stranding(gpu_left: IntArray, cpu_left: IntArray, rho: int) -> IntArray:
    """milli-CPU missing for the idle GPU of each node (0 when CPU suffices)."""
    out: IntArray = np.maximum(0, rho * gpu_left - cpu_left)
    return out


@dataclass(frozen=True)
class Options:
    """Every place a pod could go now: node, card (-1 = whole cards / none), scores.

    ``key`` orders options the way the greedy does: FGD score first, then
    less added stranding, then the simulator's name-prefix tie-break.
    """

    node: IntArray
    card: IntArray
    score: IntArray
    strand: IntArray  # stranding added if the pod were alone on the node
    key: IntArray


def pod_options(
    tp: TypicalPods,
    state: FgdClusterState,
    f_before: NDArray[np.float64],
    pod: int,
    tie: IntArray,
    rho: int,
) -> Options:
    """All feasible options of ``pod`` on the current state, scored."""
    t = state.trace
    nodes = np.flatnonzero(state.feasible_nodes(pod))
    cpu, num, milli = int(t.pod_cpu[pod]), int(t.pod_num[pod]), int(t.pod_milli[pod])
    if num == 1 and 0 < milli < CARD_MILLI:
        rows, card, score = sharing_options(tp, state, f_before, pod, nodes)
        node = nodes[rows]
    elif len(nodes):
        score, card = fgd_scores(tp, state, f_before, pod, nodes)
        node = nodes
    else:
        node = card = score = np.zeros(0, dtype=np.int64)
    g, c = state.gpu_left[node], state.cpu_left[node]
    strand = stranding(g - num * milli, c - cpu, rho) - stranding(g, c, rho)
    span = int(tie.max()) + 1
    key = (score * (1 << 20) - strand) * span - tie[node]
    return Options(node=node, card=card, score=score, strand=strand, key=key)


class StrandAwareFGD:
    """Online: each arrival takes its best option by (FGD score, -stranding, prefix)."""

    name = "greedy"
    window = 1

    def __init__(
        self,
        trace: Trace,
        workload: Workload,
        rho: int = CPU_PER_GPU,
        tp: TypicalPods | None = None,
    ) -> None:
        self.tp = tp if tp is not None else typical_pods(trace)
        self.rho = rho
        self._tie = workload.tie_key
        self._cache: FragCache | None = None

    def f_before(self, state: FgdClusterState) -> NDArray[np.float64]:
        if self._cache is None:
            self._cache = FragCache(self.tp, state)
        return self._cache.refresh(state)

    def place(self, state: FgdClusterState, pod: int) -> Decision | None:
        opts = pod_options(
            self.tp, state, self.f_before(state), pod, self._tie, self.rho
        )
        if len(opts.node) == 0:
            return None
        i = int(np.argmax(opts.key))  # first max: lowest card on a node's ties
        return to_decision(state, pod, int(opts.node[i]), int(opts.card[i]))

    def decide(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        if len(pods) == 1:
            return [self.place(state, int(pods[0]))]
        return self.decide_sequence(state, pods)

    def decide_sequence(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        """Several arrivals in order on a scratch copy (valid in that order)."""
        scratch = state.copy()
        self._cache = None
        out: list[Decision | None] = []
        for p in pods:
            d = self.place(scratch, int(p))
            if d is not None:
                scratch.apply(int(p), d)
            out.append(d)
        self._cache = None
        return out


def to_decision(state: FgdClusterState, pod: int, node: int, card: int) -> Decision:
    """A node (and, for sharing pods, a card) turned into the cards taken."""
    t = state.trace
    num, milli = int(t.pod_num[pod]), int(t.pod_milli[pod])
    if num == 0:
        return Decision(node, ())
    if card >= 0:
        return Decision(node, (card,))
    return Decision(node, first_cards(state.cards[node], num, milli))
