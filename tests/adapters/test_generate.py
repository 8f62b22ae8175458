"""The seeded instance generator: determinism, consistency, formats, families, CLI.

The consistency checks re-derive everything from the emitted objects alone
(node usage, quota usage, references), so they hold the generator to what a
reader of the files would see, not to its internal bookkeeping.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import math
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placewise.adapters.cli.generate import register
from placewise.adapters.generate import (
    FAMILIES,
    ConfigError,
    GeneratorConfig,
    QueueConfig,
    WorkloadClass,
    dumps,
    family,
    generate,
    summary,
    write,
)
from placewise.adapters.generate._units import parse_quantity
from placewise.adapters.generate.workloads import compress_hostnames
from placewise.adapters.io.loader import load_snapshot

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "benchmarks" / "configs"
RESOURCES = ("cpu", "memory", "nvidia.com/gpu", "pods")
TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
    "kueue.x-k8s.io/podset-slice-required-topology",
)

SMALL = {
    # Families too big for a unit test, shrunk but otherwise unchanged.
    "kueue-tas-perf": {"pending": 600},
    "load-10k": {"nodes": 600, "running_pods": 1200, "pending": 120},
    "scale-1000": {"nodes": 600, "pending": 120},
    "scale-3000": {"nodes": 600, "pending": 120},
    "scale-10000": {"nodes": 600, "pending": 120},
    "scale-50000": {"nodes": 600, "pending": 120},
}


def small(name: str) -> GeneratorConfig:
    config = family(name)
    return config.with_overrides(**SMALL.get(name, {}))


# ---------------------------------------------------------------- helpers


def q(value: Any, resource: str) -> int:
    return parse_quantity(str(value), resource)


def requests(pod_spec: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for c in pod_spec["containers"]:
        for r, v in c.get("resources", {}).get("requests", {}).items():
            out[r] += q(v, r)
    return dict(out)


def decode_assignment(ta: dict[str, Any]) -> list[tuple[tuple[str, ...], int]]:
    """Both wire forms of a topologyAssignment as (values, count) pairs."""
    if "domains" in ta:
        return [(tuple(d["values"]), d["count"]) for d in ta["domains"]]
    out = []
    for sl in ta["slices"]:
        n = sl["domainCount"]
        columns = []
        for lvl in sl["valuesPerLevel"]:
            if "universal" in lvl:
                columns.append([lvl["universal"]] * n)
            else:
                ind = lvl["individual"]
                pre, suf = ind.get("prefix", ""), ind.get("suffix", "")
                columns.append([pre + r + suf for r in ind["roots"]])
        pc = sl["podCounts"]
        counts = [pc["universal"]] * n if "universal" in pc else pc["individual"]
        out.extend((tuple(col[i] for col in columns), counts[i]) for i in range(n))
    return out


def by_kind(objects: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for o in objects:
        out[o["kind"]].append(o)
    return out


def is_running(wl: dict[str, Any]) -> bool:
    conds = wl.get("status", {}).get("conditions", [])
    reserved = any(
        c["type"] == "QuotaReserved" and c["status"] == "True" for c in conds
    )
    return reserved and bool(wl.get("status", {}).get("admission"))


def node_usage(objects: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per-node usage as the contract counts it: plain pods plus TAS assignments."""
    kinds = by_kind(objects)
    usage: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(RESOURCES, 0))
    for pod in kinds["Pod"]:
        if pod["status"]["phase"] not in ("Running", "Pending"):
            continue
        if set(pod["metadata"].get("annotations", {})) & set(TAS_ANNOTATIONS):
            continue
        u = usage[pod["spec"]["nodeName"]]
        for r, v in requests(pod["spec"]).items():
            u[r] += v
        u["pods"] += 1
    for wl in filter(is_running, kinds["Workload"]):
        for ps, psa in zip(
            wl["spec"]["podSets"],
            wl["status"]["admission"]["podSetAssignments"],
            strict=True,
        ):
            ta = psa.get("topologyAssignment")
            if ta is None:
                continue
            per_pod = requests(ps["template"]["spec"])
            for values, count in decode_assignment(ta):
                u = usage[values[-1]]
                for r, v in per_pod.items():
                    u[r] += v * count
                u["pods"] += count
    return usage


def check_consistency(config: GeneratorConfig, objects: list[dict[str, Any]]) -> None:
    """Everything a reader of the instance could hold against it."""
    kinds = by_kind(objects)
    snapshot = config.snapshot_time

    # Unique identities, namespaces exist, timestamps in the past, uids present.
    seen = set()
    namespaces = {n["metadata"]["name"] for n in kinds["Namespace"]}
    for o in objects:
        meta = o["metadata"]
        key = (o["kind"], meta.get("namespace"), meta["name"])
        assert key not in seen, f"duplicate {key}"
        seen.add(key)
        assert meta.get("uid") and meta.get("creationTimestamp"), key
        assert meta["creationTimestamp"] < snapshot, key
        if o["kind"] in ("Pod", "Workload", "LocalQueue"):
            assert meta["namespace"] in namespaces, key

    # Node capacity: usage never above allocatable, allocatable within capacity.
    nodes = {n["metadata"]["name"]: n for n in kinds["Node"]}
    for name, used in node_usage(objects).items():
        assert name in nodes, f"usage on unknown node {name}"
        alloc = nodes[name]["status"]["allocatable"]
        for r in RESOURCES:
            assert used[r] <= q(alloc.get(r, "0"), r), (name, r, used[r], alloc)
    for n in kinds["Node"]:
        for r, v in n["status"]["allocatable"].items():
            assert q(v, r) <= q(n["status"]["capacity"][r], r)
        for level in (config.block_label, config.rack_label, "kubernetes.io/hostname"):
            assert level in n["metadata"]["labels"]

    # References: flavors -> topology, CQs -> flavors/cohorts, LQs -> CQs.
    topologies = {t["metadata"]["name"] for t in kinds["Topology"]}
    flavors = {f["metadata"]["name"]: f for f in kinds["ResourceFlavor"]}
    for f in flavors.values():
        assert f["spec"].get("topologyName", next(iter(topologies))) in topologies
        labels = f["spec"]["nodeLabels"].items()
        assert any(labels <= n["metadata"]["labels"].items() for n in kinds["Node"])
    cqs = {c["metadata"]["name"]: c for c in kinds["ClusterQueue"]}
    cohort_key = "cohort" if config.api_version == "v1beta1" else "cohortName"
    limits: dict[tuple[str, str, str], tuple[int, int | None, int | None]] = {}
    for name, cq in cqs.items():
        cohort = cq["spec"].get(cohort_key)
        for group in cq["spec"]["resourceGroups"]:
            for fq in group["flavors"]:
                assert fq["name"] in flavors
                assert [r["name"] for r in fq["resources"]] == group["coveredResources"]
                for r in fq["resources"]:
                    res = r["name"]
                    nominal = q(r["nominalQuota"], res)
                    borrow = r.get("borrowingLimit")
                    lend = r.get("lendingLimit")
                    if cohort is None:
                        assert borrow is None and lend is None, name
                    if lend is not None:
                        assert q(lend, res) <= nominal, name
                    limits[(name, fq["name"], res)] = (
                        nominal,
                        None if borrow is None else q(borrow, res),
                        None if lend is None else q(lend, res),
                    )
    local_queues = {
        (lq["metadata"]["namespace"], lq["metadata"]["name"]): lq["spec"][
            "clusterQueue"
        ]
        for lq in kinds["LocalQueue"]
    }
    assert set(local_queues.values()) <= set(cqs)
    priority_classes = {
        p["metadata"]["name"]: p["value"] for p in kinds["WorkloadPriorityClass"]
    }

    # Workloads: queue, priority, pod sets; running ones: admission adds up.
    usage: dict[tuple[str, str, str], int] = defaultdict(int)
    for wl in kinds["Workload"]:
        spec = wl["spec"]
        cq = local_queues[(wl["metadata"]["namespace"], spec["queueName"])]
        ref = spec.get("priorityClassRef", {}).get("name") or spec.get(
            "priorityClassName"
        )
        if ref is not None:
            assert spec["priority"] == priority_classes[ref]
        for ps in spec["podSets"]:
            assert ps["count"] >= 1 and ps.get("minCount", 1) <= ps["count"]
            tr = ps.get("topologyRequest", {})
            if "podSetSliceSize" in tr:
                assert ps["count"] % tr["podSetSliceSize"] == 0
            assert set(requests(ps["template"]["spec"])) <= set(
                config.queues.covered_resources
            )
        if not is_running(wl):
            assert "admission" not in wl.get("status", {})
            continue
        admission = wl["status"]["admission"]
        assert admission["clusterQueue"] == cq
        for ps, psa in zip(
            spec["podSets"], admission["podSetAssignments"], strict=True
        ):
            assert psa["name"] == ps["name"] and psa["count"] == ps["count"]
            per_pod = requests(ps["template"]["spec"])
            flavor = set(psa["flavors"].values())
            assert len(flavor) == 1
            (fl,) = flavor
            for res, total in psa["resourceUsage"].items():
                assert q(total, res) == per_pod[res] * psa["count"]
                usage[(cq, fl, res)] += q(total, res)
            if "topologyAssignment" in psa:
                domains = decode_assignment(psa["topologyAssignment"])
                assert sum(c for _, c in domains) == psa["count"]
                want = flavors[fl]["spec"]["nodeLabels"].items()
                for values, _ in domains:
                    assert want <= nodes[values[-1]]["metadata"]["labels"].items()

    # Quota: each CQ within nominal + borrowingLimit; borrowed quota is lent
    # by others within their lendingLimit, or by a cohort's own pool.
    cohort_pool: dict[tuple[str, str], int] = defaultdict(int)
    for co in kinds.get("Cohort", []):
        for group in co["spec"].get("resourceGroups", []):
            for fq in group["flavors"]:
                for r in fq["resources"]:
                    cohort_pool[(fq["name"], r["name"])] += q(
                        r["nominalQuota"], r["name"]
                    )
    for (cq, fl, res), used in usage.items():
        nominal, borrow, _ = limits[(cq, fl, res)]
        assert used <= nominal + (borrow if borrow is not None else 10**30), (
            cq,
            fl,
            res,
        )
    pool: dict[tuple[str, str], list[tuple[int, int, int | None]]] = defaultdict(list)
    for (cq, fl, res), (nominal, _, lend) in limits.items():
        pool[(fl, res)].append((usage.get((cq, fl, res), 0), nominal, lend))
    for key, members in pool.items():
        borrowed = sum(max(0, u - n) for u, n, _ in members)
        lendable = cohort_pool[key] + sum(
            min(max(0, n - u), lend if lend is not None else n)
            for u, n, lend in members
        )
        if config.queues.cohorts:
            assert borrowed <= lendable, key
        else:
            assert borrowed == 0, key


# ---------------------------------------------------------------- determinism


GENERATE_BOTH = """
import sys
from placewise.adapters.generate import dumps, family, generate
objects = generate(family("default"), 7)
sys.stdout.write(dumps(objects, "yaml") + "\\0" + dumps(objects, "json"))
"""


def _generate_in_a_new_process(hash_seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", GENERATE_BOTH],
        capture_output=True,
        env=env,
        timeout=120,
        check=True,
        text=True,
    )
    return done.stdout.split("\0")


def test_same_seed_gives_identical_bytes() -> None:
    """Same config and seed: byte-identical YAML and JSON, run after run —
    in two processes with different string hashing (one process could share
    state between the runs, and set/dict order can follow the hash seed)."""
    first = _generate_in_a_new_process("1")
    assert first == _generate_in_a_new_process("2")
    here = generate(family("default"), 7)
    assert first == [dumps(here, "yaml"), dumps(here, "json")]


def test_different_seed_gives_different_instance() -> None:
    """Another seed changes the instance (running pods, pending mix)."""
    config = family("default")
    assert dumps(generate(config, 1)) != dumps(generate(config, 2))


def test_pending_count_does_not_change_the_cluster() -> None:
    """Each phase has its own random stream: more pending work, same running state."""
    config = family("fragmented")
    a = generate(config, 3)
    b = generate(config.with_overrides(pending=10), 3)

    def running(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [o for o in objs if o["kind"] != "Workload" or is_running(o)]

    assert running(a) == running(b)


# ---------------------------------------------------------------- counts and shape


def test_default_object_counts() -> None:
    """The default family: 64 hosts, one topology and flavor, 3 teams, 40 pending."""
    config = family("default")
    counts = summary(generate(config, 1))
    assert counts["Node"] == 64 and counts["Topology"] == 1
    assert counts["ResourceFlavor"] == 1 and counts["ClusterQueue"] == 3
    assert counts["LocalQueue"] == 3 and counts["Cohort"] == 1
    assert counts["WorkloadPriorityClass"] == 3
    assert counts["Workload/pending"] == 40 and counts["Workload/running"] > 0
    assert counts["Pod"] > 0


def test_nodes_fill_racks_in_order_and_last_rack_may_be_partial() -> None:
    """--nodes 100 with 16 hosts a rack: 7 racks, the last with 4 hosts."""
    objects = generate(family("fragmented").with_overrides(nodes=100, pending=5), 1)
    nodes = [o for o in objects if o["kind"] == "Node"]
    assert len(nodes) == 100
    racks: dict[str, int] = defaultdict(int)
    for n in nodes:
        racks[n["metadata"]["labels"]["cloud.provider.com/topology-rack"]] += 1
    assert sorted(racks.values()) == [4] + [16] * 6


def test_exact_running_pod_count() -> None:
    """running_pods places exactly that many plain pods."""
    config = family("load-10k").with_overrides(nodes=200, running_pods=321, pending=3)
    pods = [o for o in generate(config, 1) if o["kind"] == "Pod"]
    assert len(pods) == 321


def test_too_many_running_pods_is_a_config_error() -> None:
    """More pods than the hosts can take is reported, not silently truncated."""
    config = family("default").with_overrides(nodes=2, running_pods=500)
    with pytest.raises(ConfigError, match="running_pods"):
        generate(config, 1)


# ---------------------------------------------------------------- consistency


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_generates_a_consistent_instance(name: str) -> None:
    """Every family (big ones shrunk) is internally consistent."""
    config = small(name)
    objects = generate(config, 11)
    check_consistency(config, objects)
    counts = summary(objects)
    assert counts.get("Workload/pending", 0) == config.pending
    assert counts["Node"] == config.node_count


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_pending_pod_fits_an_empty_host(name: str) -> None:
    """No family asks for pods no host could ever run (by accident)."""
    config = small(name).with_overrides(pending=min(small(name).pending, 300))
    objects = generate(config, 2)
    nodes = [o for o in objects if o["kind"] == "Node"]
    for wl in objects:
        if wl["kind"] != "Workload" or is_running(wl):
            continue
        for ps in wl["spec"]["podSets"]:
            spec = ps["template"]["spec"]
            need = {**requests(spec), "pods": 1}
            selector = spec.get("nodeSelector", {}).items()
            assert any(
                selector <= n["metadata"]["labels"].items()
                and all(
                    v <= q(n["status"]["allocatable"].get(r, "0"), r)
                    for r, v in need.items()
                )
                for n in nodes
            ), (name, wl["metadata"]["name"], need)


@pytest.mark.parametrize("name", ["default", "multi-team", "preemption-heavy"])
def test_v1beta1_instance_is_consistent(name: str) -> None:
    """The v1beta1 wire forms (spec.cohort, priorityClassName, levels/domains)."""
    config = family(name).with_overrides(api_version="v1beta1")
    objects = generate(config, 5)
    check_consistency(config, objects)
    kinds = by_kind(objects)
    assert all(
        o["apiVersion"] == "kueue.x-k8s.io/v1beta1" for o in kinds["ClusterQueue"]
    )
    assert all("cohort" in c["spec"] for c in kinds["ClusterQueue"])
    running = [w for w in kinds["Workload"] if is_running(w)]
    assert running
    for w in running:
        ta = w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
        assert "domains" in ta and "slices" not in ta
    assert all("priorityClassName" in w["spec"] for w in kinds["Workload"])


def test_v1beta1_and_v1beta2_assignments_decode_the_same() -> None:
    """Only the wire form differs between API versions, never the placement."""
    config = family("preemption-heavy")
    b2 = generate(config, 4)
    b1 = generate(config.with_overrides(api_version="v1beta1"), 4)
    for w1, w2 in zip(b1, b2, strict=True):
        if w1["kind"] == "Workload" and is_running(w1):
            psa1 = w1["status"]["admission"]["podSetAssignments"][0]
            psa2 = w2["status"]["admission"]["podSetAssignments"][0]
            assert sorted(decode_assignment(psa1["topologyAssignment"])) == sorted(
                decode_assignment(psa2["topologyAssignment"])
            )


def test_workload_pods_are_tas_annotated() -> None:
    """Emitted pods of TAS Workloads carry a pod-set topology annotation,
    so they are not counted a second time as plain pods."""
    objects = generate(family("preemption-heavy"), 2)
    wl_pods = [
        p
        for p in objects
        if p["kind"] == "Pod" and p["metadata"]["labels"].get("kueue.x-k8s.io/managed")
    ]
    assert wl_pods
    for pod in wl_pods:
        assert set(pod["metadata"]["annotations"]) & set(TAS_ANNOTATIONS)


@pytest.mark.parametrize(
    ("hosts", "counts"),
    [
        (["h-b0-r1-n03"], [2]),
        (["h-b0-r1-n03", "h-b0-r1-n07", "h-b0-r2-n01"], [1, 1, 1]),
        (["ab", "abab", "aba"], [1, 2, 3]),
        (["x", "y"], [4, 4]),
    ],
    ids=["one-host", "common-prefix", "overlapping-prefix-suffix", "nothing-shared"],
)
def test_compressed_slice_decodes_to_the_input(
    hosts: list[str], counts: list[int]
) -> None:
    """The v1beta2 compression is lossless."""
    ta = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [compress_hostnames(hosts, counts)],
    }
    assert decode_assignment(ta) == [
        ((h,), c) for h, c in zip(hosts, counts, strict=True)
    ]


def test_non_tas_flavor_workloads_bring_their_pods() -> None:
    """On a non-TAS flavor a running Workload has no topologyAssignment, so its
    plain bound pods are what count against the hosts."""
    from placewise.adapters.generate import NodeType

    config = family("default").with_overrides(
        node_types=(
            NodeType(name="h100", flavor="h100", fraction=0.5),
            NodeType(
                name="l4",
                flavor="l4-spot",
                fraction=0.5,
                gpus=4,
                cpu="48",
                memory="192Gi",
                tas=False,
                labels={"node.kubernetes.io/instance-type": "g2-standard-48"},
            ),
        ),
        running_workload_share=0.8,
        running_classes=(
            WorkloadClass(
                "infer",
                pod_counts=(1, 2),
                gpus_per_pod=(1,),
                cpu_per_gpu="4",
                memory_per_gpu="16Gi",
            ),
        ),
        queues=QueueConfig(cluster_queues=2, flavor_order="rotate"),
    )
    objects = generate(config, 3)
    check_consistency(config, objects)
    kinds = by_kind(objects)
    spot = next(
        f for f in kinds["ResourceFlavor"] if f["metadata"]["name"] == "l4-spot"
    )
    assert "topologyName" not in spot["spec"]
    on_spot = [
        w
        for w in kinds["Workload"]
        if is_running(w)
        and w["status"]["admission"]["podSetAssignments"][0]["flavors"][
            "nvidia.com/gpu"
        ]
        == "l4-spot"
    ]
    assert on_spot
    for w in on_spot:
        psa = w["status"]["admission"]["podSetAssignments"][0]
        assert "topologyAssignment" not in psa
        pods = [
            p
            for p in kinds["Pod"]
            if p["metadata"]["name"].startswith(w["metadata"]["name"] + "-")
            and p["metadata"]["namespace"] == w["metadata"]["namespace"]
        ]
        assert len(pods) == psa["count"]
        assert all("annotations" not in p["metadata"] for p in pods)


def test_fragmented_family_fragments_the_hosts() -> None:
    """Many GPU hosts are partially used, and free GPUs sit in odd-sized holes."""
    config = family("fragmented")
    objects = generate(config, 1)
    usage = node_usage(objects)
    gpus = [usage[n]["nvidia.com/gpu"] for n in usage]
    partial = sum(1 for g in gpus if 0 < g < 8)
    assert partial >= 0.4 * config.node_count
    holes = {8 - g for g in gpus if 0 < g < 8}
    assert {1, 2, 3, 5, 7} <= holes


def test_fragmented_family_leaves_room_for_an_optimizer() -> None:
    """A Kueue-order greedy (priority, then FIFO; BestFit racks, emptiest hosts
    first) admits >= 5% fewer GPUs than the same greedy fed GPU-dense work
    first into the tightest hosts -- a plan an optimizer can always find."""
    config = family("fragmented")
    objects = generate(config, 1)
    probe = _GreedyProbe(config, objects)
    kueue_order = sorted(
        probe.pending, key=lambda w: (-w["priority"], w["created"], w["name"])
    )
    dense_order = sorted(
        probe.pending,
        key=lambda w: (-w["req"][2] / max(w["req"][0], 1), -w["req"][2] * w["count"]),
    )
    kueue = probe.run(kueue_order, tight=False)
    better = probe.run(dense_order, tight=True)
    assert better >= 1.05 * kueue, (kueue, better)


class _GreedyProbe:
    """A deliberately small Kueue-like TAS greedy over the emitted objects
    (quota ignored), enough to show that placement order matters."""

    def __init__(self, config: GeneratorConfig, objects: list[dict[str, Any]]) -> None:
        nodes = [o for o in objects if o["kind"] == "Node"]
        usage = node_usage(objects)
        self.free = np.array(
            [
                [
                    q(n["status"]["allocatable"].get(r, "0"), r)
                    - usage.get(n["metadata"]["name"], dict.fromkeys(RESOURCES, 0))[r]
                    for n in nodes
                ]
                for r in RESOURCES
            ],
            dtype=np.int64,
        )
        usable = np.array(
            [
                not n["spec"].get("unschedulable")
                and not n["spec"].get("taints")
                and n["status"]["conditions"][0]["status"] == "True"
                for n in nodes
            ]
        )
        self.free[:, ~usable] = 0
        labels = [n["metadata"]["labels"] for n in nodes]
        self.domains = {
            config.block_label: np.unique(
                [lb[config.block_label] for lb in labels], return_inverse=True
            )[1],
            config.rack_label: np.unique(
                [lb[config.block_label] + "/" + lb[config.rack_label] for lb in labels],
                return_inverse=True,
            )[1],
        }
        self.pending = []
        for o in objects:
            if o["kind"] == "Workload" and not is_running(o):
                ps = o["spec"]["podSets"][0]
                req = requests(ps["template"]["spec"])
                self.pending.append(
                    {
                        "name": o["metadata"]["name"],
                        "priority": o["spec"].get("priority", 0),
                        "created": o["metadata"]["creationTimestamp"],
                        "count": ps["count"],
                        "req": np.array([req.get(r, 0) for r in RESOURCES[:3]] + [1]),
                        "topology": ps.get("topologyRequest", {}),
                    }
                )

    def run(self, order: list[dict[str, Any]], *, tight: bool) -> int:
        free = self.free.copy()
        admitted = 0
        for w in order:
            fits = np.full(free.shape[1], 10**9)
            for r in range(4):
                if w["req"][r]:
                    fits = np.minimum(fits, free[r] // w["req"][r])
            hosts = self._place(fits, w, tight)
            if hosts is None:
                continue
            for h, k in hosts:
                free[:, h] -= w["req"] * k
            admitted += int(w["req"][2]) * w["count"]
        return admitted

    def _place(
        self, fits: Any, w: dict[str, Any], tight: bool
    ) -> list[tuple[int, int]] | None:
        n = w["count"]
        topo = w["topology"]
        if "podSetSliceSize" in topo:  # not in the fragmented family
            return None
        level = topo.get("required") or topo.get("preferred")
        if level is None:  # unconstrained: least free capacity first
            return self._fill(np.flatnonzero(fits > 0), fits, n, ascending=True)
        doms = self.domains.get(level)
        if doms is None:
            return None
        per_domain = np.bincount(doms, weights=fits)
        ok = np.flatnonzero(per_domain >= n)
        if ok.size == 0:
            if "required" in topo:
                return None
            return self._fill(np.flatnonzero(fits > 0), fits, n, ascending=tight)
        best = ok[np.argmin(per_domain[ok])]  # BestFit: the tightest domain that fits
        return self._fill(np.flatnonzero((doms == best) & (fits > 0)), fits, n, tight)

    @staticmethod
    def _fill(
        hosts: Any, fits: Any, n: int, ascending: bool
    ) -> list[tuple[int, int]] | None:
        hosts = hosts[
            np.argsort(fits[hosts] if ascending else -fits[hosts], kind="stable")
        ]
        out = []
        for i, h in enumerate(hosts):
            if n == 0:
                break
            if fits[h] >= n:  # the last piece goes to the tightest host that takes it
                rest = hosts[i:][fits[hosts[i:]] >= n]
                h = rest[np.argmin(fits[rest])]
            k = int(min(fits[h], n))
            out.append((int(h), k))
            n -= k
        return out if n == 0 else None


def test_kueue_tas_perf_matches_kueues_generator() -> None:
    """1 block x 10 racks x 64 nodes, 30 queues in 5 cohorts, 500 workloads per
    queue in Kueue's nine classes, cpu quota 20 / borrowingLimit 100."""
    config = family("kueue-tas-perf")
    objects = generate(config, 1)
    kinds = by_kind(objects)
    assert len(kinds["Node"]) == 640
    assert {n["status"]["allocatable"]["cpu"] for n in kinds["Node"]} == {"96"}
    assert (
        len(
            {
                n["metadata"]["labels"]["cloud.provider.com/topology-rack"]
                for n in kinds["Node"]
            }
        )
        == 10
    )
    assert len(kinds["ClusterQueue"]) == 30 and len(kinds["Cohort"]) == 5
    for cq in kinds["ClusterQueue"]:
        (res,) = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
        assert res == {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}
    per_queue: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for w in kinds["Workload"]:
        per_queue[w["spec"]["queueName"]][
            w["metadata"]["labels"]["placewise.io/class"]
        ] += 1
    want = {
        "small-required-rack": 120,
        "small-preferred-rack": 120,
        "small-balanced-rack": 110,
        "medium-required-rack": 34,
        "medium-preferred-rack": 33,
        "medium-balanced-rack": 33,
        "large-required-rack": 17,
        "large-preferred-rack": 17,
        "large-balanced-rack": 16,
    }
    assert len(per_queue) == 30
    assert all(dict(v) == want for v in per_queue.values())
    balanced = next(
        w for w in kinds["Workload"] if "large-balanced" in w["metadata"]["name"]
    )
    assert balanced["spec"]["podSets"][0]["topologyRequest"] == {
        "podSetSliceRequiredTopology": "cloud.provider.com/topology-rack",
        "podSetSliceSize": 4,
    }


_levels = st.sampled_from(["block", "rack", "hostname"])


@st.composite
def _classes(draw: st.DrawFn) -> WorkloadClass:
    topology = draw(st.sampled_from(["required", "preferred", "unconstrained", "none"]))
    level = draw(_levels)
    slice_size = draw(st.sampled_from([None, 1, 2]))
    slice_level = None
    if slice_size is not None:
        deeper = ["block", "rack", "hostname"]
        if topology in ("required", "preferred"):
            deeper = deeper[deeper.index(level) :]
        slice_level = draw(st.sampled_from(deeper))
    counts = tuple(
        sorted(set(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))))
    )
    if slice_size:
        counts = tuple(sorted({c * slice_size for c in counts}))
    return WorkloadClass(
        name=draw(st.sampled_from(["a", "b", "c"])) + str(len(counts)),
        pod_counts=counts,
        gpus_per_pod=tuple(draw(st.sets(st.integers(0, 8), min_size=1, max_size=3))),
        topology=topology,
        level=level,
        slice_level=slice_level,
        slice_size=slice_size,
        partial_probability=0.0 if slice_size else draw(st.sampled_from([0.0, 0.5])),
        priority_classes=draw(
            st.sampled_from([{}, {"low": 1.0}, {"normal": 1, "high": 1}])
        ),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.tuples(st.integers(1, 2), st.integers(1, 3), st.integers(1, 6)),
    fill=st.floats(0, 1),
    share=st.floats(0, 1),
    cqs=st.integers(1, 4),
    cohorts=st.integers(0, 2),
    borrow=st.sampled_from([None, 0.0, 0.5]),
    lend=st.sampled_from([None, 0.0, 0.5, 1.0]),
    version=st.sampled_from(["v1beta1", "v1beta2"]),
    pods=st.booleans(),
    classes=st.lists(_classes(), min_size=1, max_size=3, unique_by=lambda c: c.name),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_configs_give_consistent_instances(
    shape: tuple[int, int, int],
    fill: float,
    share: float,
    cqs: int,
    cohorts: int,
    borrow: float | None,
    lend: float | None,
    version: str,
    pods: bool,
    classes: list[WorkloadClass],
    seed: int,
) -> None:
    """Whatever the knobs, the instance stays consistent (property test)."""
    cohorts = min(cohorts, cqs)
    queues = QueueConfig(
        cluster_queues=cqs,
        cohorts=cohorts,
        share_concentration=1.0,
        borrowing_limit_fraction=borrow if cohorts else None,
        lending_limit_fraction=lend if cohorts else None,
    )
    config = GeneratorConfig(
        blocks=shape[0],
        racks_per_block=shape[1],
        hosts_per_rack=shape[2],
        running_fill=fill,
        running_workload_share=share,
        api_version=version,  # type: ignore[arg-type]
        emit_workload_pods=pods,
        queues=queues,
        classes=tuple(classes),
        pending=12,
    )
    objects = generate(config, seed)
    check_consistency(config, objects)
    assert summary(objects).get("Workload/pending", 0) == 12


# ---------------------------------------------------------------- formats


def test_yaml_and_json_round_trip() -> None:
    """YAML (multi-document) and JSON (kind: List) both read back to the objects."""
    objects = generate(family("multi-team").with_overrides(nodes=64, pending=30), 3)
    docs = list(yaml.load_all(dumps(objects, "yaml"), Loader=yaml.CSafeLoader))
    assert docs == objects
    listing = json.loads(dumps(objects, "json"))
    assert listing["kind"] == "List" and listing["apiVersion"] == "v1"
    assert listing["items"] == objects


def test_yaml_has_no_anchors_and_sorted_keys() -> None:
    """kubectl never prints anchors; keys come sorted as kubectl prints them."""
    text = dumps(generate(family("preemption-heavy"), 1))
    assert "&id" not in text and "*id" not in text
    first = text.split("\n---\n")[0]
    top = [line.split(":")[0] for line in first.splitlines() if line and line[0] != " "]
    assert top == sorted(top)


@pytest.mark.parametrize(
    "name", ["default", "multi-team", "preemption-heavy", "kueue-tas-perf"]
)
@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_yaml_is_byte_identical_to_libyaml(name: str, version: str) -> None:
    """The fast block writer emits exactly what PyYAML's CSafeDumper emits."""
    config = small(name).with_overrides(api_version=version, pending=50)
    objects = generate(config, 9)
    reference = yaml.dump_all(
        objects,
        Dumper=yaml.CSafeDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )
    assert dumps(objects) == reference


def test_yaml_quoting_and_fallbacks_match_libyaml() -> None:
    """Strings that need quotes, unicode, floats, nulls and nested lists come
    out as libyaml writes them."""
    awkward = {
        "metadata": {
            "name": "x",
            "labels": {
                "a": "8",
                "b": "true",
                "c": "",
                "d": "on",
                "e": "a: b",
                "f": "-x",
                "g": "x y",
                "h": " lead",
                "i": "1.5",
                "j": "0x1F",
                "k": "ü-é",
                "l": "2025-01-01T00:00:00Z",
                "m": "null",
                "n": "#x",
                "o": "a'b",
            },
        },
        "spec": {"list": [[1, 2], [], {}], "f": 0.5, "n": None, "b": False, "i": -3},
        "status": [{"x": {"y": [{"z": "1"}]}}],
    }
    reference = yaml.dump(
        awkward,
        Dumper=yaml.CSafeDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )
    assert dumps([awkward]) == reference
    plain = {k: v for k, v in awkward.items() if k != "spec"}
    assert dumps([plain]) == yaml.dump(
        plain,
        Dumper=yaml.CSafeDumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 16,
    )


def test_write_to_path_and_stream(tmp_path: Path) -> None:
    """write() takes a path or a text stream; both get the same bytes."""
    objects = generate(family("default"), 1)
    write(objects, tmp_path / "a.json", fmt="json")
    stream = io.StringIO()
    write(objects, stream, fmt="json")
    assert (tmp_path / "a.json").read_text() == stream.getvalue()


def test_ten_thousand_node_dump_generates_and_writes() -> None:
    """The load-10k dump (10,000 nodes, 20,000 pods, 2,000 pending) completes
    in both formats (no timing assertion; the report records the times)."""
    objects = generate(family("load-10k"), 1)
    counts = summary(objects)
    assert counts["Node"] == 10_000 and counts["Pod"] == 20_000
    assert counts["Workload/pending"] == 2_000
    with open(os.devnull, "w") as sink:
        write(objects, sink, fmt="yaml")
        write(objects, sink, fmt="json")


def test_loads_through_the_project_loader(tmp_path: Path) -> None:
    """What the generator writes, placewise reads without a warning."""
    for version in ("v1beta1", "v1beta2"):
        config = family("default").with_overrides(api_version=version)
        path = tmp_path / f"{version}.yaml"
        write(generate(config, 1), path)
        snap = load_snapshot([path])
        assert not snap.warnings, snap.warnings


# ---------------------------------------------------------------- configs


def test_committed_configs_equal_the_presets() -> None:
    """benchmarks/configs/<family>.yaml is the preset written out in full.
    If this fails after editing families.py, re-export with
    ``placewise.adapters.generate.families.export("benchmarks/configs")``.
    """
    files = {p.stem for p in CONFIGS.glob("*.yaml")}
    assert files == set(FAMILIES)
    for name in FAMILIES:
        assert GeneratorConfig.from_file(CONFIGS / f"{name}.yaml") == family(name), name


def test_config_round_trips_through_plain_data() -> None:
    """to_dict/from_dict is lossless."""
    for name in FAMILIES:
        config = family(name)
        assert GeneratorConfig.from_dict(config.to_dict()) == config


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"unknown_knob": 1}, "unknown field"),
        ({"queues": {"cohorts": 0, "borrowing_limit_fraction": 0.5}}, "need a cohort"),
        ({"queues": {"lending_limit_fraction": 1.5}}, "lendingLimit"),
        (
            {
                "classes": [
                    {
                        "name": "x",
                        "pod_counts": [3],
                        "slice_level": "rack",
                        "slice_size": 2,
                    }
                ]
            },
            "does not divide",
        ),
        ({"classes": [{"name": "x", "topology": "sideways"}]}, "not one of"),
        ({"classes": [{"name": "x", "cpu_per_pod": "lots"}]}, "quantity"),
        ({"blocks": 0}, "shape"),
        ({"running_fill": 1.5}, "running_fill"),
    ],
    ids=[
        "typo",
        "borrowing-without-cohort",
        "lending-above-nominal",
        "slice-size",
        "bad-literal",
        "bad-quantity",
        "empty-shape",
        "fill-above-one",
    ],
)
def test_invalid_configs_are_rejected(change: dict[str, Any], match: str) -> None:
    """Bad configs fail early with the field named."""
    with pytest.raises(ConfigError, match=match):
        GeneratorConfig.from_dict(change)


def test_config_dataclasses_validate_directly() -> None:
    """The same checks guard values built in code."""
    with pytest.raises(ConfigError):
        QueueConfig(cluster_queues=2, cohorts=0, lending_limit_fraction=0.5)
    with pytest.raises(ConfigError):
        WorkloadClass(
            "x", topology="required", level="hostname", slice_level="rack", slice_size=1
        )
    config = dataclasses.replace(family("default"), pending=0)
    assert summary(generate(config, 1)).get("Workload/pending", 0) == 0


# ---------------------------------------------------------------- CLI


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="placewise")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["generate", *argv])


def test_cli_writes_the_requested_instance(tmp_path: Path) -> None:
    """--shape, --pending, --seed, --api-version and -o end up in the file."""
    out = tmp_path / "i.yaml"
    args = parse(
        [
            "--shape",
            "1x2x4",
            "--pending",
            "5",
            "--seed",
            "3",
            "--api-version",
            "v1beta1",
            "-o",
            str(out),
        ]
    )
    assert args.run(args) == 0
    objects = list(yaml.load_all(out.read_text(), Loader=yaml.CSafeLoader))
    counts = summary(objects)
    assert counts["Node"] == 8 and counts["Workload/pending"] == 5
    assert all(
        o["apiVersion"].endswith("v1beta1")
        for o in objects
        if "kueue" in o["apiVersion"]
    )
    expected = family("default").with_overrides(
        blocks=1, racks_per_block=2, hosts_per_rack=4, pending=5, api_version="v1beta1"
    )
    assert out.read_text() == dumps(generate(expected, 3))


def test_cli_writes_json_where_the_file_name_says_so(tmp_path: Path) -> None:
    """``-o x.json`` without --format wrote YAML, which the loader (reading a
    .json file as JSON) then refused; --format still decides when given."""
    out = tmp_path / "i.json"
    args = parse(["--shape", "1x1x2", "--pending", "1", "-o", str(out)])
    assert args.run(args) == 0
    assert json.loads(out.read_text())["kind"] == "List"
    args = parse(["--shape", "1x1x2", "--format", "yaml", "-o", str(out)])
    assert args.run(args) == 0
    assert next(yaml.safe_load_all(out.read_text()))["kind"] != "List"


def test_cli_json_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    """Without -o the instance goes to stdout; --format json gives a List."""
    args = parse(
        [
            "--family",
            "fragmented",
            "--nodes",
            "40",
            "--pending",
            "3",
            "--running-pods",
            "10",
            "--format",
            "json",
        ]
    )
    assert args.run(args) == 0
    listing = json.loads(capsys.readouterr().out)
    counts = summary(listing["items"])
    assert counts["Node"] == 40 and counts["Workload/pending"] == 3
    plain = [
        p
        for p in listing["items"]
        if p["kind"] == "Pod"
        and "kueue.x-k8s.io/managed" not in p["metadata"]["labels"]
    ]
    assert len(plain) == 10


def test_cli_config_file(tmp_path: Path) -> None:
    """--config reads a YAML config; overrides still apply."""
    args = parse(
        [
            "--config",
            str(CONFIGS / "topology-heavy.yaml"),
            "--nodes",
            "64",
            "--pending",
            "4",
            "-o",
            str(tmp_path / "t.yaml"),
        ]
    )
    assert args.run(args) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--shape", "2x8"],
        ["--shape", "0x1x1"],
        ["--nodes", "10", "--shape", "1x2x4"],
        ["--nodes", "0"],
        ["--pending", "-1"],
        ["--family", "no-such-family"],
    ],
    ids=[
        "shape-syntax",
        "shape-zero",
        "nodes-vs-shape",
        "no-nodes",
        "negative-pending",
        "unknown-family",
    ],
)
def test_cli_bad_usage_exits_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad flags: exit 2 and one clear line on stderr, nothing on stdout."""
    args = parse(argv)
    assert args.run(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "placewise generate: error:" in captured.err


def test_cli_bad_config_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A config with a typo or broken YAML is bad input: exit 2 naming the file."""
    bad = tmp_path / "bad.yaml"
    for text in ("pendng: 3\n", "pending: [\n"):
        bad.write_text(text)
        args = parse(["--config", str(bad)])
        assert args.run(args) == 2
        assert str(bad) in capsys.readouterr().err


def test_cli_mutually_exclusive_sources() -> None:
    """--family and --config together is an argparse error (exit 2)."""
    with pytest.raises(SystemExit) as exc:
        parse(["--family", "default", "--config", "x.yaml"])
    assert exc.value.code == 2


def test_scale_sweep_spans_100_to_50000_hosts() -> None:
    """The scale family covers 100 -> 50,000 hosts with a fifth as many pending."""
    sweep = sorted(
        (family(n).node_count, family(n).pending)
        for n in FAMILIES
        if n.startswith("scale-")
    )
    assert sweep[0] == (100, 20) and sweep[-1] == (50_000, 10_000)
    assert all(math.isclose(p, n / 5) for n, p in sweep)
