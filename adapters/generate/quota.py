"""Teams: ClusterQueues in cohorts, their quotas, namespaces and LocalQueues.

Quotas are split from the capacity of each flavor, so that ``quota_scale``
says directly whether quota or hosts bind.  Running Workloads are only
generated where Kueue itself could have admitted them: :func:`quota_tree`
hands the teams to Kueue's quota arithmetic in its one home
(:mod:`placewise.solver.kueue.quota`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    format_quantity,
    parse_quantity,
)
from placewise.adapters.generate.cluster import Layout
from placewise.adapters.generate.config import GeneratorConfig
from placewise.models.cluster import (
    PODS,
    ClusterQueue,
    Cohort,
    FlavorQuotas,
    ResourceGroup,
    ResourceQuota,
)
from placewise.solver.kueue.quota import QuotaTree

TEAM_LABEL = "placewise.io/team"
FAMILY_LABEL = "placewise.io/family"
WPC_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"

FlavorResource = tuple[str, str]


@dataclass(frozen=True)
class Limits:
    nominal: int
    borrowing: int | None = None
    lending: int | None = None


@dataclass
class Team:
    """One ClusterQueue with its namespaces and quota."""

    name: str
    cohort: str | None
    share: float
    flavors: list[str]
    """Flavor names in this queue's preference order."""
    namespaces: list[str]
    quotas: dict[FlavorResource, Limits] = field(default_factory=dict)

    @property
    def local_queue(self) -> str:
        return f"{self.name}-queue"


def _round_quota(amount: float, resource: str) -> int:
    """Whole cores, whole GiB and whole devices read like hand-written quotas."""
    unit = {CPU: 1000, MEMORY: 2**30}.get(resource, 1)
    return int(amount // unit) * unit


def build_teams(
    config: GeneratorConfig, layout: Layout, rng: np.random.Generator
) -> list[Team]:
    q = config.queues
    names = q.team_names()
    n = len(names)
    if q.share_concentration is None:
        shares = np.full(n, 1.0 / n)
    else:
        shares = rng.dirichlet(np.full(n, q.share_concentration))
    flavors = [t.flavor for t in config.node_types]
    teams: list[Team] = []
    for i, name in enumerate(names):
        cohort = (
            f"cohort-{i % q.cohorts}"
            if q.cohorts > 1
            else ("gpu-cohort" if q.cohorts == 1 else None)
        )
        order = (
            flavors[i % len(flavors) :] + flavors[: i % len(flavors)]
            if (q.flavor_order == "rotate")
            else list(flavors)
        )
        namespaces = (
            [name]
            if q.namespaces_per_queue == 1
            else [f"{name}-{j}" for j in range(q.namespaces_per_queue)]
        )
        teams.append(Team(name, cohort, float(shares[i]), order, namespaces))

    totals = _capacity(config, layout)
    for team in teams:
        for flavor in flavors:
            for res in q.covered_resources:
                team.quotas[(flavor, res)] = _limits(
                    config, team, totals.get((flavor, res), 0), res
                )
    return teams


def _capacity(config: GeneratorConfig, layout: Layout) -> dict[FlavorResource, int]:
    """Allocatable capacity per flavor and resource."""
    return {
        (t.flavor, res): int(layout.allocatable[r][layout.node_type == ti].sum())
        for ti, t in enumerate(config.node_types)
        for r, res in enumerate((CPU, MEMORY, GPU, PODS))
    }


def _scale(config: GeneratorConfig, res: str) -> float:
    q = config.queues
    if res in (GPU, PODS):
        return q.quota_scale
    return q.cpu_memory_quota_scale or q.quota_scale


def cohort_pool(config: GeneratorConfig, layout: Layout) -> dict[FlavorResource, int]:
    """Nominal quota each cohort holds itself (``cohort_quota_share``)."""
    q = config.queues
    if not q.cohort_quota_share:
        return {}
    per_cohort = q.cohort_quota_share / max(1, q.cohorts)
    return {
        (f, res): _round_quota(total * _scale(config, res) * per_cohort, res)
        for (f, res), total in _capacity(config, layout).items()
        if res in q.covered_resources
    }


def _limits(config: GeneratorConfig, team: Team, total: int, res: str) -> Limits:
    q = config.queues
    if res in q.nominal_quota:
        nominal = parse_quantity(q.nominal_quota[res], res)
    else:
        own = team.share * (1 - q.cohort_quota_share)
        nominal = _round_quota(total * _scale(config, res) * own, res)
    borrowing: int | None = None
    lending: int | None = None
    if team.cohort is not None:
        if res in q.borrowing_limit:
            borrowing = parse_quantity(q.borrowing_limit[res], res)
        elif q.borrowing_limit_fraction is not None:
            borrowing = _round_quota(nominal * q.borrowing_limit_fraction, res)
        if q.lending_limit_fraction is not None:
            lending = min(
                nominal, _round_quota(nominal * q.lending_limit_fraction, res)
            )
    return Limits(nominal, borrowing, lending)


def quota_tree(
    teams: list[Team],
    root: str | None,
    pool: dict[FlavorResource, int] | None = None,
) -> QuotaTree:
    """The teams' quota as Kueue's arithmetic sees it (the one home,
    :class:`placewise.solver.kueue.quota.QuotaTree`): each team a
    ClusterQueue, each cohort holding only the ``pool`` of its own, under
    ``root`` when there is one."""
    queues = {
        t.name: ClusterQueue(
            name=t.name,
            cohort=t.cohort,
            resource_groups=_groups(t.quotas),
        )
        for t in teams
    }
    own = {fr: Limits(v) for fr, v in (pool or {}).items()}
    cohorts = {
        t.cohort: Cohort(name=t.cohort, parent=root, resource_groups=_groups(own))
        for t in teams
        if t.cohort is not None
    }
    if root is not None and cohorts:
        cohorts[root] = Cohort(name=root)
    return QuotaTree.of_queues(queues, cohorts)


def _groups(quotas: dict[FlavorResource, Limits]) -> tuple[ResourceGroup, ...]:
    flavors: dict[str, list[ResourceQuota]] = {}
    for (f, res), lim in quotas.items():
        flavors.setdefault(f, []).append(
            ResourceQuota(
                name=res,
                nominal=lim.nominal,
                borrowing_limit=lim.borrowing,
                lending_limit=lim.lending,
            )
        )
    if not flavors:
        return ()
    covered = tuple(sorted({res for _, res in quotas}))
    return (
        ResourceGroup(
            covered_resources=covered,
            flavors=tuple(
                FlavorQuotas(name=f, resources=tuple(rs)) for f, rs in flavors.items()
            ),
        ),
    )


def fits(tree: QuotaTree, team: str, usage: dict[FlavorResource, int]) -> bool:
    """Kueue would admit ``usage`` in ``team``'s queue now."""
    return all(tree.available(team, fr) >= v for fr, v in usage.items() if v > 0)


def _meta(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return meta


def _kueue(config: GeneratorConfig) -> str:
    return f"kueue.x-k8s.io/{config.api_version}"


def cluster_queue_objects(
    config: GeneratorConfig, teams: list[Team]
) -> list[dict[str, Any]]:
    q = config.queues
    out = []
    for team in teams:
        flavors = []
        for flavor in team.flavors:
            resources = []
            for res in q.covered_resources:
                lim = team.quotas[(flavor, res)]
                entry = {"name": res, "nominalQuota": format_quantity(lim.nominal, res)}
                if lim.borrowing is not None:
                    entry["borrowingLimit"] = format_quantity(lim.borrowing, res)
                if lim.lending is not None:
                    entry["lendingLimit"] = format_quantity(lim.lending, res)
                resources.append(entry)
            flavors.append({"name": flavor, "resources": resources})
        preemption: dict[str, Any] = {
            "withinClusterQueue": q.within_cluster_queue,
            "reclaimWithinCohort": q.reclaim_within_cohort,
        }
        if q.borrow_within_cohort != "Never":
            bwc: dict[str, Any] = {"policy": q.borrow_within_cohort}
            if q.borrow_max_priority_threshold is not None:
                bwc["maxPriorityThreshold"] = q.borrow_max_priority_threshold
            preemption["borrowWithinCohort"] = bwc
        spec: dict[str, Any] = {
            "namespaceSelector": {}
            if q.namespace_selector == "all"
            else {"matchLabels": {TEAM_LABEL: team.name}},
            "queueingStrategy": q.queueing_strategy,
            "preemption": preemption,
            "flavorFungibility": {
                "whenCanBorrow": q.when_can_borrow,
                "whenCanPreempt": q.when_can_preempt,
            },
            "resourceGroups": [
                {"coveredResources": list(q.covered_resources), "flavors": flavors}
            ],
        }
        if team.cohort is not None:
            spec["cohort" if config.api_version == "v1beta1" else "cohortName"] = (
                team.cohort
            )
        if q.fair_weights:
            spec["fairSharing"] = {"weight": q.fair_weights[teams.index(team)]}
        out.append(
            {
                "apiVersion": _kueue(config),
                "kind": "ClusterQueue",
                "metadata": _meta(team.name, {TEAM_LABEL: team.name}),
                "spec": spec,
            }
        )
    return out


def cohort_objects(
    config: GeneratorConfig,
    teams: list[Team],
    pool: dict[FlavorResource, int] | None = None,
) -> list[dict[str, Any]]:
    q = config.queues
    if not q.cohort_objects or q.cohorts == 0:
        return []
    parent_key = "parent" if config.api_version == "v1beta1" else "parentName"
    names = sorted({t.cohort for t in teams if t.cohort})
    out = []
    if q.root_cohort:
        out.append(
            {
                "apiVersion": _kueue(config),
                "kind": "Cohort",
                "metadata": _meta(q.root_cohort),
                "spec": {},
            }
        )
    for name in names:
        spec: dict[str, Any] = {parent_key: q.root_cohort} if q.root_cohort else {}
        if pool:
            flavors = [
                {
                    "name": t.flavor,
                    "resources": [
                        {
                            "name": res,
                            "nominalQuota": format_quantity(pool[(t.flavor, res)], res),
                        }
                        for res in q.covered_resources
                    ],
                }
                for t in config.node_types
            ]
            spec["resourceGroups"] = [
                {"coveredResources": list(q.covered_resources), "flavors": flavors}
            ]
        out.append(
            {
                "apiVersion": _kueue(config),
                "kind": "Cohort",
                "metadata": _meta(name),
                "spec": spec,
            }
        )
    return out


def local_queue_objects(
    config: GeneratorConfig, teams: list[Team]
) -> list[dict[str, Any]]:
    out = []
    for team in teams:
        for ns in team.namespaces:
            meta = _meta(team.local_queue)
            meta["namespace"] = ns
            out.append(
                {
                    "apiVersion": _kueue(config),
                    "kind": "LocalQueue",
                    "metadata": meta,
                    "spec": {"clusterQueue": team.name},
                }
            )
    return out


def priority_class_objects(config: GeneratorConfig) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": _kueue(config),
            "kind": "WorkloadPriorityClass",
            "metadata": _meta(p.name),
            "value": p.value,
            **({"description": p.description} if p.description else {}),
        }
        for p in config.priority_classes
    ]


def namespace_objects(
    config: GeneratorConfig, teams: list[Team], extra: list[str]
) -> list[dict[str, Any]]:
    """Team namespaces carry the team label that ``namespaceSelector`` matches."""
    out = []
    team_of = {ns: t.name for t in teams for ns in t.namespaces}
    for ns in [*team_of, *sorted(set(extra) - set(team_of))]:
        labels = {"kubernetes.io/metadata.name": ns, FAMILY_LABEL: config.name}
        if ns in team_of:
            labels[TEAM_LABEL] = team_of[ns]
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": _meta(ns, labels),
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }
        )
    return out


def kueue_configuration(config: GeneratorConfig) -> list[dict[str, Any]]:
    """Kueue's own Configuration, when the family runs with fair sharing."""
    if not config.queues.fair_sharing:
        return []
    return [
        {
            "apiVersion": "config.kueue.x-k8s.io/v1beta1",
            "kind": "Configuration",
            "metadata": _meta("kueue-config"),
            "fairSharing": {"enable": True},
        }
    ]
