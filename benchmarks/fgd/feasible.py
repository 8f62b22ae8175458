"""Independent per-card feasibility check that every placement goes through.

It keeps its own ledger in plain Python (no numpy, nothing imported from the
cluster state or any policy), so a bookkeeping bug in a policy or in
:class:`~placewise.benchmarks.fgd.cluster.FgdClusterState` shows up as a rejected
placement or a ledger mismatch instead of an inflated allocation.

Rules, from the simulator's filters (NodeResourcesFit + Open-Gpu-Share):

* CPU and memory requests fit in what is left on the node;
* a GPU pod may only use a node whose model is in its ``gpu_spec``;
* it takes exactly ``num`` distinct, existing cards, each with at least
  ``milli`` left; so a sharing pod (``milli < 1000``) sits inside one card
  and a whole-GPU pod (``milli = 1000``) takes fully free cards;
* a CPU-only pod takes no card.
"""

from __future__ import annotations

from collections.abc import Iterable

from placewise.benchmarks.fgd.trace import CARD_MILLI, Trace

__all__ = ["Infeasible", "Ledger", "audit"]


class Infeasible(ValueError):
    """A placement that breaks a per-node or per-card rule."""


class Ledger:
    """Free resources per node and per card, updated only by accepted pods."""

    def __init__(self, trace: Trace) -> None:
        self._t = trace
        self._cpu = [int(x) for x in trace.node_cpu]
        self._mem = [int(x) for x in trace.node_mem]
        self._cards = [[CARD_MILLI] * int(g) for g in trace.node_gpus]
        self._model = [trace.models[int(m)] for m in trace.node_model]
        self.used_gpu_milli = 0
        self.n_placed = 0

    def why_not(self, pod: int, node: int, cards: Iterable[int]) -> str | None:
        """The first rule the placement breaks, or None if it is feasible."""
        t = self._t
        if not 0 <= node < len(self._cpu):
            return f"node {node} does not exist"
        cards = list(cards)
        cpu, mem = int(t.pod_cpu[pod]), int(t.pod_mem[pod])
        num, milli = int(t.pod_num[pod]), int(t.pod_milli[pod])
        if cpu > self._cpu[node]:
            return f"cpu {cpu} > {self._cpu[node]} left"
        if mem > self._mem[node]:
            return f"memory {mem} > {self._mem[node]} left"
        if num == 0:
            return None if not cards else "CPU-only pod given cards"
        spec = t.pod_spec[pod]
        if spec and self._model[node] not in spec.split("|"):
            return f"model {self._model[node]} not in {spec}"
        if len(cards) != num or len(set(cards)) != num:
            return f"needs {num} distinct cards, got {cards}"
        have = self._cards[node]
        for c in cards:
            if not 0 <= c < len(have):
                return f"card {c} does not exist on a {len(have)}-card node"
            if have[c] < milli:
                return f"card {c} has {have[c]} milli left < {milli}"
        return None

    def commit(self, pod: int, node: int, cards: Iterable[int]) -> None:
        """Check, then book the placement; :class:`Infeasible` if it breaks a rule."""
        cards = list(cards)
        reason = self.why_not(pod, node, cards)
        if reason is not None:
            raise Infeasible(f"pod {self._t.pod_names[pod]} on node {node}: {reason}")
        t = self._t
        self._cpu[node] -= int(t.pod_cpu[pod])
        self._mem[node] -= int(t.pod_mem[pod])
        milli = int(t.pod_milli[pod])
        for c in cards:
            self._cards[node][c] -= milli
        self.used_gpu_milli += milli * len(cards)
        self.n_placed += 1

    def card_left(self, node: int) -> list[int]:
        return list(self._cards[node])


def audit(trace: Trace, placements: Iterable[tuple[int, int, Iterable[int]]]) -> Ledger:
    """Replay (pod, node, cards) placements on an empty cluster; raise on a breach."""
    ledger = Ledger(trace)
    for pod, node, cards in placements:
        ledger.commit(pod, node, cards)
    return ledger
