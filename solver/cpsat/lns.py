"""Large-neighbourhood improvement for instances too large for one model.

Algorithm overview:
  1. start from a complete plan (greedy, then the residual solve);
  2. pick a neighbourhood: the leaves under one top-level topology domain
     (a block), most free capacity first;
  3. free every admitted workload placed entirely inside it, and the
     pending workloads, let the model re-decide them on those leaves only,
     with everything else fixed; the model's floor check keeps the result
     no worse than the current plan;
  4. repeat until the deadline.
Each step is exact within its neighbourhood, so the plan only improves.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat.data import (
    ModelData,
    admitted_info,
    compile_data,
    derive,
    residual_candidates,
)
from placewise.solver.kueue.workload import WlInfo

log = logging.getLogger("placewise.cpsat")

Solve = Callable[[ModelData, Plan, float], Plan]


def _blocks(snapshot: Snapshot) -> dict[tuple[str, str], set[str]]:
    """(flavor, top-level domain value) -> node names."""
    out: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name, flavor in sorted(snapshot.flavors.items()):
        topo = snapshot.topologies.get(flavor.topology_name or "")
        if topo is None:
            continue
        for node in snapshot.flavor_nodes(flavor):
            out[(name, node.labels[topo.levels[0]])].add(node.name)
    return out


def _nodes_of(snapshot: Snapshot, plan: Plan) -> dict[str, set[str]]:
    """Workload -> node names (or leaf paths) it occupies in the plan."""
    by_host: dict[str, str] = {}
    for node in snapshot.nodes.values():
        host = node.labels.get("kubernetes.io/hostname")
        if host is not None:
            by_host[host] = node.name
    out: dict[str, set[str]] = {}
    for a in plan.admissions:
        nodes: set[str] = set()
        for psa in a.pod_set_assignments:
            ta = psa.topology_assignment
            if ta is None:
                continue
            for d in ta.domains:
                nodes.add(by_host.get(d.values[-1], "/".join(d.values)))
        out[a.workload] = nodes
    return out


def improve(
    snapshot: Snapshot,
    plan: Plan,
    solve: Solve,
    deadline: float,
    step_budget: float = 4.0,
    max_leaves: int | None = None,
    base: ModelData | None = None,
) -> Plan:
    """``base``: the residual model's data when ``plan`` is the plan it was
    compiled around (saves one compile on the largest instances)."""
    blocks = _blocks(snapshot)
    if len(blocks) < 2:
        return plan
    free_gpus: dict[tuple[str, str], int] = {}
    usage = snapshot.pod_usage_by_node
    for key, nodes in blocks.items():
        free_gpus[key] = sum(
            snapshot.nodes[n].allocatable.get("nvidia.com/gpu", 0)
            - usage.get(n, {}).get("nvidia.com/gpu", 0)
            for n in nodes
        )
    order = sorted(blocks, key=lambda k: (-free_gpus[k], k))
    steps = improved = 0
    fixed: dict[str, WlInfo] = {}
    if base is not None:
        fixed = {a.workload: admitted_info(snapshot, a) for a in plan.admissions}
    for key in order:
        remaining = deadline - time.perf_counter()
        if remaining < 1.0:
            break
        if base is None:
            # Everything the current plan admits is fixed once; each
            # neighbourhood then frees its own part without a recompile.
            admitted = {a.workload: a for a in plan.admissions}
            fixed = {k: admitted_info(snapshot, a) for k, a in admitted.items()}
            base = compile_data(
                snapshot,
                free=residual_candidates(snapshot, admitted, plan.preemptions),
                fixed=fixed,
                removed=frozenset(p.workload for p in plan.preemptions),
            )
            base.fixed_admissions = list(plan.admissions)
            base.fixed_preemptions = list(plan.preemptions)
            base.max_leaves = max_leaves
        nodes = blocks[key]
        placed = _nodes_of(snapshot, plan)
        inside = {
            w: fixed[w] for w, ns in placed.items() if ns and ns <= nodes and w in fixed
        }
        data = derive(base, inside, frozenset(nodes))
        remaining = deadline - time.perf_counter()
        if remaining < 1.0:
            break  # compiling the base used what was left
        new = solve(data, plan, min(step_budget, remaining - 0.5))
        steps += 1
        if new.admissions != plan.admissions or new.preemptions != plan.preemptions:
            plan, base, improved = new, None, improved + 1
    log.info("LNS: %d neighbourhood(s) re-optimised, %d improved", steps, improved)
    return plan
