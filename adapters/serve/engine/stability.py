"""When a re-solve may take back what the loop decided: only after a change.

The loop re-solves on every cache event, and most events are its own writes
(admissions, evictions) or their expected consequences (Kueue clearing an
evicted Workload's reservation).  An optimizer that sees the same pending
work again would happily trade a workload admitted seconds ago for another
one of equal worth, so the loop would keep evicting its own admissions.

So every solve records the *facts* it read, leaving out what the loop's own
decisions change.  When the facts are the same as at the previous published
plan, the previous plan's decisions stand: every running Workload that plan
did not name as a victim or move (and that is not already being evicted) is
marked not preemptible (:attr:`placewise.models.workload.Workload.preemptible`),
so not movable either.  Pending work may still be admitted into free room,
and the previous plan's victims may still be preempted for their preemptors
and its moved Workloads moved.

Something changed, precisely, when between two solves:

* a Workload appeared, was deleted or recreated (new UID), finished, was
  (de)activated, or changed priority, priority class, queue or pod sets
  (arrival, completion, priority change, resize);
* a Node appeared or went away, or changed allocatable, labels, taints,
  readiness or schedulability;
* the node usage of bound non-TAS pods changed (one bound, finished, deleted);
* a ClusterQueue, Cohort, ResourceFlavor, LocalQueue, Topology,
  (Workload)PriorityClass or Namespace changed;
* a PodDisruptionBudget refused an eviction or a move (or that refusal
  expired): the plan that chose it cannot happen, so another may.

Not a change: a Workload's status (admission, QuotaReserved, Admitted,
Evicted, Preempted, Requeued), which is what the loop and Kueue's controllers
write while carrying out a decision.  The first solve after a start has no
previous plan and is free, as is every solve after a change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from placewise.models.plan import Plan
from placewise.models.workload import Workload

_CONFIG_TABLES = (
    "flavors",
    "cluster_queues",
    "cohorts",
    "local_queues",
    "priority_classes",
    "pod_priority_classes",
    "topologies",
    "namespaces",
)
_CONFIG_NAMES = {
    "flavors": "ResourceFlavor",
    "cluster_queues": "ClusterQueue",
    "cohorts": "Cohort",
    "local_queues": "LocalQueue",
    "priority_classes": "WorkloadPriorityClass",
    "pod_priority_classes": "PriorityClass",
    "topologies": "Topology",
    "namespaces": "Namespace",
}


def _workload_fact(w: Workload) -> tuple[Any, ...]:
    """What the user (not the loop) decides about a workload."""
    return (
        w.uid,
        w.priority,
        w.priority_set,
        w.priority_class,
        w.queue_name,
        w.pod_sets,
        w.active,
        w.finished,
        w.max_execution_seconds,
        w.expected_seconds,
    )


@dataclass(frozen=True)
class Facts:
    """The inputs of one solve that only the outside world changes."""

    workloads: Mapping[str, tuple[Any, ...]]
    nodes: Mapping[str, Any]
    pods: Mapping[str, tuple[Any, ...]]
    config: Mapping[str, Mapping[str, Any]]
    refused: frozenset[str] = frozenset()
    """Workloads a PodDisruptionBudget keeps in place for now (the
    builder's ``protected``): a refusal is news from the outside world, so
    the next solve is free to pick other victims or moves."""

    @staticmethod
    def of(tables: Mapping[str, Mapping[str, Any]]) -> Facts:
        """From the decoded tables the snapshot is built from."""
        pods = {
            key: (pod.node_name, pod.requests)
            for key, pod in tables["pods"].items()
            if pod.consumes_node
        }
        return Facts(
            workloads={k: _workload_fact(w) for k, w in tables["workloads"].items()},
            nodes=dict(tables["nodes"]),
            pods=pods,
            config={t: dict(tables[t]) for t in _CONFIG_TABLES},
        )

    def change_since(self, before: Facts) -> str | None:
        """The first difference from ``before``, for people; None if none."""
        found = _diff("Workload", before.workloads, self.workloads)
        if found:
            return found
        found = _diff("Node", before.nodes, self.nodes)
        if found:
            return found
        found = _diff("bound pod", before.pods, self.pods)
        if found:
            return found
        for table in _CONFIG_TABLES:
            found = _diff(
                _CONFIG_NAMES[table], before.config[table], self.config[table]
            )
            if found:
                return found
        if self.refused != before.refused:
            return "a PodDisruptionBudget refusal began or ended"
        return None


def _diff(kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    if old == new:
        return None
    for key in sorted(set(old) | set(new)):
        if key not in old:
            return f"{kind} {key} appeared"
        if key not in new:
            return f"{kind} {key} went away"
        if old[key] != new[key]:
            return f"{kind} {key} changed"
    return None  # pragma: no cover - equal key sets with equal values


@dataclass(frozen=True)
class Baseline:
    """The previous published plan: what it read and whom it evicts."""

    facts: Facts
    victims: frozenset[str]
    """Its preemption victims and the workloads it moves.  A move is an
    eviction first, and a plan can be replaced before anything acted on it
    (the next solve starts on the cache event of the previous plan's own
    writes): were a moved workload kept in place, the next plan could no
    longer move it, and with nothing changing outside, no plan after it
    either (the gang it made room for would wait for ever)."""

    @staticmethod
    def of(facts: Facts, plan: Plan) -> Baseline:
        """The baseline a published ``plan`` built on ``facts`` leaves."""
        evicts = {p.workload for p in plan.preemptions}
        return Baseline(facts, frozenset(evicts | {m.workload for m in plan.moves}))


def held_back(
    workloads: Mapping[str, Workload], baseline: Baseline | None, facts: Facts
) -> tuple[str | None, frozenset[str]]:
    """(why this solve is free, or None; the running workloads it must keep)."""
    if baseline is None:
        return "first plan", frozenset()
    change = facts.change_since(baseline.facts)
    if change is not None:
        return change, frozenset()
    return None, frozenset(
        key
        for key, w in workloads.items()
        if w.is_running and not w.evicted and key not in baseline.victims
    )


def protect(workloads: dict[str, Workload], keys: Iterable[str]) -> None:
    """Mark ``keys`` not preemptible in place (the tables before the build)."""
    for key in keys:
        w = workloads.get(key)
        if w is not None and w.preemptible:
            workloads[key] = w.model_copy(update={"preemptible": False})
