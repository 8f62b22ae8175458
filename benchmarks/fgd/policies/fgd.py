"""FGD (Fragmentation Gradient Descent, ATC'23) as the simulator scores it.

Each feasible node scores ``int(sigmoid((F_before - F_after) / 1000) * 100)``
with F from :mod:`placewise.benchmarks.fgd.frag`; there is no normalisation, so many
nodes tie and the smallest ``rand.Perm`` prefix wins.  A sharing pod is tried
on every card that fits; the node's score is its best card's and the pod goes
to the first card (by index) reaching it.  Other pods subtract from the least
sufficient cards for scoring and take the first free cards on reserve.

F_before is cached per node and refreshed from the state's change log, so a
decision costs one vectorised F evaluation over the candidate after-states.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState
from placewise.benchmarks.fgd.frag import TypicalPods, frag_amount, typical_pods
from placewise.benchmarks.fgd.policies.base import first_cards
from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import CARD_MILLI, Trace

__all__ = ["FGD", "FragCache", "fgd_scores", "sharing_options", "sub_least_sufficient"]

IntArray = NDArray[np.int64]


def sub_least_sufficient(cards: IntArray, num: int, milli: int) -> IntArray:
    """Card rows after taking ``num`` x ``milli`` from the least sufficient cards.

    This is the simulator's ``NodeResource.Sub`` used for scoring; which
    equal card it picks does not change F, only the multiset matters.
    """
    order = np.argsort(cards, axis=1, kind="stable")
    srt = np.take_along_axis(cards, order, axis=1)
    ok = srt >= milli
    take = ok & (np.cumsum(ok, axis=1) <= num)
    out = cards.copy()
    np.put_along_axis(out, order, srt - take * milli, axis=1)
    return out


class FragCache:
    """F of every node's current state, kept in step with the change log."""

    def __init__(self, tp: TypicalPods, state: FgdClusterState) -> None:
        self.tp = tp
        self._reset(state)

    def _reset(self, state: FgdClusterState) -> None:
        self._state = state
        self._seen = len(state.changed)
        self.value = frag_amount(self.tp, state.cpu_left, state.cards, state.model_bit)

    def refresh(self, state: FgdClusterState) -> NDArray[np.float64]:
        """F per node for ``state``; a different state object starts afresh."""
        if state is not self._state:
            self._reset(state)
            return self.value
        if len(state.changed) > self._seen:
            nodes = np.unique(np.array(state.changed[self._seen :], dtype=np.int64))
            self.value[nodes] = frag_amount(
                self.tp,
                state.cpu_left[nodes],
                state.cards[nodes],
                state.model_bit[nodes],
            )
            self._seen = len(state.changed)
        return self.value


def sharing_options(
    tp: TypicalPods,
    state: FgdClusterState,
    f_before: NDArray[np.float64],
    pod: int,
    nodes: IntArray,
) -> tuple[IntArray, IntArray, IntArray]:
    """FGD's integer score of a sharing pod on every card of ``nodes`` that fits.

    Returns (row into ``nodes``, card index, score).  F is evaluated once per
    distinct card value of a node: equal cards give equal after-states, so
    the later ones copy the first one's score.
    """
    t = state.trace
    milli = int(t.pod_milli[pod])
    cpu_after = state.cpu_left[nodes] - int(t.pod_cpu[pod])
    cards = state.cards[nodes]
    k = cards.shape[1]
    same = cards[:, :, None] == cards[:, None, :]
    # first[r, c] = lowest card index holding the same value as card c
    first = np.argmax(same, axis=2)
    fits = cards >= milli
    lead = fits & (first == np.arange(k)[None, :])
    rows, cols = np.nonzero(lead)
    after = cards[rows].copy()
    after[np.arange(len(rows)), cols] -= milli
    fa = frag_amount(tp, cpu_after[rows], after, state.model_bit[nodes][rows])
    lead_score = np.zeros(cards.shape, dtype=np.int64)
    lead_score[rows, cols] = _score(f_before[nodes][rows], fa)
    all_rows, all_cols = np.nonzero(fits)
    return all_rows, all_cols, lead_score[all_rows, first[all_rows, all_cols]]


def fgd_scores(
    tp: TypicalPods,
    state: FgdClusterState,
    f_before: NDArray[np.float64],
    pod: int,
    nodes: IntArray,
) -> tuple[IntArray, IntArray]:
    """FGD's integer score and chosen card for each node in ``nodes``.

    The card is -1 when the pod takes whole cards (chosen on reserve).
    """
    t = state.trace
    cpu, num, milli = int(t.pod_cpu[pod]), int(t.pod_num[pod]), int(t.pod_milli[pod])
    if num == 1 and 0 < milli < CARD_MILLI:
        rows, cols, sc = sharing_options(tp, state, f_before, pod, nodes)
        # best card per node: max score, then lowest card index
        key = sc * 16 - cols
        best = np.full(len(nodes), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(best, rows, key)
        score = (best + 15) // 16
        return score, score * 16 - best
    cpu_after = state.cpu_left[nodes] - cpu
    cards = state.cards[nodes]
    after = sub_least_sufficient(cards, num, milli) if num else cards
    fa = frag_amount(tp, cpu_after, after, state.model_bit[nodes])
    return _score(f_before[nodes], fa), np.full(len(nodes), -1, dtype=np.int64)


def _score(f_before: NDArray[np.float64], f_after: NDArray[np.float64]) -> IntArray:
    x = (f_before - f_after) / 1000.0
    return (1.0 / (1.0 + np.exp(-x)) * 100.0).astype(np.int64)


class FGD:
    """Online FGD: each arrival goes where fragmentation grows least."""

    name = "fgd"
    window = 1

    def __init__(
        self, trace: Trace, workload: Workload, tp: TypicalPods | None = None
    ) -> None:
        self.tp = tp if tp is not None else typical_pods(trace)
        self._tie = workload.tie_key
        self._span = int(workload.tie_key.max()) + 1
        self._cache: FragCache | None = None

    def place(self, state: FgdClusterState, pod: int) -> Decision | None:
        if self._cache is None:
            self._cache = FragCache(self.tp, state)
        f_before = self._cache.refresh(state)
        nodes = np.flatnonzero(state.feasible_nodes(pod))
        if len(nodes) == 0:
            return None
        score, card = fgd_scores(self.tp, state, f_before, pod, nodes)
        i = int(np.argmax(score * self._span - self._tie[nodes]))
        node = int(nodes[i])
        t = state.trace
        num, milli = int(t.pod_num[pod]), int(t.pod_milli[pod])
        if num == 0:
            return Decision(node, ())
        if card[i] >= 0:
            return Decision(node, (int(card[i]),))
        return Decision(node, first_cards(state.cards[node], num, milli))

    def decide(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        if len(pods) != 1:
            raise ValueError("FGD is online: one arrival at a time")
        return [self.place(state, int(pods[0]))]
