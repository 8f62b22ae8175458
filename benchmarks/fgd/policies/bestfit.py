"""Best-Fit as the FGD simulator scores it (the published 93.1% baseline).

Score per feasible node, computed in the simulator's float order and then
truncated to an int, which is what makes ties frequent and the tie-break
(smallest ``rand.Perm`` name prefix) matter::

    s = (cpu_left - cpu) / 128000 * 0.5 + (gpu_left - num*milli) / 8000 * 0.5
    score = int((1 - s) * 100)

The scheduler's min-max normalisation is strictly monotone for a spread of at
most 100 and is therefore skipped.  Card choice: a sharing pod takes the
tightest card, whole-GPU pods the first free cards by index.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placewise.benchmarks.fgd.cluster import Decision, FgdClusterState
from placewise.benchmarks.fgd.policies.base import first_cards, tightest_card
from placewise.benchmarks.fgd.protocol import Workload
from placewise.benchmarks.fgd.trace import CARD_MILLI

__all__ = ["BestFit"]

_MAX_SPEC_CPU = 128000.0
_MAX_SPEC_GPU = 8000.0


class BestFit:
    """Online Best-Fit: each arrival goes to the tightest node, at once."""

    name = "bestfit"
    window = 1

    def __init__(self, workload: Workload) -> None:
        # Larger key wins; subtracting the perm prefix makes the smallest
        # prefix win among equal integer scores.
        self._tie = workload.tie_key
        self._span = int(workload.tie_key.max()) + 1

    def place(self, state: FgdClusterState, pod: int) -> Decision | None:
        t = state.trace
        ok = state.feasible_nodes(pod)
        if not ok.any():
            return None
        cpu, num, milli = (
            int(t.pod_cpu[pod]),
            int(t.pod_num[pod]),
            int(t.pod_milli[pod]),
        )
        s = (state.cpu_left - cpu) / _MAX_SPEC_CPU * 0.5
        s = s + (state.gpu_left - num * milli) / _MAX_SPEC_GPU * 0.5
        score = ((1.0 - s) * 100.0).astype(np.int64)
        key = np.where(ok, score * self._span - self._tie, np.iinfo(np.int64).min)
        node = int(np.argmax(key))
        if num == 0:
            return Decision(node, ())
        row = state.cards[node]
        if milli < CARD_MILLI:
            return Decision(node, (tightest_card(row, milli),))
        return Decision(node, first_cards(row, num, milli))

    def decide(
        self, state: FgdClusterState, pods: Sequence[int]
    ) -> list[Decision | None]:
        if len(pods) != 1:
            raise ValueError("Best-Fit is online: one arrival at a time")
        return [self.place(state, int(pods[0]))]
