"""A simplified default-scheduler filter and score, for the kube-scheduler stand-in.

Covers what decides placement in our tests: NodeUnschedulable, TaintToleration
(NoSchedule/NoExecute), NodeAffinity (nodeSelector and required terms) and
NodeResourcesFit (requests vs allocatable minus bound pods, pod count), plus
a LeastAllocated-style score. Reasons use kube-scheduler's wording so the
"0/N nodes are available" message reads like the real one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from placewise.adapters.emulator.quantity import pod_requests, resource_units
from placewise.models.cluster import PODS
from placewise.models.scheduling import raw_requirement, raw_tolerates

JSON = dict[str, Any]

UNSCHEDULABLE_TAINT = {
    "key": "node.kubernetes.io/unschedulable",
    "effect": "NoSchedule",
}


def _meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def is_terminal(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def tolerates(tolerations: list[JSON], taint: JSON) -> bool:
    """``Toleration.ToleratesTaint`` for any of ``tolerations`` (the rule's
    home is :mod:`placewise.models.scheduling`)."""
    return raw_tolerates(tolerations, taint)


def _expr_match(expr: JSON, labels: dict[str, str]) -> bool:
    req = raw_requirement(expr)
    return req is not None and req.matches(labels)


def matches_affinity(pod: JSON, node: JSON) -> bool:
    spec = pod.get("spec") or {}
    labels = {str(k): str(v) for k, v in (_meta(node).get("labels") or {}).items()}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != str(value):
            return False
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return True
    fields = {"metadata.name": str(_meta(node).get("name", ""))}
    for term in required.get("nodeSelectorTerms") or []:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(_expr_match(e, labels) for e in exprs) and all(
            _expr_match(e, fields) for e in field_exprs
        ):
            return True
    return False


@dataclass
class NodeState:
    """A node with what its bound pods already use."""

    node: JSON
    used: dict[str, int] = field(default_factory=dict)
    pods: list[JSON] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(_meta(self.node).get("name", ""))

    @property
    def allocatable(self) -> dict[str, int]:
        return resource_units((self.node.get("status") or {}).get("allocatable"))

    def add(self, pod: JSON) -> None:
        self.pods.append(pod)
        for name, q in pod_requests(pod).items():
            self.used[name] = self.used.get(name, 0) + q

    def remove(self, pod: JSON) -> None:
        uid = _meta(pod).get("uid")
        self.pods = [p for p in self.pods if _meta(p).get("uid") != uid]
        for name, q in pod_requests(pod).items():
            self.used[name] = self.used.get(name, 0) - q


def cluster_state(nodes: list[JSON], pods: list[JSON]) -> dict[str, NodeState]:
    states = {str(_meta(n).get("name")): NodeState(n) for n in nodes}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node in states and not is_terminal(pod):
            states[node].add(pod)
    return states


def resource_reasons(pod: JSON, state: NodeState) -> list[str]:
    alloc, reasons = state.allocatable, []
    if PODS in alloc and len(state.pods) + 1 > alloc[PODS]:
        reasons.append("Too many pods")
    for name, want in sorted(pod_requests(pod).items()):
        if want > 0 and alloc.get(name, 0) - state.used.get(name, 0) < want:
            reasons.append(f"Insufficient {name}")
    return reasons


def static_reasons(pod: JSON, node: JSON) -> list[str]:
    """Reasons that preemption cannot fix (unschedulable, taints, affinity)."""
    spec, tolerations = (
        node.get("spec") or {},
        (pod.get("spec") or {}).get("tolerations") or [],
    )
    if spec.get("unschedulable") and not tolerates(tolerations, UNSCHEDULABLE_TAINT):
        return ["node(s) were unschedulable"]
    for taint in spec.get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(
            tolerations, taint
        ):
            value = f": {taint['value']}" if taint.get("value") else ""
            return [f"node(s) had untolerated taint {{{taint.get('key')}{value}}}"]
    if not matches_affinity(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    return []


def filter_nodes(
    pod: JSON, states: dict[str, NodeState]
) -> tuple[list[str], dict[str, str]]:
    """Feasible node names (sorted) and, for the others, the first failing reason."""
    feasible, failed = [], {}
    for name in sorted(states):
        reasons = static_reasons(pod, states[name].node) or resource_reasons(
            pod, states[name]
        )
        if reasons:
            failed[name] = reasons[0]
        else:
            feasible.append(name)
    return feasible, failed


def unschedulable_message(total: int, failed: dict[str, str]) -> str:
    counts = Counter(failed.values())
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
    return (
        f"0/{total} nodes are available: {parts}."
        if parts
        else f"0/{total} nodes are available."
    )


def least_allocated(pod: JSON, state: NodeState) -> int:
    """NodeResourcesFit LeastAllocated over cpu and memory, 0..100."""
    want, alloc, scores = pod_requests(pod), state.allocatable, []
    for name in ("cpu", "memory"):
        cap = alloc.get(name, 0)
        if cap <= 0:
            continue
        free = cap - state.used.get(name, 0) - want.get(name, 0)
        scores.append(max(0, free) * 100 // cap)
    return sum(scores) // len(scores) if scores else 0


def priority(pod: JSON) -> int:
    return int((pod.get("spec") or {}).get("priority") or 0)


def victims_on(pod: JSON, state: NodeState) -> list[JSON] | None:
    """Lowest-priority pods whose removal lets ``pod`` fit, or None when none suffice.

    Simplified from kube-scheduler's SelectVictimsOnNode: remove every lower
    priority pod, then reprieve the highest-priority ones while the pod still fits.
    """
    lower = [p for p in state.pods if priority(p) < priority(pod)]
    if not lower:
        return None
    trial = NodeState(state.node, dict(state.used), list(state.pods))
    for victim in lower:
        trial.remove(victim)
    if resource_reasons(pod, trial):
        return None
    victims = []
    for cand in sorted(lower, key=lambda p: -priority(p)):
        trial.add(cand)
        if resource_reasons(pod, trial):
            trial.remove(cand)
            victims.append(cand)
    return sorted(victims, key=priority)
