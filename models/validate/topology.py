"""Topology assignments of TAS pod sets (kueue-semantics §1.8, §6).

An assignment is feasible when it is well-formed in Kueue's logical form,
names only usable leaves of the flavor's topology, passes the per-node
filters on hostname leaves, and honours the pod set's required level and
slice constraints.  How good the placement is (BestFit or not) is the
compatibility suite's business, not the validator's.
"""

from __future__ import annotations

from collections import defaultdict

from placewise.models.cluster import ResourceFlavor
from placewise.models.scheduling import untolerated
from placewise.models.validate.context import Admitted, Context, Violation
from placewise.models.validate.domains import FlavorDomains, Path, show
from placewise.models.workload import PodSet, PodSetAssignment


def check(ctx: Context) -> list[Violation]:
    """Every admitted pod set: presence, form, domains, level, slices."""
    out: list[Violation] = []
    for adm in ctx.admitted:
        placed: dict[str, list[tuple[PodSet, FlavorDomains, dict[Path, int]]]] = (
            defaultdict(list)
        )
        for ps, psa in adm.pairs():
            found = _pod_set(ctx, adm, ps, psa, out)
            if found is not None:
                unit = ps.topology.group or f"\0{ps.name}"
                placed[unit].append((ps, found[0], found[1]))
        for members in placed.values():
            out += _required(adm, members)
            for ps, fd, leaves in members:
                out += _slices(adm, ps, fd, leaves)
    return out


def _pod_set(
    ctx: Context,
    adm: Admitted,
    ps: PodSet,
    psa: PodSetAssignment,
    out: list[Violation],
) -> tuple[FlavorDomains, dict[Path, int]] | None:
    """Check one assignment; return its leaves (path -> pods) when readable."""
    flavor = ctx.tas_flavor(adm, ps, psa)
    ta = psa.topology_assignment
    if flavor is None:
        if ta is not None:
            out.append(
                Violation(
                    "topology.unexpected",
                    adm.key,
                    f"pod set {ps.name} has a topologyAssignment but no TAS flavor",
                )
            )
        return None
    if ta is None:
        if psa.count > 0:
            out.append(
                Violation(
                    "topology.missing",
                    adm.key,
                    f"pod set {ps.name} is on TAS flavor {flavor.name} but has no "
                    "topologyAssignment",
                )
            )
        return None
    fd = ctx.domains.of(flavor)
    if fd is None:
        return None  # the queue is inactive: bookkeeping.not-admissible
    if ta.levels != fd.levels:
        out.append(
            Violation(
                "topology.levels",
                adm.key,
                f"pod set {ps.name}: topologyAssignment levels "
                f"[{', '.join(ta.levels)}] must be [{', '.join(fd.levels)}] for "
                f"Topology {fd.topology.name}",
            )
        )
        return None
    bad = [d for d in ta.domains if d.count < 1]
    total = sum(d.count for d in ta.domains)
    if bad:
        out.append(
            Violation(
                "topology.count",
                adm.key,
                f"pod set {ps.name}: domain {show(bad[0].values)} has count "
                f"{bad[0].count}; every domain needs at least one pod",
            )
        )
    if total != psa.count:
        out.append(
            Violation(
                "topology.count",
                adm.key,
                f"pod set {ps.name}: topologyAssignment places {total} pod(s) but "
                f"the admitted count is {psa.count}",
            )
        )
    leaves: dict[Path, int] = {}
    for values, count in sorted(ta.as_counts().items()):
        path = fd.resolve(values)
        if path is None:
            out.append(
                Violation(
                    "topology.domain",
                    adm.key,
                    f"pod set {ps.name}: domain {show(values)} is not usable for "
                    f"flavor {flavor.name}: {ctx.domains.why_unusable(fd, values)}",
                )
            )
            continue
        leaves[path] = leaves.get(path, 0) + count
        if fd.topology.hostname_leaves:
            out += _node_filter(adm, ps, flavor, fd, path)
    return fd, leaves


def _node_filter(
    adm: Admitted, ps: PodSet, flavor: ResourceFlavor, fd: FlavorDomains, path: Path
) -> list[Violation]:
    """Hostname leaves are real nodes: taints, nodeSelector, affinity apply."""
    out = []
    for node in fd.leaf_nodes(path):
        bad = untolerated(node.taints, ps.placement.tolerations + flavor.tolerations)
        if bad:
            taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in bad)
            out.append(
                Violation(
                    "topology.node-filter",
                    adm.key,
                    f"pod set {ps.name} placed on node {node.name}, whose taint "
                    f"{taints} it does not tolerate",
                )
            )
        if not ps.placement.matches_node(node.labels, node.name):
            out.append(
                Violation(
                    "topology.node-filter",
                    adm.key,
                    f"pod set {ps.name} placed on node {node.name}, which its "
                    "nodeSelector/required node affinity excludes",
                )
            )
    return out


def _required(
    adm: Admitted, members: list[tuple[PodSet, FlavorDomains, dict[Path, int]]]
) -> list[Violation]:
    """All pods of a pod set (or leader/worker group) in one domain of level L."""
    level = next(
        (ps.topology.required for ps, _, _ in members if ps.topology.required), None
    )
    if level is None:
        return []
    domains: set[Path] = set()
    for _, fd, leaves in members:
        if level not in fd.topology.levels:
            return []  # reported as eligibility.topology-levels
        depth = fd.topology.levels.index(level) + 1
        domains.update(path[:depth] for path in leaves)
    if len(domains) <= 1:
        return []
    names = ", ".join(ps.name for ps, _, _ in members)
    shown = ", ".join(show(d) for d in sorted(domains))
    return [
        Violation(
            "topology.required-level",
            adm.key,
            f"pod set(s) {names} require one {level} domain but span {len(domains)}: "
            f"{shown}",
        )
    ]


def _slices(
    adm: Admitted, ps: PodSet, fd: FlavorDomains, leaves: dict[Path, int]
) -> list[Violation]:
    """Each slice layer: pods per domain of its level are whole slices."""
    out = []
    for layer in ps.topology.slices:
        if layer.level not in fd.topology.levels:
            continue  # reported as eligibility.topology-levels
        depth = fd.topology.levels.index(layer.level) + 1
        per: dict[Path, int] = {}
        for path, count in leaves.items():
            per[path[:depth]] = per.get(path[:depth], 0) + count
        for domain, count in sorted(per.items()):
            if count % layer.size:
                out.append(
                    Violation(
                        "topology.slices",
                        adm.key,
                        f"pod set {ps.name}: {layer.level} domain {show(domain)} holds "
                        f"{count} pod(s), not a multiple of the slice size "
                        f"{layer.size}",
                    )
                )
    return out
