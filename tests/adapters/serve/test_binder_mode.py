"""Binder mode: gated pods are ungated onto their planned host, or bound directly."""

from __future__ import annotations

from tests.adapters.serve.conftest import (
    assert_sound,
    debug,
    kueue_group,
    namespace,
    node,
    pod,
    wait_for,
)

GATE = [{"name": "placewise.io/gang"}]


def test_gated_gang_is_ungated_with_a_hostname_pin_gang_by_gang(harness_factory):
    """Default-scheduler pods created with the gate: the sidecar removes the gate
    and pins each pod's hostname in one patch, for a whole gang at once; an
    incomplete gang keeps its gate; kube-scheduler then binds inside the pins."""
    h = harness_factory([namespace("ml"), *[node(f"n{i}") for i in range(1, 4)]])
    sc = h.sidecar(mode="binder")
    st = h.standin(start=False)  # plain kube-scheduler, no extender
    train = kueue_group("train", 2, gpus=4, schedulingGates=GATE)
    late = kueue_group("late", 2, gpus=1, schedulingGates=GATE)
    h.create(*train, late[0])
    plan = wait_for(
        lambda: debug(sc).get("gangs", {}).get("ml/train", {}).get("nodes"), what="plan"
    )
    pods = wait_for(
        lambda: (
            (ps := {p["metadata"]["name"]: p for p in h.pods("ml")})
            and not ps["train-0"]["spec"].get("schedulingGates")
            and not ps["train-1"]["spec"].get("schedulingGates")
            and ps
        ),
        what="ungated",
    )
    for name, target in plan.items():
        assert pods[name]["spec"]["nodeSelector"] == {"kubernetes.io/hostname": target}
        assert pods[name]["metadata"]["annotations"]["placewise.io/gang"] == "ml/train"
    assert pods["late-0"]["spec"]["schedulingGates"] == GATE
    st.run_once()
    placed = h.placement("ml")
    assert {n: placed[n] for n in plan} == plan
    assert placed["late-0"] is None
    wait_for(
        lambda: any(
            "waiting for pods: 1/2" in e["note"] for e in h.events("FailedScheduling")
        ),
        what="reason event",
    )
    assert_sound(h, {"train": ["train-0", "train-1"]})


def test_own_scheduler_name_pods_are_bound_directly(harness_factory):
    """Pods of schedulerName placewise (gated or not) are bound by the sidecar
    itself through pods/binding, no kube-scheduler involved."""
    h = harness_factory([namespace("ml"), node("n1"), node("n2")])
    h.sidecar(mode="binder")
    gang = kueue_group(
        "direct", 2, gpus=2, schedulerName="placewise", schedulingGates=GATE
    )
    h.create(*gang, pod("solo", gpus=1, schedulerName="placewise"))
    placed = wait_for(
        lambda: all((p := h.placement("ml")).values()) and p, what="bound"
    )
    assert set(placed) == {"direct-0", "direct-1", "solo"}
    assert_sound(h, {"direct": ["direct-0", "direct-1"]})
    assert {
        e["regarding"]["name"]
        for e in wait_for(
            lambda: len(h.events("Scheduled")) >= 3 and h.events("Scheduled")
        )
    } == set(placed)
