"""Kueue mode: Workload admissions written as Kueue's scheduler writes them."""

from __future__ import annotations

import json

from placewise.adapters.emulator import Emulator
from placewise.adapters.io.loader import RawObject, decode_objects
from placewise.adapters.serve.modes.kueue_mode import compress
from tests.adapters.serve.conftest import (
    GPU,
    Harness,
    metric,
    namespace,
    node,
    rack_topology,
    wait_for,
)

KUEUE = "kueue.x-k8s.io"


def kueue_objects(version: str = "v1beta2", gpu_quota: int = 16) -> list[dict]:
    api = f"{KUEUE}/{version}"
    cq_spec: dict = {
        "namespaceSelector": {},
        "preemption": {"withinClusterQueue": "LowerPriority"},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", GPU],
                "flavors": [
                    {
                        "name": "tas",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64"},
                            {"name": GPU, "nominalQuota": str(gpu_quota)},
                        ],
                    }
                ],
            }
        ],
    }
    return [
        namespace("ml"),
        *rack_topology(api),
        {
            "apiVersion": api,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": cq_spec,
        },
        {
            "apiVersion": api,
            "kind": "LocalQueue",
            "metadata": {"name": "lq", "namespace": "ml"},
            "spec": {"clusterQueue": "cq"},
        },
        *[node(f"r{r}-h{i}", rack=f"r{r}") for r in (1, 2) for i in (1, 2)],
    ]


def workload(
    name: str,
    count: int,
    gpus: int,
    priority: int = 0,
    version: str = "v1beta2",
    **topology: str,
) -> dict:
    return {
        "apiVersion": f"{KUEUE}/{version}",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {
            "queueName": "lq",
            "priority": priority,
            "podSets": [
                {
                    "name": "workers",
                    "count": count,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "x",
                                    "resources": {
                                        "requests": {"cpu": "1", GPU: str(gpus)}
                                    },
                                }
                            ]
                        }
                    },
                    **({"topologyRequest": topology} if topology else {}),
                }
            ],
        },
    }


def get_workload(h: Harness, name: str, version: str = "v1beta2") -> dict:
    return dict(
        json.loads(
            h.custom.get_namespaced_custom_object(
                KUEUE, version, "ml", "workloads", name, _preload_content=False
            ).data
        )
    )


def condition(wl: dict, kind: str) -> dict:
    return next(
        (c for c in wl.get("status", {}).get("conditions") or [] if c["type"] == kind),
        {},
    )


def decoded_domains(wl: dict) -> set[tuple[tuple[str, ...], int]]:
    problems: list = []
    objects, _ = decode_objects([RawObject(wl, "api", None)], problems)
    assert not problems, problems
    (w,) = objects.workloads.values()
    ta = w.admission.pod_set_assignments[0].topology_assignment
    return {(d.values, d.count) for d in ta.domains}


def test_admission_written_with_v1beta2_compressed_topology(harness_factory):
    """The Workload gets status.admission (compressed slices, decoding to the
    plan's domains) and QuotaReserved/Admitted; a second one that exceeds the
    quota gets QuotaReserved=False reason Pending with the solver's reason."""
    h = harness_factory(kueue_objects())
    sc = h.sidecar(mode="kueue")
    h.create(workload("train", 4, 2, required="rack"), workload("huge", 5, 4))
    wl = wait_for(
        lambda: (
            condition(w := get_workload(h, "train"), "Admitted").get("status") == "True"
            and w
        ),
        what="train admitted",
    )
    adm = wl["status"]["admission"]
    assert adm["clusterQueue"] == "cq"
    (psa,) = adm["podSetAssignments"]
    assert psa["name"] == "workers" and psa["count"] == 4
    assert psa["flavors"] == {"cpu": "tas", GPU: "tas"}
    assert psa["resourceUsage"] == {"cpu": "4", GPU: "8"}
    ta = psa["topologyAssignment"]
    assert ta["levels"] == ["kubernetes.io/hostname"] and "slices" in ta
    domains = decoded_domains(wl)
    assert sum(c for _, c in domains) == 4
    racks = {v[0].split("-")[0] for v, _ in domains}
    assert len(racks) == 1, "required rack: one rack only"
    assert condition(wl, "QuotaReserved")["reason"] == "QuotaReserved"
    assert (
        condition(wl, "QuotaReserved")["message"] == "Quota reserved in ClusterQueue cq"
    )
    assert condition(wl, "Admitted")["message"] == "The workload is admitted"
    huge = wait_for(
        lambda: condition(w := get_workload(h, "huge"), "QuotaReserved") and w,
        what="huge pending",
    )
    reserved = condition(huge, "QuotaReserved")
    assert reserved["status"] == "False" and reserved["reason"] == "Pending"
    assert "insufficient" in reserved["message"] or "quota" in reserved["message"]
    assert "admission" not in huge.get("status", {})
    wait_for(
        lambda: (
            {e["reason"] for e in h.events()}
            >= {"QuotaReserved", "Admitted", "Pending"}
        ),
        what="Kueue's events",
    )
    assert metric(sc, "placewise_kueue_admissions_total") >= 1


def test_admission_uses_v1beta1_levels_domains_when_only_v1beta1_is_served(
    harness_factory,
):
    """A cluster serving only kueue v1beta1 gets the levels/domains form."""
    objects = kueue_objects("v1beta1")
    emu = Emulator(objects, bookmark_interval=0.2)
    emu.table.rows = [
        r
        for r in emu.table.rows  # configure a v1beta1-only cluster
        if not (r.group == KUEUE and r.version == "v1beta2")
    ]
    emu.start()
    h = Harness(emu)
    try:
        h.sidecar(mode="kueue")
        h.create(workload("train", 2, 4, version="v1beta1"))
        wl = wait_for(
            lambda: (
                (w := get_workload(h, "train", "v1beta1"))
                .get("status", {})
                .get("admission")
                and w
            ),
            what="admitted",
        )
        ta = wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
        assert set(ta) == {"levels", "domains"}
        assert sum(d["count"] for d in ta["domains"]) == 2
    finally:
        h.close()
        emu.stop()


def running_low() -> dict:
    """``low`` (2 pods x 4 GPUs) admitted in ``cq`` on r1-h1 and r1-h2."""
    low = workload("low", 2, 4)
    low["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": 2,
                    "flavors": {"cpu": "tas", GPU: "tas"},
                    "resourceUsage": {"cpu": "2", GPU: "8"},
                    "topologyAssignment": {
                        "levels": ["kubernetes.io/hostname"],
                        "domains": [
                            {"values": ["r1-h1"], "count": 1},
                            {"values": ["r1-h2"], "count": 1},
                        ],
                    },
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }
    return low


def test_preemption_marks_victim_evicted_and_admits_after_release(harness_factory):
    """A high-priority Workload needs the quota a running one holds: the victim
    gets Evicted (Preempted) and Preempted (InClusterQueue) with Kueue's message;
    the preemptor is admitted only after the victim's quota is released (here by
    the test, playing Kueue's job controller)."""
    low = running_low()
    h = harness_factory([*kueue_objects(gpu_quota=8), low])
    h.sidecar(mode="kueue")
    h.create(workload("high", 2, 4, priority=100))
    victim = wait_for(
        lambda: (
            condition(w := get_workload(h, "low"), "Evicted").get("status") == "True"
            and w
        ),
        what="low evicted",
    )
    evicted, preempted = condition(victim, "Evicted"), condition(victim, "Preempted")
    assert evicted["reason"] == "Preempted"
    assert preempted["reason"] == "InClusterQueue"
    assert preempted["message"].startswith("Preempted to accommodate a workload (UID: ")
    assert (
        "due to prioritization in the ClusterQueue; preemptor path: /cq; "
        "preemptee path: /cq" in preempted["message"]
    )
    assert "admission" not in get_workload(h, "high").get("status", {})
    reserved = wait_for(
        lambda: condition(get_workload(h, "high"), "QuotaReserved"),
        what="high pending while the victim holds quota",
    )
    assert "Pending the preemption of 1 workload(s)" in reserved["message"]
    # Kueue's job controller: the job stopped, so the quota is released.
    conds = [c for c in victim["status"]["conditions"] if c["type"] != "QuotaReserved"]
    conds.append(
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "Preempted",
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        }
    )
    h.custom.patch_namespaced_custom_object_status(
        KUEUE,
        "v1beta2",
        "ml",
        "workloads",
        "low",
        {"status": {"admission": None, "conditions": conds}},
    )
    high = wait_for(
        lambda: (
            condition(w := get_workload(h, "high"), "Admitted").get("status") == "True"
            and w
        ),
        what="high admitted",
    )
    assert high["status"]["admission"]["podSetAssignments"][0]["count"] == 2
    assert wait_for(
        lambda: [e for e in h.events("Preempted") if e["regarding"]["name"] == "low"],
        what="event",
    )


def test_a_victim_that_finished_meanwhile_is_not_evicted(harness_factory):
    """A plan is acted on after it was made: when its victim finished in
    between (the job's controller wrote Finished), the victim holds nothing
    any more and must not be marked Evicted, as Kueue never evicts a finished
    Workload.  The plan that preempted ``low`` is replayed against the
    cluster after ``low`` finished."""
    h = harness_factory([*kueue_objects(gpu_quota=8), running_low()])
    sc = h.sidecar(mode="kueue")
    published = []
    publish = sc.loop.publish
    sc.loop.publish = lambda state: (published.append(state), publish(state))
    h.create(workload("high", 2, 4, priority=100))
    wait_for(
        lambda: condition(get_workload(h, "low"), "Evicted").get("status") == "True",
        what="low evicted",
    )
    state = next(
        s for s in published if any(p.workload == "ml/low" for p in s.plan.preemptions)
    )
    (p,) = [p for p in state.plan.preemptions if p.workload == "ml/low"]
    low = get_workload(h, "low")
    done = {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "Job finished successfully",
        "lastTransitionTime": "2026-01-01T00:05:00Z",
    }
    kept = [
        c
        for c in low["status"]["conditions"]
        if c["type"] not in ("Evicted", "Preempted")
    ]
    h.custom.patch_namespaced_custom_object_status(
        KUEUE, "v1beta2", "ml", "workloads", "low",
        {"status": {"conditions": [*kept, done]}},
    )  # fmt: skip
    wait_for(
        lambda: condition(sc.loop.cache.get("Workload", "ml/low") or {}, "Finished"),
        what="the sidecar sees low finished",
    )
    sc.preemptor.evict_workload(state, p)
    assert condition(get_workload(h, "low"), "Evicted") == {}


def test_elastic_slice_admitted_and_its_old_slice_finished(harness_factory):
    """A running job scales up through a new slice: with 8 GPUs of quota the
    slice (6 pods x 1 GPU) fits only because the running slice's 4 pass to
    it; it is admitted keeping the old pods' hosts, and the old Workload is
    finished (WorkloadSliceReplaced), not evicted."""
    old = workload("old", 4, 1)
    old["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {
                    "name": "workers",
                    "count": 4,
                    "flavors": {"cpu": "tas", GPU: "tas"},
                    "resourceUsage": {"cpu": "4", GPU: "4"},
                    "topologyAssignment": {
                        "levels": ["kubernetes.io/hostname"],
                        "domains": [{"values": ["r1-h1"], "count": 4}],
                    },
                }
            ],
        },
        "conditions": [
            {
                "type": "QuotaReserved",
                "status": "True",
                "reason": "QuotaReserved",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "m",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    }
    grow = workload("grow", 6, 1)
    grow["metadata"]["annotations"] = {
        "kueue.x-k8s.io/workload-slice-replacement-for": "ml/old"
    }
    h = harness_factory([*kueue_objects(gpu_quota=8), old])
    h.sidecar(mode="kueue")
    h.create(grow)
    finished = wait_for(
        lambda: (
            condition(w := get_workload(h, "old"), "Finished").get("status") == "True"
            and w
        ),
        what="old slice finished",
    )
    assert condition(finished, "Finished")["reason"] == "WorkloadSliceReplaced"
    assert condition(finished, "Evicted").get("status") != "True"
    admitted = get_workload(h, "grow")
    assert condition(admitted, "Admitted").get("status") == "True"
    placed = dict(decoded_domains(admitted))
    assert placed.get(("r1-h1",), 0) >= 4 and sum(placed.values()) == 6


def test_compress_roundtrips_through_the_loader():
    """compress() output decodes (loader's v1beta2 reader) to the same domains."""
    domains = [
        (["b1", "rack-1", "node-01"], 2),
        (["b1", "rack-1", "node-02"], 2),
        (["b1", "rack-2", "node-11"], 1),
    ]
    ta = compress(["block", "rack", "kubernetes.io/hostname"], domains)
    (slice_,) = ta["slices"]
    assert slice_["valuesPerLevel"][0] == {"universal": "b1"}
    assert slice_["valuesPerLevel"][2]["individual"]["prefix"] == "node-"
    wl = workload("w", 5, 1)
    wl["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "workers", "count": 5, "topologyAssignment": ta}
            ],
        }
    }
    assert decoded_domains(wl) == {(tuple(v), c) for v, c in domains}
