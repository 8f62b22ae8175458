"""A plan projected onto pods: which node each member of an admitted gang gets.

The solver decides per pod set (flavor, topology domains with counts); the
extender and binder act per pod.  With a hostname-level assignment the nodes
are the plan's; with a coarser topology level or a flavor without topology the
hosts inside the decided domain are chosen here, first-fit by name on free
capacity, after every hostname-level placement of the same plan is reserved.
Members already bound keep their node; the rest fill the remaining slots in
name order, so the projection of one plan is stable between a filter call and
the bind that follows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from placewise.adapters.serve.engine import gangs as gangmod
from placewise.adapters.serve.engine.snapshot import Built, GangView
from placewise.models.cluster import HOSTNAME_LABEL, PODS, Node, ResourceFlavor
from placewise.models.plan import Plan, PlanAdmission
from placewise.models.scheduling import untolerated
from placewise.models.workload import PodSet, PodSetAssignment

JSON = dict[str, Any]
Usage = dict[str, dict[str, int]]


@dataclass
class GangPlan:
    """What the current plan says about one gang."""

    key: str
    admitted: bool
    reason: str = ""
    """Pending reason (empty when admitted)."""
    nodes: dict[str, str] = field(default_factory=dict)
    """pod name -> planned node, every member of an admitted gang."""
    assignment: dict[str, dict[str, int]] = field(default_factory=dict)
    """pod set -> node -> count, the whole gang (the binding annotation)."""
    victims: tuple[str, ...] = ()
    """Workload keys the plan preempts for this gang."""


def node_usage(built: Built, node_of: Any) -> Usage:
    """Requests of every live bound pod per node (deleting pods still hold room)."""
    usage: Usage = {}
    pods = built.snapshot.pods
    for key, pod in pods.items():
        node = pod.node_name or node_of(key)
        if node is None or pod.phase in ("Succeeded", "Failed"):
            continue
        acc = usage.setdefault(node, {})
        for r, v in pod.requests.items():
            acc[r] = acc.get(r, 0) + v
        acc[PODS] = acc.get(PODS, 0) + 1
    return usage


def fits(node: Node, used: dict[str, int], request: dict[str, int]) -> bool:
    for r, v in request.items():
        if v and used.get(r, 0) + v > node.allocatable.get(r, 0):
            return False
    return True


def add(used: dict[str, int], request: dict[str, int], times: int = 1) -> None:
    for r, v in request.items():
        used[r] = used.get(r, 0) + v * times


class Projector:
    """Turns one plan into :class:`GangPlan` records for the gangs in it."""

    def __init__(self, built: Built, plan: Plan, usage: Usage) -> None:
        self.built, self.plan = built, plan
        self.nodes = built.snapshot.nodes
        self.by_hostname = {
            n.labels.get(HOSTNAME_LABEL, n.name): n.name for n in self.nodes.values()
        }
        self.usage: Usage = {n: dict(u) for n, u in usage.items()}
        self.victims: dict[str, list[str]] = {}
        for p in plan.preemptions:
            self.victims.setdefault(p.preemptor, []).append(p.workload)
        self._release_victims()

    def _release_victims(self) -> None:
        """Room held by victims is free for the hosts chosen here."""
        doomed = {p.workload for p in self.plan.preemptions}
        for key in doomed:
            view = self.built.gangs.get(key)
            if view is None:
                continue
            for pod in view.gang.pods:
                name = str(gangmod.meta(pod).get("name"))
                node = view.nodes.get(name)
                model = self.built.snapshot.pods.get(f"{view.gang.namespace}/{name}")
                if node and model is not None and node in self.usage:
                    add(self.usage[node], {**model.requests, PODS: 1}, -1)

    def project(self) -> dict[str, GangPlan]:
        out: dict[str, GangPlan] = {}
        admissions = {a.workload: a for a in self.plan.admissions}
        # Hostname-level placements are the plan's own: reserve them first.
        ordered = sorted(
            (k for k in admissions if k in self.built.gangs),
            key=lambda k: (not _hostname_level(admissions[k]), k),
        )
        for key in ordered:
            out[key] = self._admitted(self.built.gangs[key], admissions[key])
        for p in self.plan.pending:
            if p.workload in self.built.gangs:
                out[p.workload] = GangPlan(p.workload, False, p.reason)
        for key, gang in self.built.waiting.items():
            out[key] = GangPlan(key, False, gang.waiting_for or "waiting")
        return out

    def _admitted(self, view: GangView, adm: PlanAdmission) -> GangPlan:
        gp = GangPlan(view.key, True, victims=tuple(self.victims.get(view.key, ())))
        psas = {p.name: p for p in adm.pod_set_assignments}
        for name, members in view.pod_sets:
            psa = psas.get(name)
            if psa is None or psa.count < len(members):
                return GangPlan(view.key, False, f"pod set {name} not fully admitted")
            slots = self._slots(view, psa, members)
            if slots is None:
                return GangPlan(
                    view.key,
                    False,
                    f"admitted, but no node has room for pod set {name} "
                    "within its assigned domain",
                )
            remaining = dict(slots)
            unplaced = []
            for pod in members:
                pname = str(gangmod.meta(pod).get("name"))
                node = view.nodes.get(pname)
                if node and remaining.get(node, 0) > 0:
                    remaining[node] -= 1
                    gp.nodes[pname] = node
                else:
                    unplaced.append(pname)
            free = [n for n in sorted(remaining) for _ in range(remaining[n])]
            for pname, node in zip(unplaced, free, strict=False):
                gp.nodes[pname] = node
            if len(unplaced) > len(free):
                return GangPlan(
                    view.key, False, f"pod set {name}: bound members are off-plan"
                )
            gp.assignment[name] = dict(sorted(slots.items()))
        return gp

    def _slots(
        self, view: GangView, psa: PodSetAssignment, members: list[JSON]
    ) -> dict[str, int] | None:
        """node -> pod count for one pod set, reserving the room it takes."""
        model = self.built.snapshot.workloads.get(view.key)
        ps = model.pod_set(psa.name) if model is not None else None
        request = {**(dict(ps.requests) if ps else {}), PODS: 1}
        ta = psa.topology_assignment
        if ta is not None and list(ta.levels) == [HOSTNAME_LABEL]:
            slots: dict[str, int] = {}
            for d in ta.domains:
                node = self.by_hostname.get(d.values[0], d.values[0])
                slots[node] = slots.get(node, 0) + d.count
            for node, count in slots.items():
                add(self.usage.setdefault(node, {}), request, count)
            return slots
        candidates = self._candidates(view, psa, ps)
        wanted: list[tuple[list[str], int]] = []
        if ta is not None:
            for d in ta.domains:
                inside = [
                    n
                    for n in candidates
                    if all(
                        self.nodes[n].labels.get(lvl) == v
                        for lvl, v in zip(ta.levels, d.values, strict=False)
                    )
                ]
                wanted.append((inside, d.count))
        else:
            wanted.append((candidates, len(members)))
        slots = {}
        for nodes, count in wanted:
            for _ in range(count):
                for n in nodes:
                    used = self.usage.setdefault(n, {})
                    if fits(self.nodes[n], used, request):
                        add(used, request)
                        slots[n] = slots.get(n, 0) + 1
                        break
                else:
                    for n, c in slots.items():
                        add(self.usage[n], request, -c)
                    return None
        return slots

    def _candidates(self, view: GangView, psa: PodSetAssignment, ps: Any) -> list[str]:
        """Ready, schedulable nodes of the assigned flavors the pods may use."""
        flavors = _flavors(self.built, psa)
        return [
            node.name
            for node in sorted(self.nodes.values(), key=lambda n: n.name)
            if node.ready
            and not node.unschedulable
            and refusal(node, ps, flavors) is None
        ]


def _flavors(built: Built, psa: PodSetAssignment) -> list[ResourceFlavor]:
    snap = built.snapshot
    return [
        snap.flavors[f] for f in sorted(set(psa.flavors.values())) if f in snap.flavors
    ]


def refusal(node: Node, ps: PodSet | None, flavors: list[ResourceFlavor]) -> str | None:
    """Why a pod of ``ps`` admitted in ``flavors`` may not run on ``node`` (not
    the flavors' node labels, not its node selector/affinity, a taint neither
    it nor the flavors tolerate), or None when it may.  Used to choose hosts
    and again by the binder on the live node just before a bind."""
    for f in flavors:
        if any(node.labels.get(k) != v for k, v in f.node_labels.items()):
            return f"is not in flavor {f.name}"
    if ps is not None and not ps.placement.matches_node(node.labels, node.name):
        return "does not match the node selector/affinity"
    tolerations = tuple(ps.placement.tolerations) if ps else ()
    for f in flavors:
        tolerations += tuple(f.tolerations)
    bad = untolerated(node.taints, tolerations)
    if bad:
        t = bad[0]
        return f"has taint {t.key}={t.value}:{t.effect}, not tolerated"
    return None


def member_rules(
    built: Built, plan: Plan, key: str
) -> dict[str, tuple[PodSet | None, list[ResourceFlavor]]]:
    """Member name -> (its pod set, the flavors the plan admits it in): what
    :func:`refusal` needs to re-check a member against a live node."""
    view = built.gangs.get(key)
    adm = next((a for a in plan.admissions if a.workload == key), None)
    if view is None or adm is None:
        return {}
    model = built.snapshot.workloads.get(key)
    psas = {p.name: p for p in adm.pod_set_assignments}
    out: dict[str, tuple[PodSet | None, list[ResourceFlavor]]] = {}
    for set_name, members in view.pod_sets:
        psa = psas.get(set_name)
        if psa is None:
            continue
        rules = (
            model.pod_set(set_name) if model is not None else None,
            _flavors(built, psa),
        )
        for pod in members:
            out[str(gangmod.meta(pod).get("name"))] = rules
    return out


def _hostname_level(adm: PlanAdmission) -> bool:
    return all(
        p.topology_assignment is not None
        and list(p.topology_assignment.levels) == [HOSTNAME_LABEL]
        for p in adm.pod_set_assignments
    )
