"""Mutable per-node, per-card cluster state shared by the replay and policies.

Cards are modelled explicitly (a device level below the host): ``cards[n, c]``
is the milli-GPU left on card c of node n, padded with 0 beyond the node's
card count, so a padded slot can never host anything and adds nothing to a
sum.  Policies read these arrays; only :meth:`FgdClusterState.apply` writes them,
and the replay calls it only after the independent checker accepted the
placement.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from placewise.benchmarks.fgd.trace import CARD_MILLI, MAX_CARDS, Trace

__all__ = ["Decision", "FgdClusterState"]

IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class Decision:
    """Where one pod goes: a node and the cards it takes (empty for CPU-only)."""

    node: int
    cards: tuple[int, ...]


class FgdClusterState:
    """Free CPU, memory and per-card GPU milli of every node.

    ``changed`` is an append-only log of touched nodes, so a policy can keep
    per-node caches (e.g. FGD's fragmentation) and refresh only what moved.
    """

    def __init__(self, trace: Trace) -> None:
        n = trace.n_nodes
        self.trace = trace
        self.cpu_left: IntArray = trace.node_cpu.copy()
        self.mem_left: IntArray = trace.node_mem.copy()
        self.cards: IntArray = np.zeros((n, MAX_CARDS), dtype=np.int64)
        for i in range(n):
            self.cards[i, : int(trace.node_gpus[i])] = CARD_MILLI
        self.gpu_left: IntArray = self.cards.sum(axis=1)
        self.free_cards: IntArray = (self.cards == CARD_MILLI).sum(axis=1)
        self.max_left: IntArray = self.cards.max(axis=1)
        self.model_bit: IntArray = np.left_shift(1, trace.node_model)
        self.changed: list[int] = []

    @property
    def used_gpu_milli(self) -> int:
        return int(self.trace.total_gpu_milli - self.gpu_left.sum())

    def copy(self) -> FgdClusterState:
        """An independent scratch copy (the change log starts empty)."""
        out = FgdClusterState.__new__(FgdClusterState)
        out.trace = self.trace
        out.cpu_left = self.cpu_left.copy()
        out.mem_left = self.mem_left.copy()
        out.cards = self.cards.copy()
        out.gpu_left = self.gpu_left.copy()
        out.free_cards = self.free_cards.copy()
        out.max_left = self.max_left.copy()
        out.model_bit = self.model_bit
        out.changed = []
        return out

    def feasible_nodes(self, pod: int) -> NDArray[np.bool_]:
        """Nodes that pass the simulator's filters for this pod, vectorised.

        This is the policies' fast pre-filter; the authoritative check is
        :mod:`placewise.benchmarks.fgd.feasible`, which shares no code with it.
        """
        t = self.trace
        ok: NDArray[np.bool_] = (self.cpu_left >= t.pod_cpu[pod]) & (
            self.mem_left >= t.pod_mem[pod]
        )
        num = int(t.pod_num[pod])
        if num == 0:
            return ok
        milli = int(t.pod_milli[pod])
        ok &= (self.model_bit & int(t.pod_model_mask[pod])) != 0
        if num == 1:
            ok &= self.max_left >= milli
        elif milli == CARD_MILLI:
            ok &= self.free_cards >= num
        else:
            ok &= (self.cards >= milli).sum(axis=1) >= num
        return ok

    def apply(self, pod: int, d: Decision) -> None:
        """Commit a placement (the caller has validated it)."""
        t = self.trace
        n = d.node
        self.cpu_left[n] -= t.pod_cpu[pod]
        self.mem_left[n] -= t.pod_mem[pod]
        milli = int(t.pod_milli[pod])
        for c in d.cards:
            self.cards[n, c] -= milli
        if d.cards:
            row = self.cards[n]
            self.gpu_left[n] = row.sum()
            self.free_cards[n] = int((row == CARD_MILLI).sum())
            self.max_left[n] = row.max()
        self.changed.append(n)
