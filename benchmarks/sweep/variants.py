"""What-if edits of a loaded cluster: hosts added or removed, quotas, weights.

A sweep asks the same question of many variants of one cluster ("and with
16 more H100 hosts?"), so a variant is a small, serializable edit applied
to the decoded objects rather than a new set of files: the base is loaded
(or generated) once per point, edited here, and resolved again into a
:class:`Snapshot`, so the loader's rules and the solvers see an ordinary
cluster.  Every edit is checked against the base first
(:func:`check_change`), so that a sweep naming an unknown flavor or queue
fails before any run starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

from placewise.models.cluster import (
    HOSTNAME_LABEL,
    ClusterQueue,
    FlavorQuotas,
    Node,
    ResourceGroup,
)
from placewise.models.quantity import (
    QuantityError,
    is_unlimited,
    parse_fraction,
    to_units,
)
from placewise.models.snapshot import Objects, Snapshot

ChangeKind = Literal["add_hosts", "quota", "fair_weight"]
CHANGE_KINDS: tuple[ChangeKind, ...] = ("add_hosts", "quota", "fair_weight")
ADDED = "sweep"
"""Added hosts are named ``<template>-sweep-<i>``."""


class VariantError(ValueError):
    """An edit the base cannot take; ``field`` names the spec key at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class Change:
    """One edit: ``add_hosts`` (``value`` hosts of ``flavor``; negative
    removes; ``grow_quota``: the flavor's quotas follow), ``quota``
    (``cluster_queue``'s nominalQuota of ``resource`` in ``flavor`` becomes
    ``value``), ``fair_weight`` (its fairSharing weight)."""

    kind: ChangeKind
    value: int | float | str
    flavor: str | None = None
    cluster_queue: str | None = None
    resource: str | None = None
    grow_quota: bool = True

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Change:
        return cls(**data)


def apply(snapshot: Snapshot, changes: Sequence[Change]) -> Snapshot:
    """``snapshot`` with every change made, resolved again."""
    if not changes:
        return snapshot
    objects = snapshot.objects
    for change in changes:
        check_change(snapshot, change)
        objects = _apply_one(objects, change)
    return Snapshot(objects)


def _apply_one(objects: Objects, change: Change) -> Objects:
    if change.kind == "add_hosts":
        assert change.flavor is not None and isinstance(change.value, int)
        before = _flavor_capacity(objects, change.flavor)
        objects = add_hosts(objects, change.flavor, change.value)
        if not change.grow_quota:
            return objects
        after = _flavor_capacity(objects, change.flavor)
        return scale_quotas(objects, change.flavor, before, after)
    assert change.cluster_queue is not None
    cq = objects.cluster_queues[change.cluster_queue]
    if change.kind == "quota":
        assert change.resource is not None
        flavor = change.flavor or _only_flavor(cq, change.resource)
        new = set_quota(cq, flavor, change.resource, change.value)
    else:
        new = cq.model_copy(update={"fair_weight": parse_fraction(change.value)})
    queues = {**objects.cluster_queues, cq.name: new}
    return dataclasses.replace(objects, cluster_queues=queues)


def hosts_of(objects: Objects, flavor: str) -> list[Node]:
    """Nodes the flavor selects (its nodeLabels all match), by name."""
    labels = objects.flavors[flavor].node_labels
    return sorted(
        (
            n
            for n in objects.nodes.values()
            if all(n.labels.get(k) == v for k, v in labels.items())
        ),
        key=lambda n: n.name,
    )


def add_hosts(objects: Objects, flavor: str, count: int) -> Objects:
    """``count`` more hosts of ``flavor`` (clones of its hosts, round-robin,
    so they join the existing racks evenly), or ``-count`` fewer (the last
    by name, with the plain pods bound to them)."""
    hosts = hosts_of(objects, flavor)
    nodes = dict(objects.nodes)
    if count >= 0:
        for i in range(count):
            template = hosts[i % len(hosts)]
            name = f"{template.name}-{ADDED}-{i}"
            labels = dict(template.labels)
            if HOSTNAME_LABEL in labels:
                labels[HOSTNAME_LABEL] = name
            nodes[name] = template.model_copy(update={"name": name, "labels": labels})
        return dataclasses.replace(objects, nodes=nodes)
    gone = {n.name for n in hosts[len(hosts) + count :]}
    for name in gone:
        del nodes[name]
    pods = {k: p for k, p in objects.pods.items() if p.node_name not in gone}
    return dataclasses.replace(objects, nodes=nodes, pods=pods)


def _flavor_capacity(objects: Objects, flavor: str) -> dict[str, int]:
    total: dict[str, int] = {}
    for n in hosts_of(objects, flavor):
        for r, q in n.allocatable.items():
            total[r] = total.get(r, 0) + q
    return total


def scale_quotas(
    objects: Objects, flavor: str, before: Mapping[str, int], after: Mapping[str, int]
) -> Objects:
    """Every ClusterQueue's and Cohort's nominalQuota in ``flavor`` scaled
    as the flavor's hosts grew (``before`` -> ``after``, per resource).

    Hosts alone admit nothing more: Kueue admits against quota, and a
    cohort borrows only what its members' quotas hold.  So added hosts
    bring their quota to the queues that already had that flavor, shared
    as the quota was; lendingLimits shrink with a smaller nominal."""

    def scaled(fq: FlavorQuotas) -> FlavorQuotas:
        if fq.name != flavor:
            return fq
        out = []
        for rq in fq.resources:
            old, new = before.get(rq.name, 0), after.get(rq.name, 0)
            if old <= 0 or is_unlimited(rq.nominal):
                out.append(rq)
                continue
            nominal = rq.nominal * new // old
            lending = rq.lending_limit
            if lending is not None:
                lending = min(lending, nominal)
            out.append(
                rq.model_copy(update={"nominal": nominal, "lending_limit": lending})
            )
        return FlavorQuotas(name=fq.name, resources=tuple(out))

    def groups(gs: tuple[ResourceGroup, ...]) -> tuple[ResourceGroup, ...]:
        return tuple(
            ResourceGroup(
                covered_resources=g.covered_resources,
                flavors=tuple(scaled(fq) for fq in g.flavors),
            )
            for g in gs
        )

    queues = {
        k: cq.model_copy(update={"resource_groups": groups(cq.resource_groups)})
        for k, cq in objects.cluster_queues.items()
    }
    cohorts = {
        k: co.model_copy(update={"resource_groups": groups(co.resource_groups)})
        for k, co in objects.cohorts.items()
    }
    return dataclasses.replace(objects, cluster_queues=queues, cohorts=cohorts)


def set_quota(
    cq: ClusterQueue, flavor: str, resource: str, value: int | float | str
) -> ClusterQueue:
    """``cq`` with the nominalQuota of ``resource`` in ``flavor`` set."""
    units = to_units(resource, value)
    groups = []
    for g in cq.resource_groups:
        flavors = []
        for fq in g.flavors:
            if fq.name == flavor:
                fq = FlavorQuotas(
                    name=fq.name,
                    resources=tuple(
                        rq.model_copy(update={"nominal": units})
                        if rq.name == resource
                        else rq
                        for rq in fq.resources
                    ),
                )
            flavors.append(fq)
        groups.append(
            ResourceGroup(covered_resources=g.covered_resources, flavors=tuple(flavors))
        )
    return cq.model_copy(update={"resource_groups": tuple(groups)})


def _only_flavor(cq: ClusterQueue, resource: str) -> str:
    names = [
        fq.name
        for g in cq.resource_groups
        for fq in g.flavors
        if any(rq.name == resource for rq in fq.resources)
    ]
    if len(names) != 1:
        raise VariantError(
            "flavor",
            f"ClusterQueue {cq.name!r} has {resource} in flavors {names}; name one",
        )
    return names[0]


def check_change(snapshot: Snapshot, change: Change) -> None:
    """VariantError (with the spec field at fault) unless the base can take
    ``change``."""
    objects = snapshot.objects
    if change.kind == "add_hosts":
        _check_hosts(objects, change)
        return
    name = change.cluster_queue or ""
    cq = objects.cluster_queues.get(name)
    if cq is None:
        known = ", ".join(sorted(objects.cluster_queues)) or "none"
        raise VariantError(
            "cluster_queue", f"unknown ClusterQueue {name!r}; known: {known}"
        )
    if change.kind == "fair_weight":
        try:
            weight = parse_fraction(change.value)
        except QuantityError as exc:
            raise VariantError("values", f"weight {change.value!r}: {exc}") from None
        if weight < Fraction(0):
            raise VariantError("values", f"weight {change.value!r} is negative")
        return
    _check_quota(cq, change)


def _check_hosts(objects: Objects, change: Change) -> None:
    flavor = change.flavor or ""
    if flavor not in objects.flavors:
        known = ", ".join(sorted(objects.flavors)) or "none"
        raise VariantError("flavor", f"unknown flavor {flavor!r}; known: {known}")
    if not isinstance(change.value, int) or isinstance(change.value, bool):
        raise VariantError("values", f"{change.value!r} is not a host count")
    hosts = hosts_of(objects, flavor)
    if change.value > 0 and not hosts:
        raise VariantError("flavor", f"flavor {flavor!r} has no host to clone")
    if -change.value > len(hosts):
        raise VariantError(
            "values",
            f"cannot remove {-change.value} hosts: flavor {flavor!r} has {len(hosts)}",
        )


def _check_quota(cq: ClusterQueue, change: Change) -> None:
    resource = change.resource or ""
    flavor = change.flavor or _only_flavor(cq, resource)
    rq = cq.quota(flavor, resource)
    if rq is None:
        raise VariantError(
            "flavor" if change.flavor else "resource",
            f"ClusterQueue {cq.name!r} has no quota of {resource!r} in flavor "
            f"{flavor!r}",
        )
    try:
        units = to_units(resource, change.value)
    except QuantityError as exc:
        raise VariantError("values", f"quota {change.value!r}: {exc}") from None
    if units < 0:
        raise VariantError("values", f"quota {change.value!r} is negative")
    if rq.lending_limit is not None and rq.lending_limit > units:
        raise VariantError(
            "values",
            f"quota {change.value!r} is below the queue's lendingLimit of "
            f"{resource} in {flavor!r}",
        )
