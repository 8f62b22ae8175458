"""Node capacity of TAS flavors after the plan (kueue-semantics §6.1).

Quota alone does not stop two TAS admissions from landing on the same full
node, so every leaf the plan places pods on is re-added from scratch:
allocatable minus bound non-TAS pods, minus running TAS workloads that stay,
minus the plan's own pods.  Hostname leaves are keyed by node, so flavors
that select the same nodes share their capacity, as Kueue does with
``TASHandleOverlappingFlavors``.
"""

from __future__ import annotations

from collections.abc import Mapping

from placewise.models.validate.context import (
    Context,
    Violation,
    qty,
    running_tas_flavor,
)
from placewise.models.validate.domains import FlavorDomains, Path, show
from placewise.models.workload import Workload

LeafKey = tuple[str, ...]
"""("node", name) for hostname leaves, ("pool", flavor, *path) otherwise."""


def _leaf(fd: FlavorDomains, path: Path) -> LeafKey:
    if fd.topology.hostname_leaves:
        return ("node", fd.leaf_nodes(path)[0].name)
    return ("pool", fd.flavor.name, *path)


def _add(
    acc: dict[LeafKey, dict[str, int]],
    key: LeafKey,
    per_pod: Mapping[str, int],
    pods: int,
) -> None:
    slot = acc.setdefault(key, {})
    for r, v in per_pod.items():
        slot[r] = slot.get(r, 0) + v * pods


def admitted_leaves(ctx: Context) -> dict[str, dict[LeafKey, dict[str, int]]]:
    """Per admitted workload, what its pods take on each TAS leaf."""
    out: dict[str, dict[LeafKey, dict[str, int]]] = {}
    for adm in ctx.admitted:
        for ps, psa in adm.pairs():
            flavor = ctx.tas_flavor(adm, ps, psa)
            ta = psa.topology_assignment
            fd = ctx.domains.of(flavor) if flavor is not None else None
            if fd is None or ta is None or ta.levels != fd.levels:
                continue
            per_pod = {r: v for r, v in ps.requests.items() if v > 0}
            per_pod["pods"] = 1
            for values, count in ta.as_counts().items():
                path = fd.resolve(values)
                if path is None or count < 1:
                    continue  # reported by the topology rules
                _add(out.setdefault(adm.key, {}), _leaf(fd, path), per_pod, count)
    return out


def leaf_nodes(ctx: Context, key: LeafKey) -> list[str]:
    """The nodes whose allocatable a leaf pools (one for a hostname leaf)."""
    if key[0] == "node":
        return [key[1]]
    fd = ctx.domains.of(ctx.snap.flavors[key[1]])
    assert fd is not None
    return [n.name for n in fd.leaf_nodes(key[2:])]


def check(ctx: Context) -> list[Violation]:
    """Every leaf the plan uses holds all pods placed on it."""
    planned: dict[LeafKey, dict[str, int]] = {}
    users: dict[LeafKey, dict[str, int]] = {}
    for key_w, leaves in admitted_leaves(ctx).items():
        for key, usage in leaves.items():
            _add(planned, key, usage, 1)
            users.setdefault(key, {})[key_w] = usage["pods"]
    if not planned:
        return []
    running = _running(ctx)
    out: list[Violation] = []
    for key in sorted(planned):
        alloc, pods_used = leaf_base(ctx, key)
        for r, add in sorted(planned[key].items()):
            held = running.get(key, {}).get(r, 0)
            total = pods_used.get(r, 0) + held + add
            cap = alloc.get(r, 0)
            if total <= cap:
                continue
            placed = ", ".join(f"{k} x{n}" for k, n in sorted(users[key].items()))
            where = (
                f"node {key[1]}"
                if key[0] == "node"
                else f"domain {show(key[2:])} of flavor {key[1]}"
            )
            out.append(
                Violation(
                    "capacity.node" if key[0] == "node" else "capacity.domain",
                    ", ".join(sorted(users[key])),
                    f"{where}: {r} would be {qty(r, total)} in use "
                    f"({qty(r, add)} by this plan: {placed}; "
                    f"{qty(r, held)} by running TAS workloads; "
                    f"{qty(r, pods_used.get(r, 0))} by bound pods), above allocatable "
                    f"{qty(r, cap)} by {qty(r, total - cap)}",
                )
            )
    return out


def leaf_base(ctx: Context, key: LeafKey) -> tuple[dict[str, int], dict[str, int]]:
    """Allocatable and non-TAS pod usage summed over a leaf's nodes."""
    alloc: dict[str, int] = {}
    used: dict[str, int] = {}
    for name in leaf_nodes(ctx, key):
        for r, v in ctx.snap.nodes[name].allocatable.items():
            alloc[r] = alloc.get(r, 0) + v
        for r, v in ctx.snap.pod_usage_by_node.get(name, {}).items():
            used[r] = used.get(r, 0) + v
    return alloc, used


def _running(ctx: Context) -> dict[LeafKey, dict[str, int]]:
    """Usage of running TAS workloads the plan keeps, per leaf."""
    acc: dict[LeafKey, dict[str, int]] = {}
    for w in ctx.remaining:
        for key, usage in running_leaves(ctx, w).items():
            _add(acc, key, usage, 1)
    return acc


def running_leaves(ctx: Context, w: Workload) -> dict[LeafKey, dict[str, int]]:
    """What a running TAS workload holds on each leaf.

    Per-pod usage is the admission's ``resourceUsage / count`` (formats.md
    §1) plus one ``pods``.
    """
    acc: dict[LeafKey, dict[str, int]] = {}
    assert w.admission is not None
    for psa in w.admission.pod_set_assignments:
        ta = psa.topology_assignment
        flavor = running_tas_flavor(ctx, psa)
        fd = ctx.domains.of(flavor) if flavor is not None else None
        if ta is None or fd is None or psa.count <= 0:
            continue
        per_pod = {r: v // psa.count for r, v in psa.resource_usage.items()}
        per_pod["pods"] = 1
        for values, count in ta.as_counts().items():
            path = fd.resolve_as(ta.levels, values)
            if path is not None:
                _add(acc, _leaf(fd, path), per_pod, count)
    return acc
