"""``generate(config, seed)``: the phases that build one instance.

Algorithm overview:

1. Layout — hosts in blocks and racks, node types per rack, cordoned,
   tainted and not-ready hosts.
2. Teams — ClusterQueues with quota shares, cohorts, namespaces.
3. Running Workloads — admitted through Kueue's quota arithmetic and placed
   on free capacity by their topology request.
4. Running pods — plain pods on random hosts; they fragment what is left.
5. Pending Workloads — sampled from the workload classes.
6. Emit — every object as ``kubectl get -o yaml`` shows it, in a fixed order.

Each phase draws from its own random stream (spawned from the seed), so
changing, say, the pending count leaves the cluster and its running work
byte-for-byte the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placewise.adapters.generate import cluster, pods, quota, workloads
from placewise.adapters.generate._units import make_uid, parse_time, timestamp
from placewise.adapters.generate.config import GeneratorConfig
from placewise.adapters.generate.placement import Capacity


def generate(config: GeneratorConfig, seed: int) -> list[dict[str, Any]]:
    """Build a consistent instance; the same config and seed give the same objects.

    Returns Kubernetes objects as plain dicts (``apiVersion``, ``kind``,
    ``metadata`` with name, namespace, labels, uid and creationTimestamp,
    ``spec``, ``status``), ready for :func:`placewise.adapters.generate.write`.
    """
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(5)]
    layout_rng, team_rng, wl_rng, pod_rng, pending_rng = streams
    snapshot = parse_time(config.snapshot_time)

    # Phase 1-2: the cluster and the teams.
    layout = cluster.build_layout(config, layout_rng)
    teams = quota.build_teams(config, layout, team_rng)
    pool = quota.cohort_pool(config, layout)
    state = workloads.Running(
        config=config,
        layout=layout,
        capacity=Capacity(layout),
        teams=teams,
        quota=quota.quota_tree(teams, config.queues.root_cohort, pool),
        snapshot=snapshot,
    )

    # Phase 3-4: running work, big gangs first so they find whole racks.
    running_wl, wl_pods = workloads.running_workloads(state, wl_rng)
    plain_pods = pods.running_pods(state, pod_rng)

    # Phase 5: pending work.
    pending = workloads.pending_workloads(config, teams, snapshot, pending_rng)

    # Phase 6: emit.
    pod_namespaces = sorted({p["metadata"]["namespace"] for p in plain_pods})
    objects: list[dict[str, Any]] = [
        *quota.kueue_configuration(config),
        *quota.namespace_objects(config, teams, pod_namespaces),
        *cluster.node_objects(config, layout, seed, snapshot),
        cluster.topology_object(config),
        *cluster.flavor_objects(config),
        *quota.priority_class_objects(config),
        *quota.cohort_objects(config, teams, pool),
        *quota.cluster_queue_objects(config, teams),
        *quota.local_queue_objects(config, teams),
        *plain_pods,
        *wl_pods,
        *running_wl,
        *pending,
    ]
    created = timestamp(snapshot, -cluster.NODE_AGE_S)
    for obj in objects:
        meta = obj["metadata"]
        meta.setdefault("creationTimestamp", created)
        if "uid" not in meta:
            meta["uid"] = make_uid(
                seed, obj["kind"], meta.get("namespace", ""), meta["name"]
            )
    return objects


def summary(objects: list[dict[str, Any]]) -> dict[str, int]:
    """Object counts by kind, with running and pending Workloads counted apart."""
    counts: dict[str, int] = {}
    for obj in objects:
        kind = obj["kind"]
        if kind == "Workload":
            kind = (
                "Workload/running"
                if obj.get("status", {}).get("admission")
                else ("Workload/pending")
            )
        counts[kind] = counts.get(kind, 0) + 1
    return counts
