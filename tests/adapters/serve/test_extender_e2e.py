"""Gangs submitted as pods land on their planned hosts, whole, via kube-scheduler."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.serve.conftest import (
    assert_sound,
    cosched_group,
    debug,
    kueue_group,
    namespace,
    node,
    pod,
    podgroup,
    wait_for,
)

NODES = [node(f"n{i}") for i in range(1, 7)]


def workload_api_objects() -> list[dict]:
    """A 1.35 Workload (spec.workloadRef) and a 1.36+ PodGroup (schedulingGroup)."""
    wl = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ml"},
        "spec": {
            "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]
        },
    }
    pg = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "pg2", "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    pods = [
        pod(f"wl-{i}", workloadRef={"name": "wl", "podGroup": "workers"})
        for i in range(2)
    ]
    pods += [pod(f"pg2-{i}", schedulingGroup={"podGroupName": "pg2"}) for i in range(2)]
    return [wl, pg, *pods]


def test_gangs_from_pods_bind_whole_on_planned_hosts(harness_factory):
    """Kueue pod groups, a scheduler-plugins PodGroup, both Workload-API forms and a
    lone pod are planned as gangs; kube-scheduler (the stand-in) calling the
    extender binds every pod on exactly the node the plan chose, all at once."""
    h = harness_factory([namespace("ml"), *NODES])
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    gangs = {
        "train": kueue_group("train", 3, gpus=4),
        "sweep": cosched_group("sweep", 2, gpus=2),
    }
    h.create(
        podgroup("sweep", 2),
        *workload_api_objects(),
        *gangs["train"],
        *gangs["sweep"],
        pod("single", gpus=1),
    )
    keys = {"ml/train", "ml/sweep", "ml/wl-workers", "ml/pg2", "ml/single"}
    plan = wait_for(
        lambda: (
            (d := debug(sc)).get("gangs")
            and all(d["gangs"].get(k, {}).get("admitted") for k in keys)
            and d
        ),
        what="plan",
    )
    planned = {p: n for k in keys for p, n in plan["gangs"][k]["nodes"].items()}
    assert len(planned) == 10
    st.run_once()
    placed = h.placement("ml")
    assert placed == planned
    assert_sound(h, {g: [p["metadata"]["name"] for p in ps] for g, ps in gangs.items()})
    scheduled = {e["regarding"]["name"] for e in h.events("Scheduled")}
    wait_for(
        lambda: {e["regarding"]["name"] for e in h.events("Scheduled")} >= set(planned),
        what="Scheduled events",
    )
    assert scheduled <= set(planned)


def test_incomplete_gang_stays_pending_with_reason_then_binds(harness_factory):
    """A pod group missing a member fails filter with the pending reason (and a
    FailedScheduling event); once the last member exists the gang binds whole."""
    h = harness_factory([namespace("ml"), *NODES])
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    late = kueue_group("late", 3, gpus=2)
    h.create(*late[:2])
    wait_for(lambda: "ml/late" in debug(sc).get("gangs", {}), what="gang seen")
    outcomes = st.run_once()
    assert {o.result for o in outcomes} == {"unschedulable"}
    assert all("gang ml/late: waiting for pods: 2/3" in o.message for o in outcomes)
    wait_for(
        lambda: any(
            "waiting for pods: 2/3" in e["note"] for e in h.events("FailedScheduling")
        ),
        what="event",
    )
    conditions = [p["status"].get("conditions") or [] for p in h.pods("ml")]
    assert all(
        any("waiting for pods" in c.get("message", "") for c in cs) for cs in conditions
    )
    assert all(n is None for n in h.placement("ml").values())
    h.create(late[2])
    wait_for(
        lambda: debug(sc)["gangs"].get("ml/late", {}).get("admitted"), what="admitted"
    )
    st.run_once()
    assert all(h.placement("ml").values())
    assert_sound(h, {"late": [p["metadata"]["name"] for p in late]})


def test_gang_that_cannot_fit_fails_every_node_and_vetoes_preemption(harness_factory):
    """Too big for the cluster: every pod fails filter with the solver's reason,
    the extender's empty preempt answer stops kube-scheduler's own preemption,
    and nothing of the gang is bound."""
    h = harness_factory([namespace("ml"), *NODES[:2]])
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    low = pod("low", gpus=4, priority=0)
    h.create(low)
    wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/low", {}).get("admitted"),
        what="low admitted",
    )
    st.run_once()
    big = kueue_group("big", 3, gpus=4)
    h.create(*big)
    wait_for(lambda: "ml/big" in debug(sc).get("gangs", {}), what="big seen")
    outcomes = st.run_once()
    assert [o.result for o in outcomes] == ["unschedulable"] * 3
    assert h.placement("ml")["low"] is not None  # not preempted by the scheduler
    assert all(h.placement("ml")[p["metadata"]["name"]] is None for p in big)


def test_deploy_scheduler_config_wires_the_extender(harness_factory):
    """deploy/scheduler-config.yaml's extender entry (urlPrefix pointed at this
    sidecar) drives a gang through filter and bind; it scores every node, binds
    through the extender and only sends pods that request the managed resource."""
    import yaml

    from placewise.adapters.emulator import ExtenderConfig, SchedulerStandin

    root = Path(__file__).resolve().parents[3]
    (cm,) = yaml.safe_load_all((root / "deploy" / "scheduler-config.yaml").read_text())
    config = yaml.safe_load(cm["data"]["config.yaml"])
    assert config["percentageOfNodesToScore"] == 100
    (entry,) = config["extenders"]
    assert entry["bindVerb"] == "bind" and entry["nodeCacheCapable"] is True
    assert [m["name"] for m in entry["managedResources"]] == ["example.com/gpu"]
    h = harness_factory([namespace("ml"), *NODES[:3]])
    sc = h.sidecar(
        scheduler_names=("placewise-scheduler",),
        managed_resources=("example.com/gpu",),
    )
    entry["urlPrefix"] = sc.url + "/scheduler"
    gang = kueue_group("g", 2, gpus=2, schedulerName="placewise-scheduler")
    cpu_only = pod("cpu-only", gpus=0, schedulerName="placewise-scheduler")
    del cpu_only["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"]
    h.create(*gang, cpu_only)
    nodes = wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/g", {}).get("nodes"), what="plan"
    )
    st = SchedulerStandin(
        h.emu, [ExtenderConfig.from_config(entry)], scheduler_name="placewise-scheduler"
    )
    st.run_once()
    placed = h.placement("ml")
    assert {p: placed[p] for p in nodes} == nodes
    assert placed["cpu-only"] is not None  # not managed: kube-scheduler alone
    assert "ml/cpu-only" not in debug(sc)["gangs"]


def test_kueue_queue_quota_and_non_tas_flavor_hosts(harness_factory):
    """A pod group in a Kueue LocalQueue is admitted through that ClusterQueue:
    its flavor's nodes only (hosts chosen first-fit, no topology in the
    flavor), and a second gang over the quota stays pending with Kueue's
    quota reason."""
    api = "kueue.x-k8s.io/v1beta2"
    objects = [
        namespace("ml"),
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": "a100"},
            "spec": {"nodeLabels": {"gpu": "a100"}},
        },
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "example.com/gpu"],
                        "flavors": [
                            {
                                "name": "a100",
                                "resources": [
                                    {"name": "cpu", "nominalQuota": "16"},
                                    {"name": "example.com/gpu", "nominalQuota": "8"},
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ml"},
            "spec": {"clusterQueue": "cq"},
        },
        node("n1", gpu="h100"),
        node("n2", gpu="a100"),
        node("n3", gpu="a100"),
    ]
    h = harness_factory(objects)
    sc = h.sidecar()
    st = h.standin(sc, start=False)
    queue = {"kueue.x-k8s.io/queue-name": "lq"}
    h.create(*kueue_group("q", 2, gpus=4, labels=queue))
    nodes = wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/q", {}).get("nodes"),
        what="q planned",
    )
    assert sorted(nodes.values()) == ["n2", "n3"]
    h.create(*kueue_group("over", 1, gpus=4, labels=queue))
    reason = wait_for(
        lambda: debug(sc)["gangs"].get("ml/over", {}).get("reason"), what="over pending"
    )
    assert "quota" in reason, reason
    st.run_once()
    placed = h.placement("ml")
    assert {placed["q-0"], placed["q-1"]} == {"n2", "n3"}
    assert placed["over-0"] is None
