"""Teams: ClusterQueues in cohorts, their quotas, namespaces and LocalQueues.

Quotas are split from the capacity of each flavor, so that ``quota_scale``
says directly whether quota or hosts bind.  ``TeamQuotaTree`` re-implements
Kueue's quota arithmetic (nominal, borrowing and lending limits over a cohort
tree) so that running Workloads are only generated where Kueue itself could
have admitted them.
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
from placewise.models.cluster import PODS

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


class TeamQuotaTree:
    """Kueue's quota arithmetic over ClusterQueues and cohorts (one flavor-resource
    at a time, all of them at once).

    Cohorts carry only the ``pool`` of their own; the formulas are those of
    Kueue's ``resource_node.go`` (subtree quota, local quota under a lending
    limit, usage bubbling up past the local quota, and ``available``).
    """

    def __init__(
        self,
        teams: list[Team],
        root: str | None,
        pool: dict[FlavorResource, int] | None = None,
    ) -> None:
        self.parent: dict[str, str | None] = {}
        self.limits: dict[str, dict[FlavorResource, Limits]] = {}
        self.children: dict[str, list[str]] = {}
        for t in teams:
            node = f"cq/{t.name}"
            self.parent[node] = f"cohort/{t.cohort}" if t.cohort else None
            self.limits[node] = t.quotas
            if t.cohort:
                cohort = f"cohort/{t.cohort}"
                self.parent.setdefault(cohort, f"cohort/{root}" if root else None)
                self.limits.setdefault(
                    cohort, {fr: Limits(v) for fr, v in (pool or {}).items()}
                )
                self.children.setdefault(cohort, []).append(node)
                if root:
                    self.parent.setdefault(f"cohort/{root}", None)
                    self.limits.setdefault(f"cohort/{root}", {})
                    kids = self.children.setdefault(f"cohort/{root}", [])
                    if cohort not in kids:
                        kids.append(cohort)
        self.usage: dict[str, dict[FlavorResource, int]] = {k: {} for k in self.parent}
        self._subtree_cache: dict[tuple[str, FlavorResource], int] = {}
        self._local_cache: dict[tuple[str, FlavorResource], int] = {}

    def _subtree(self, node: str, fr: FlavorResource) -> int:
        """Subtree quota: own nominal plus what children do not keep local."""
        key = (node, fr)
        if key not in self._subtree_cache:
            own = self.limits[node].get(fr, Limits(0)).nominal
            self._subtree_cache[key] = own + sum(
                self._subtree(c, fr) - self._local(c, fr)
                for c in self.children.get(node, [])
            )
        return self._subtree_cache[key]

    def _local(self, node: str, fr: FlavorResource) -> int:
        """Quota a lending limit keeps away from the rest of the cohort."""
        key = (node, fr)
        if key not in self._local_cache:
            lim = self.limits[node].get(fr)
            self._local_cache[key] = (
                0
                if lim is None or lim.lending is None
                else max(0, self._subtree(node, fr) - lim.lending)
            )
        return self._local_cache[key]

    def available(self, node: str, fr: FlavorResource) -> int:
        parent = self.parent[node]
        used = self.usage[node].get(fr, 0)
        if parent is None:
            return self._subtree(node, fr) - used
        lq = self._local(node, fr)
        p = self.available(parent, fr)
        lim = self.limits[node].get(fr)
        if lim is not None and lim.borrowing is not None:
            p = min(
                p, (self._subtree(node, fr) - lq) - max(0, used - lq) + lim.borrowing
            )
        return max(0, lq - used) + p

    def fits(self, team: str, usage: dict[FlavorResource, int]) -> bool:
        node = f"cq/{team}"
        return all(self.available(node, fr) >= v for fr, v in usage.items() if v > 0)

    def add(self, team: str, usage: dict[FlavorResource, int]) -> None:
        for fr, v in usage.items():
            node: str | None = f"cq/{team}"
            while node is not None and v > 0:
                local_free = max(0, self._local(node, fr) - self.usage[node].get(fr, 0))
                self.usage[node][fr] = self.usage[node].get(fr, 0) + v
                v -= local_free
                node = self.parent[node]


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
