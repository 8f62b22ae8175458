"""Decoders for Kueue's cluster-scoped kinds (v1beta1, v1beta2, v1alpha1)."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from placewise.adapters.io.convert.afs import (
    admission_mode,
    decode_admission_fair_sharing,
    local_queue_usage,
)
from placewise.adapters.io.convert.context import Ctx
from placewise.adapters.io.convert.core import (
    label_selector,
    string_map,
    taints,
    texts,
    tolerations,
)
from placewise.adapters.io.convert.gates import (
    ADMISSION_FAIR_SHARING,
    TAS_BALANCED_PLACEMENT,
    read_gates,
    unread_gates,
)
from placewise.models.cluster import (
    DEFAULT_STRATEGIES,
    HOSTNAME_LABEL,
    SUPPORTED_STRATEGIES,
    BorrowWithinCohort,
    ClusterQueue,
    Cohort,
    FairSharing,
    FeatureGates,
    FlavorFungibility,
    FlavorQuotas,
    LocalQueue,
    PreemptionPolicy,
    PriorityClass,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Topology,
)
from placewise.models.errors import describe
from placewise.models.quantity import QuantityError, parse_fraction

_FUNGIBILITY_ALIASES = {"Borrow": "MayStopSearch", "Preempt": "MayStopSearch"}


def decode_flavor(ctx: Ctx, obj: Mapping[str, Any]) -> ResourceFlavor:
    spec = ctx.mapping(obj, "spec", "spec")
    topo = ctx.string(spec, "topologyName", "spec.topologyName")
    labels = string_map(ctx, spec, "nodeLabels", "spec.nodeLabels")
    return ResourceFlavor(
        name=ctx.name,
        node_labels=labels,
        node_taints=taints(
            ctx, ctx.seq(spec, "nodeTaints", "spec.nodeTaints"), "spec.nodeTaints"
        ),
        tolerations=tolerations(
            ctx, ctx.seq(spec, "tolerations", "spec.tolerations"), "spec.tolerations"
        ),
        topology_name=topo or None,
    )


def resource_groups(
    ctx: Ctx, spec: Mapping[str, Any], has_parent: bool
) -> tuple[ResourceGroup, ...]:
    groups = []
    seen_flavors: set[str] = set()
    for g, raw in enumerate(ctx.seq(spec, "resourceGroups", "spec.resourceGroups")):
        gpath = f"spec.resourceGroups[{g}]"
        if not isinstance(raw, Mapping):
            ctx.error(gpath, "expected a mapping")
            continue
        covered = texts(
            ctx,
            ctx.seq(raw, "coveredResources", f"{gpath}.coveredResources"),
            f"{gpath}.coveredResources",
        )
        if covered is None:
            continue
        # Kueue's webhook forbids a resource in two groups, but its own tests
        # do it; its scheduler then takes the first group (the loader warns).
        flavors = []
        for f, fraw in enumerate(ctx.seq(raw, "flavors", f"{gpath}.flavors")):
            fpath = f"{gpath}.flavors[{f}]"
            if not isinstance(fraw, Mapping) or not fraw.get("name"):
                ctx.error(fpath, "a flavor entry needs a name")
                continue
            fname = ctx.string(fraw, "name", f"{fpath}.name")
            if fname is None:
                continue
            if fname in seen_flavors:
                ctx.error(f"{fpath}.name", f"flavor {fname} appears more than once")
            seen_flavors.add(fname)
            quotas = []
            for q, qraw in enumerate(ctx.seq(fraw, "resources", f"{fpath}.resources")):
                quota = _resource_quota(
                    ctx, qraw, f"{fpath}.resources[{q}]", has_parent
                )
                if quota is not None:
                    quotas.append(quota)
            names = [q.name for q in quotas]
            if sorted(names) != sorted(covered):
                ctx.error(
                    f"{fpath}.resources",
                    f"must list exactly the covered resources {list(covered)}, "
                    f"got {names}",
                )
            flavors.append(FlavorQuotas(name=fname, resources=tuple(quotas)))
        groups.append(ResourceGroup(covered_resources=covered, flavors=tuple(flavors)))
    return tuple(groups)


def _resource_quota(
    ctx: Ctx, raw: object, path: str, has_parent: bool
) -> ResourceQuota | None:
    if not isinstance(raw, Mapping) or not raw.get("name"):
        ctx.error(path, "a resource quota needs a name")
        return None
    name = ctx.string(raw, "name", f"{path}.name")
    if name is None:
        return None
    nominal = ctx.quantity(name, raw.get("nominalQuota", 0), f"{path}.nominalQuota")
    borrowing = lending = None
    if raw.get("borrowingLimit") is not None:
        # Without a parent the limit has no effect (Kueue's own tests set it).
        borrowing = ctx.quantity(name, raw["borrowingLimit"], f"{path}.borrowingLimit")
    if raw.get("lendingLimit") is not None:
        lending = ctx.quantity(name, raw["lendingLimit"], f"{path}.lendingLimit")
        if lending is not None and nominal is not None and lending > nominal:
            ctx.error(
                f"{path}.lendingLimit",
                f"lendingLimit {describe(raw['lendingLimit'], quote=False)} "
                f"exceeds nominalQuota {describe(raw.get('nominalQuota', 0), False)}",
            )
    if nominal is None:
        return None
    return ResourceQuota(
        name=name, nominal=nominal, borrowing_limit=borrowing, lending_limit=lending
    )


def _choice(
    ctx: Ctx,
    obj: Mapping[str, Any],
    key: str,
    path: str,
    allowed: tuple[str, ...],
    default: str,
) -> str:
    value = ctx.string(obj, key, path, default) or default
    value = _FUNGIBILITY_ALIASES.get(value, value) if key.startswith("when") else value
    if value not in allowed:
        ctx.error(path, f"{describe(value)} is not one of {', '.join(allowed)}")
        return default
    return value


def decode_cluster_queue(
    ctx: Ctx, obj: Mapping[str, Any], version: str
) -> ClusterQueue:
    spec = ctx.mapping(obj, "spec", "spec")
    primary, other = (
        ("cohort", "cohortName") if version == "v1beta1" else ("cohortName", "cohort")
    )
    cohort = ctx.string(spec, primary, f"spec.{primary}") or ctx.string(
        spec, other, f"spec.{other}"
    )
    pre = ctx.mapping(spec, "preemption", "spec.preemption")
    bwc = ctx.mapping(pre, "borrowWithinCohort", "spec.preemption.borrowWithinCohort")
    preemption = PreemptionPolicy(
        within_cluster_queue=_choice(
            ctx,
            pre,
            "withinClusterQueue",
            "spec.preemption.withinClusterQueue",
            ("Never", "LowerPriority", "LowerOrNewerEqualPriority"),
            "Never",
        ),
        reclaim_within_cohort=_choice(
            ctx,
            pre,
            "reclaimWithinCohort",
            "spec.preemption.reclaimWithinCohort",
            ("Never", "LowerPriority", "Any"),
            "Never",
        ),
        borrow_within_cohort=BorrowWithinCohort(
            policy=_choice(
                ctx,
                bwc,
                "policy",
                "spec.preemption.borrowWithinCohort.policy",
                ("Never", "LowerPriority"),
                "Never",
            ),
            max_priority_threshold=ctx.integer(
                bwc,
                "maxPriorityThreshold",
                "spec.preemption.borrowWithinCohort.maxPriorityThreshold",
            ),
        ),
    )
    ff = ctx.mapping(spec, "flavorFungibility", "spec.flavorFungibility")
    fungibility = FlavorFungibility(
        when_can_borrow=_choice(
            ctx,
            ff,
            "whenCanBorrow",
            "spec.flavorFungibility.whenCanBorrow",
            ("MayStopSearch", "TryNextFlavor"),
            "MayStopSearch",
        ),
        when_can_preempt=_choice(
            ctx,
            ff,
            "whenCanPreempt",
            "spec.flavorFungibility.whenCanPreempt",
            ("MayStopSearch", "TryNextFlavor"),
            "TryNextFlavor",
        ),
        preference=_choice(
            ctx,
            ff,
            "preference",
            "spec.flavorFungibility.preference",
            ("BorrowingOverPreemption", "PreemptionOverBorrowing"),
            "BorrowingOverPreemption",
        ),
    )
    return ClusterQueue(
        name=ctx.name,
        cohort=cohort or None,
        resource_groups=resource_groups(ctx, spec, has_parent=bool(cohort)),
        namespace_selector=label_selector(
            ctx, spec.get("namespaceSelector"), "spec.namespaceSelector"
        ),
        queueing_strategy=_choice(
            ctx,
            spec,
            "queueingStrategy",
            "spec.queueingStrategy",
            ("BestEffortFIFO", "StrictFIFO"),
            "BestEffortFIFO",
        ),
        preemption=preemption,
        flavor_fungibility=fungibility,
        stop_policy=ctx.string(spec, "stopPolicy", "spec.stopPolicy", "None") or "None",
        fair_weight=fair_weight(ctx, spec),
        admission_mode=admission_mode(ctx, spec),
    )


MIN_WEIGHT = Fraction(1, 10**9)
"""Kueue's API: a non-zero weight must be greater than 10^-9."""


def fair_weight(ctx: Ctx, spec: Mapping[str, Any]) -> Fraction:
    """``spec.fairSharing.weight`` (default 1; 0 means an infinite share
    while borrowing), exact, as a quantity."""
    path = "spec.fairSharing.weight"
    raw = ctx.mapping(spec, "fairSharing", "spec.fairSharing").get("weight")
    if raw is None:
        return Fraction(1)
    try:
        weight = parse_fraction(raw)
    except QuantityError as exc:
        ctx.error(path, f"not a quantity: {exc}")
        return Fraction(1)
    if weight < 0:
        ctx.error(path, f"weight must not be negative, got {raw!r}")
        return Fraction(1)
    if 0 < weight <= MIN_WEIGHT:
        ctx.error(path, f"a non-zero weight must be greater than 10^-9, got {raw!r}")
        return Fraction(1)
    return weight


def decode_cohort(ctx: Ctx, obj: Mapping[str, Any]) -> Cohort:
    spec = ctx.mapping(obj, "spec", "spec")
    parent = ctx.string(spec, "parentName", "spec.parentName") or ctx.string(
        spec, "parent", "spec.parent"
    )
    return Cohort(
        name=ctx.name,
        parent=parent or None,
        resource_groups=resource_groups(ctx, spec, has_parent=bool(parent)),
        fair_weight=fair_weight(ctx, spec),
    )


def decode_local_queue(ctx: Ctx, obj: Mapping[str, Any]) -> LocalQueue | None:
    spec = ctx.mapping(obj, "spec", "spec")
    cq = ctx.string(spec, "clusterQueue", "spec.clusterQueue")
    if not cq:
        ctx.error("spec.clusterQueue", "a LocalQueue must name its ClusterQueue")
        return None
    consumed, consumed_at = local_queue_usage(ctx, obj)
    return LocalQueue(
        namespace=ctx.namespace,
        name=ctx.name,
        cluster_queue=cq,
        stop_policy=ctx.string(spec, "stopPolicy", "spec.stopPolicy", "None") or "None",
        fair_weight=fair_weight(ctx, spec),
        consumed=consumed,
        consumed_at=consumed_at,
    )


def decode_priority_class(
    ctx: Ctx, obj: Mapping[str, Any], kueue: bool
) -> PriorityClass:
    value = ctx.integer(obj, "value", "value")
    if value is None:
        ctx.error("value", "a priority class needs an integer value")
        value = 0
    return PriorityClass(
        name=ctx.name,
        value=value,
        kueue=kueue,
        global_default=ctx.boolean(obj, "globalDefault", "globalDefault", False),
    )


def decode_topology(ctx: Ctx, obj: Mapping[str, Any]) -> Topology | None:
    spec = ctx.mapping(obj, "spec", "spec")
    levels = []
    for i, lvl in enumerate(ctx.seq(spec, "levels", "spec.levels")):
        where = f"spec.levels[{i}].nodeLabel"
        if not isinstance(lvl, Mapping) or not lvl.get("nodeLabel"):
            ctx.error(where, "each level needs a nodeLabel")
            continue
        label = ctx.string(lvl, "nodeLabel", where)
        if label is not None:
            levels.append(label)
    if not levels:
        ctx.error("spec.levels", "a Topology needs at least one level")
        return None
    if len(set(levels)) != len(levels):
        ctx.error("spec.levels", "levels must be unique")
    if HOSTNAME_LABEL in levels[:-1]:
        ctx.error("spec.levels", f"{HOSTNAME_LABEL} may only be the lowest level")
    return Topology(name=ctx.name, levels=tuple(levels))


_CONFIG_KNOWN = frozenset(
    {
        "apiVersion",
        "kind",
        "metadata",
        "fairSharing",
        "admissionFairSharing",
        "featureGates",
    }
)
_FAIR_KNOWN = frozenset({"enable", "preemptionStrategies"})


def decode_configuration(
    ctx: Ctx, obj: Mapping[str, Any], version: str
) -> tuple[FairSharing, list[str]]:
    """Kueue's own ``Configuration``: ``fairSharing``, ``admissionFairSharing``
    and the AdmissionFairSharing and TASBalancedPlacement entries of
    ``featureGates`` change decisions.

    Returns the fair-sharing settings and the fields placewise ignores (the
    loader warns once, naming them; other feature gates among them).
    """
    fair, ignored = _fair_sharing(ctx, obj, version)
    ignored += unread_gates(obj)
    on = read_gates(ctx, obj)
    admission = decode_admission_fair_sharing(ctx, obj, on[ADMISSION_FAIR_SHARING])
    gates = FeatureGates(tas_balanced_placement=on[TAS_BALANCED_PLACEMENT])
    return fair.model_copy(update={"admission": admission, "gates": gates}), ignored


def _fair_sharing(
    ctx: Ctx, obj: Mapping[str, Any], version: str
) -> tuple[FairSharing, list[str]]:
    """v1beta1 switches fair sharing on with ``enable: true``; in v1beta2 the
    ``fairSharing`` section's presence does.  An unset strategy list takes
    Kueue's default; a list Kueue's validation would refuse (unknown name,
    other combination or order) is an error."""
    ignored = sorted(describe(k, quote=False) for k in obj if k not in _CONFIG_KNOWN)
    raw = obj.get("fairSharing")
    if raw is None:
        return FairSharing(), ignored
    if not isinstance(raw, Mapping):
        ctx.error("fairSharing", f"expected a mapping, got {type(raw).__name__}")
        return FairSharing(), ignored
    ignored += sorted(
        f"fairSharing.{describe(k, quote=False)}" for k in raw if k not in _FAIR_KNOWN
    )
    if version == "v1beta1":
        enable = ctx.boolean(raw, "enable", "fairSharing.enable", False)
    else:
        enable = True
    path = "fairSharing.preemptionStrategies"
    names = [str(n) for n in ctx.seq(raw, "preemptionStrategies", path)]
    known = set(DEFAULT_STRATEGIES)
    for i, name in enumerate(names):
        if name not in known:
            ctx.error(
                f"{path}[{i}]",
                f"unknown preemption strategy {name!r} (Kueue knows "
                f"{', '.join(DEFAULT_STRATEGIES)})",
            )
    if not names:
        return FairSharing(enable=enable), ignored
    chosen = next((s for s in SUPPORTED_STRATEGIES if list(s) == names), None)
    if chosen is None:
        if all(n in known for n in names):
            ctx.error(
                path,
                f"{names} is not a list Kueue supports: "
                + "; ".join(str(list(s)) for s in SUPPORTED_STRATEGIES),
            )
        return FairSharing(enable=enable), ignored
    return FairSharing(enable=enable, preemption_strategies=chosen), ignored
