"""Flavor eligibility (kueue-semantics §4.2): may this pod set use that flavor?

Quota is only meaningful per flavor-resource, so a flavor outside the
queue's resource group, a requested resource left without a flavor (its
usage would hold no quota), or two flavors inside one resource group would
let a plan dodge the quota rules; node labels, taints and the TAS match are
the reasons Kueue itself skips a flavor.
"""

from __future__ import annotations

from itertools import pairwise

from placewise.models.cluster import PODS, ClusterQueue, ResourceFlavor
from placewise.models.scheduling import untolerated
from placewise.models.validate.context import Admitted, Context, Violation
from placewise.models.workload import PodSet, PodSetAssignment


def check(ctx: Context) -> list[Violation]:
    """Every flavor choice of every admitted pod set."""
    out: list[Violation] = []
    for adm in ctx.admitted:
        cq = adm.cluster_queue
        if cq is None:
            continue  # reported as bookkeeping.cluster-queue
        for ps, psa in adm.pairs():
            out += _resources(ctx, adm, cq, ps, psa)
            out += _groups(adm, cq, ps, psa)
            for flavor in sorted(set(psa.flavors.values())):
                f = ctx.flavor(flavor)
                if f is not None:
                    out += _matches(adm, ps, f)
            out += _tas(ctx, adm, cq, ps, psa)
    return out


def _resources(
    ctx: Context, adm: Admitted, cq: ClusterQueue, ps: PodSet, psa: PodSetAssignment
) -> list[Violation]:
    out = []
    needed = ctx.needed_resources(cq, ps, psa.count)
    for r in needed:
        if not ctx.covers(cq, r):
            out.append(
                Violation(
                    "eligibility.uncovered-resource",
                    adm.key,
                    f"pod set {ps.name} requests {r}, which ClusterQueue {cq.name} "
                    "does not cover",
                )
            )
        elif r not in psa.flavors:
            out.append(
                Violation(
                    "eligibility.missing-flavor",
                    adm.key,
                    f"pod set {ps.name} requests {r} but no flavor is assigned to it",
                )
            )
    for r, flavor in sorted(psa.flavors.items()):
        group = adm.group_of(ps, r)
        if group is None:
            if r not in needed:
                out.append(
                    Violation(
                        "eligibility.uncovered-resource",
                        adm.key,
                        f"pod set {ps.name} assigns flavor {flavor} to {r}, which "
                        f"ClusterQueue {cq.name} does not cover",
                    )
                )
            continue
        listed = [fq.name for fq in cq.resource_groups[group].flavors]
        if flavor not in listed:
            out.append(
                Violation(
                    "eligibility.flavor-not-in-queue",
                    adm.key,
                    f"pod set {ps.name} assigns flavor {flavor} to {r} but "
                    f"ClusterQueue {cq.name} offers only {', '.join(listed)} for it",
                )
            )
        elif ctx.flavor(flavor) is None:
            out.append(
                Violation(
                    "eligibility.flavor-not-in-queue",
                    adm.key,
                    f"pod set {ps.name} assigns flavor {flavor} to {r} but no "
                    "ResourceFlavor of that name exists",
                )
            )
    return out


def _groups(
    adm: Admitted, cq: ClusterQueue, ps: PodSet, psa: PodSetAssignment
) -> list[Violation]:
    """Kueue picks one flavor for all covered resources of a group."""
    by_group: dict[int, dict[str, list[str]]] = {}
    for r, flavor in sorted(psa.flavors.items()):
        group = adm.group_of(ps, r)
        if group is not None:
            by_group.setdefault(group, {}).setdefault(flavor, []).append(r)
    out = []
    for group, flavors in sorted(by_group.items()):
        if len(flavors) > 1:
            parts = [f"{', '.join(rs)} -> {f}" for f, rs in sorted(flavors.items())]
            covered = ", ".join(cq.resource_groups[group].covered_resources)
            out.append(
                Violation(
                    "eligibility.resource-group",
                    adm.key,
                    f"pod set {ps.name} uses more than one flavor in the resource "
                    f"group covering {covered} ({'; '.join(parts)}); a resource "
                    "group gets one flavor per pod set",
                )
            )
    return out


def _matches(adm: Admitted, ps: PodSet, f: ResourceFlavor) -> list[Violation]:
    out = []
    if not ps.placement.matches_flavor(f.node_labels):
        labels = ", ".join(f"{k}={v}" for k, v in sorted(f.node_labels.items()))
        out.append(
            Violation(
                "eligibility.node-labels",
                adm.key,
                f"pod set {ps.name}: nodeSelector/affinity excludes flavor {f.name} "
                f"(nodeLabels {labels})",
            )
        )
    bad = untolerated(f.node_taints, ps.placement.tolerations + f.tolerations)
    if bad:
        taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in bad)
        out.append(
            Violation(
                "eligibility.taints",
                adm.key,
                f"pod set {ps.name} does not tolerate taint {taints} "
                f"of flavor {f.name}",
            )
        )
    return out


def _tas(
    ctx: Context, adm: Admitted, cq: ClusterQueue, ps: PodSet, psa: PodSetAssignment
) -> list[Violation]:
    """TAS pod sets take exactly one TAS flavor with the requested levels."""
    wants = ctx.wants_tas(cq, ps)
    tas = sorted({f for f in psa.flavors.values() if (x := ctx.flavor(f)) and x.is_tas})
    out = []
    if not wants:
        for name in tas:
            out.append(
                Violation(
                    "eligibility.tas",
                    adm.key,
                    f"pod set {ps.name} does not request topology-aware scheduling "
                    f"but flavor {name} is a TAS flavor",
                )
            )
        return out
    if len(tas) > 1:
        out.append(
            Violation(
                "eligibility.tas",
                adm.key,
                f"pod set {ps.name} uses several TAS flavors ({', '.join(tas)}); "
                "a pod set is placed on one topology",
            )
        )
    for r, name in sorted(psa.flavors.items()):
        f = ctx.flavor(name)
        group = adm.group_of(ps, r)
        if f is None or f.is_tas or group is None:
            continue
        covered = cq.resource_groups[group].covered_resources
        served = [c for c in covered if adm.group_of(ps, c) == group]
        if any(ps.requests.get(c, 0) > 0 or c == PODS for c in served):
            out.append(
                Violation(
                    "eligibility.tas",
                    adm.key,
                    f"pod set {ps.name} requires topology-aware scheduling but "
                    f"{r} is assigned the non-TAS flavor {name}",
                )
            )
    if not tas and psa.count > 0 and ctx.needed_resources(cq, ps, psa.count):
        out.append(
            Violation(
                "eligibility.tas",
                adm.key,
                f"pod set {ps.name} requires topology-aware scheduling but has "
                "no TAS flavor",
            )
        )
    for name in tas:
        out += _levels(ctx, adm, ps, name)
    return out


def _levels(ctx: Context, adm: Admitted, ps: PodSet, flavor: str) -> list[Violation]:
    f = ctx.flavor(flavor)
    topo = ctx.snap.topologies.get(f.topology_name or "") if f else None
    if topo is None:
        return []
    req = ps.topology
    asked = [x for x in (req.required, req.preferred) if x]
    asked += [layer.level for layer in req.slices]
    missing = [x for x in asked if x not in topo.levels]
    if missing:
        return [
            Violation(
                "eligibility.topology-levels",
                adm.key,
                f"pod set {ps.name} requests topology level {', '.join(missing)} but "
                f"Topology {topo.name} of flavor {flavor} has levels "
                f"{', '.join(topo.levels)}",
            )
        ]
    # Kueue places slices inside the requested domain and inner slice layers
    # inside outer ones; anything else cannot be placed (§6.2).
    depth = topo.levels.index
    outer = req.required or req.preferred
    chain = ([outer] if outer else []) + [layer.level for layer in req.slices]
    for i, (above, below) in enumerate(pairwise(chain)):
        # The first slice layer may sit at the requested level itself;
        # inner layers must be strictly deeper than the one around them.
        strict = i > 0 or not outer
        if depth(below) < depth(above) or (strict and depth(below) == depth(above)):
            return [
                Violation(
                    "eligibility.topology-levels",
                    adm.key,
                    f"pod set {ps.name}: slice level {below} is not below "
                    f"{above} in Topology {topo.name}, so its slices cannot be placed",
                )
            ]
    return []
