"""Victims must be needed and their room must serve who may take it
(``teams.yaml``: four 8-GPU hosts; team-b and team-c share cohort ``org``)."""

from __future__ import annotations

from typing import Any

from placewise.models.validate import Violation
from tests.models.validate_builders import (
    admission,
    check,
    load,
    plan,
    pod_set,
    psa,
    rules,
    workload,
)

GPU = "nvidia.com/gpu"


def job(key: str, gpus: int, priority: int = 0) -> dict[str, Any]:
    """A pending one-pod job of ``gpus`` GPUs in its namespace's queue."""
    return workload(key, "lq", [pod_set(requests={GPU: str(gpus)})], priority=priority)


def held(key: str, gpus: int, host: str, priority: int = 0) -> dict[str, Any]:
    """A running one-pod job holding ``gpus`` GPUs on ``host``."""
    return workload(
        key,
        "lq",
        [pod_set(requests={GPU: str(gpus)})],
        priority=priority,
        running_in=key.split("/")[0],
        assignments=[_on(gpus, host)],
    )


def _on(gpus: int, host: str) -> dict[str, Any]:
    return psa("main", {GPU: "h100"}, {GPU: str(gpus)}, 1, domains=[([host], 1)])


def at(key: str, gpus: int, host: str) -> dict[str, Any]:
    """The plan's admission of ``key`` with its pod on ``host``."""
    return admission(key, key.split("/")[0], _on(gpus, host))


def team(name: str, nominal: int, **preemption: str) -> dict[str, Any]:
    """A ClusterQueue of cohort ``org`` with ``nominal`` GPUs of h100."""
    quota: dict[str, Any] = {"name": GPU, "nominalQuota": str(nominal)}
    if "borrowingLimit" in preemption:
        quota["borrowingLimit"] = preemption.pop("borrowingLimit")
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "cohort": "org",
            "preemption": {"withinClusterQueue": "LowerPriority", **preemption},
            "resourceGroups": [
                {
                    "coveredResources": [GPU],
                    "flavors": [{"name": "h100", "resources": [quota]}],
                }
            ],
        },
    }


TEAMS = [team("team-b", 12), team("team-c", 20, reclaimWithinCohort="Any")]
"""32 GPUs of quota on 32 GPUs; team-c may reclaim from a borrowing team-b."""


def judge(
    objects: list[dict[str, Any]],
    admissions: list[dict[str, Any]],
    preemptions: list[tuple[str, str, str]],
    pending: list[str] | None = None,
    teams: list[dict[str, Any]] = TEAMS,
) -> list[Violation]:
    snap = load("teams.yaml", *teams, *objects)
    return check(snap, plan(admissions, pending, preemptions))


def test_the_soak_example_is_rejected() -> None:
    """team-b's 8-GPU victim evicted within its queue "for" a 1-GPU job that
    lands on a free host, while team-c's gang takes the victim's node."""
    v = judge(
        [
            held("team-b/victim", 8, "n1"),
            held("team-c/held", 8, "n3"),
            job("team-b/small", 1, priority=100),
            job("team-c/big", 8),
        ],
        [at("team-b/small", 1, "n2"), at("team-c/big", 8, "n1")],
        [("team-b/victim", "team-b/small", "InClusterQueue")],
    )
    assert rules(v) == ["preemption.room-elsewhere", "preemption.unneeded"]
    elsewhere = next(x for x in v if x.rule == "preemption.room-elsewhere")
    assert "node n1 serves team-c/big" in elsewhere.message
    assert "nvidia.com/gpu would be 16 of 8" in elsewhere.message


def test_a_pending_preemptor_is_judged_on_the_room_alone() -> None:
    """Kueue evicts in one cycle and admits the preemptor in a later one: no
    placement to judge yet, but another queue still may not take the room."""
    v = judge(
        [
            held("team-b/victim", 8, "n1"),
            held("team-c/held", 8, "n3"),
            job("team-b/small", 1, priority=100),
            job("team-c/big", 8),
        ],
        [at("team-c/big", 8, "n1")],
        [("team-b/victim", "team-b/small", "InClusterQueue")],
        pending=["team-b/small"],
    )
    assert rules(v) == ["preemption.room-elsewhere"]


def test_a_victim_its_preemptor_needs_passes() -> None:
    v = judge(
        [
            held("team-b/victim", 8, "n1"),
            job("team-b/need8", 8, priority=100),
            job("team-c/big", 8),
        ],
        [at("team-b/need8", 8, "n1"), at("team-c/big", 8, "n2")],
        [("team-b/victim", "team-b/need8", "InClusterQueue")],
    )
    assert rules(v) == []


def test_needed_for_quota_alone() -> None:
    """team-b is at its nominal 12 and may not borrow: the preemptor needs
    the victim's quota though it lands on another host."""
    v = judge(
        [
            held("team-b/victim", 4, "n1"),
            held("team-b/stays", 4, "n1"),
            held("team-b/b2", 4, "n2"),
            job("team-b/need4", 4, priority=100),
        ],
        [at("team-b/need4", 4, "n2")],
        [("team-b/victim", "team-b/need4", "InClusterQueue")],
        teams=[team("team-b", 12, borrowingLimit="0"), team("team-c", 20)],
    )
    assert rules(v) == []


def test_unneeded_when_quota_and_room_are_spare() -> None:
    v = judge(
        [held("team-b/victim", 4, "n1"), job("team-b/need4", 4, priority=100)],
        [at("team-b/need4", 4, "n2")],
        [("team-b/victim", "team-b/need4", "InClusterQueue")],
    )
    assert rules(v) == ["preemption.unneeded"]


def test_shared_leaf_surplus_may_go_to_another_queue() -> None:
    """n1 holds the 4-GPU victim and 4 free: the preemptor takes the
    victim's 4, another queue the 4 that were free all along."""
    v = judge(
        [
            held("team-b/victim", 4, "n1"),
            held("team-b/stays", 4, "n2"),
            held("team-c/held", 8, "n3"),
            job("team-b/need4", 4, priority=100),
            job("team-c/other4", 4),
        ],
        [at("team-b/need4", 4, "n1"), at("team-c/other4", 4, "n1")],
        [("team-b/victim", "team-b/need4", "InClusterQueue")],
    )
    assert rules(v) == []


def test_room_may_serve_a_queue_that_could_reclaim_it() -> None:
    """team-b borrows (16 of its 12): team-c may reclaim the victim, so its
    gang may take the victim's node."""
    v = judge(
        [
            held("team-b/victim", 8, "n1"),
            held("team-b/borrowed", 8, "n2"),
            held("team-c/held", 8, "n3"),
            held("team-c/held2", 4, "n4"),
            job("team-c/big", 8),
        ],
        [at("team-c/big", 8, "n1")],
        [("team-b/victim", "team-c/big", "InCohortReclamation")],
    )
    assert rules(v) == []


def test_needed_to_keep_the_preemptor_from_borrowing() -> None:
    """team-b reclaims 8 from a borrowing team-c and evicts 4 of its own so
    that it stays within its nominal 12: a borrowing preemptor could not
    reclaim (no borrowWithinCohort).  Kueue's own case 'preempt workloads in
    ClusterQueue and cohort' evicts this way."""
    v = judge(
        [
            held("team-b/victim", 4, "n1"),
            held("team-b/stays", 4, "n1"),
            held("team-c/held", 8, "n3"),
            held("team-c/held2", 8, "n4"),
            held("team-c/borrowed", 8, "n2"),
            job("team-b/p", 8, priority=100),
        ],
        [at("team-b/p", 8, "n2")],
        [
            ("team-c/borrowed", "team-b/p", "InCohortReclamation"),
            ("team-b/victim", "team-b/p", "InClusterQueue"),
        ],
        teams=[team("team-b", 12, reclaimWithinCohort="Any"), team("team-c", 20)],
    )
    assert rules(v) == []


def test_room_may_serve_a_queue_one_of_whose_admissions_could_reclaim_it() -> None:
    """team-b borrows (16 of its 12). team-d's 2-GPU job may reclaim the
    victim (team-d stays within its nominal 8 with it alone); its 6-GPU job
    alone would borrow, and borrowWithinCohort is Never. The queue may
    preempt the victim, so either of its jobs may take the victim's node
    (formats.md: "any queue whose cohort policy could evict it directly")."""
    team_d = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-d"}},
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"namespace": "team-d", "name": "lq"},
            "spec": {"clusterQueue": "team-d"},
        },
    ]
    v = judge(
        [
            *team_d,
            held("team-b/victim", 8, "n1"),
            held("team-b/borrowed", 8, "n2"),
            held("team-c/held", 4, "n3"),
            held("team-d/held", 4, "n3"),
            job("team-c/need", 2, priority=100),
            job("team-d/reclaims", 2),
            job("team-d/borrows", 6),
        ],
        [
            at("team-c/need", 2, "n1"),
            at("team-d/borrows", 6, "n1"),
            at("team-d/reclaims", 2, "n4"),
        ],
        [("team-b/victim", "team-c/need", "InCohortReclamation")],
        teams=[
            team("team-b", 12),
            team("team-c", 10, reclaimWithinCohort="Any"),
            team("team-d", 8, reclaimWithinCohort="Any"),
        ],
    )
    assert rules(v) == []


def test_a_victim_rechecked_under_another_credit_reads_as_the_whole_check() -> None:
    """``preemption.Credits`` (the settling pass's re-credit) answers for one
    victim what the whole check answers on the plan re-credited, for every
    admission and reason, on the soak's example and on a needed victim."""
    from placewise.models.plan import PlanPreemption
    from placewise.models.validate import preemption
    from placewise.models.validate.context import Context

    snap = load(
        "teams.yaml",
        *TEAMS,
        held("team-b/victim", 8, "n1"),
        held("team-c/held", 8, "n3"),
        job("team-b/small", 1, priority=100),
        job("team-b/need8", 8, priority=100),
        job("team-c/big", 8, priority=100),
    )
    base = plan(
        [at("team-b/small", 1, "n2"), at("team-c/big", 8, "n1")],
        ["team-b/need8"],
        [("team-b/victim", "team-b/small", "InClusterQueue")],
    )
    victim = snap.workloads["team-b/victim"]
    credits = preemption.Credits(Context(snap, base))
    answers = set()
    for to in ("team-b/small", "team-c/big", "team-b/need8"):
        for reason in ("InClusterQueue", "InCohortReclamation"):
            credit = PlanPreemption(workload=victim.key, preemptor=to, reason=reason)
            again = base.model_copy(update={"preemptions": (credit,)})
            whole = [
                v
                for v in preemption.check(Context(snap, again))
                if v.workload == victim.key
            ]
            assert credits.check(victim, credit) == whole, (to, reason)
            answers.add(tuple(rules(whole)))
    assert len(answers) > 1  # the credits differ: the comparison means something
