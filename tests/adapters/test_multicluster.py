"""Multi-cluster dispatch (formats.md §3): loading, the MultiKueue races,
the optimizer as dispatcher, plans read back and checked per cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.adapters.multicluster import (
    ClusterCosts,
    Federation,
    Worker,
    load_federation,
    user_plan,
    validate_clusters,
)
from placewise.models.errors import InstanceError
from placewise.models.multicluster import CLUSTER_LABEL
from placewise.models.plan import Plan, PlanAdmission, PlanPending
from placewise.models.validate import validate
from placewise.models.workload import Workload
from placewise.solver.greedy.multikueue import solve_multikueue
from placewise.solver.policy import primary_vector
from placewise.solver.problem.compile import compile_problem
from placewise.solver.problem.data import outside_demand
from placewise.solver.solve import SolveParams, solve
from tests.multicluster_builders import federation, job, manager, running, worker

DATA = Path(__file__).resolve().parents[1] / "data" / "multicluster"
SOLVERS = ("multikueue-allatonce", "multikueue-incremental", "cpsat")


def fixture_federation() -> Federation:
    return load_federation(
        [str(DATA / "manager.yaml")],
        [
            Worker("east", (str(DATA / "east.yaml"),)),
            Worker("west", (str(DATA / "west.yaml"),)),
        ],
    )


def plans(fed: Federation) -> dict[str, Plan]:
    """Every multi-cluster solver's plan, in the users' names, each checked
    per cluster and across clusters."""
    out = {}
    for s in SOLVERS:
        combined = solve(fed.snapshot, SolveParams(solver=s, time_limit=2, workers=1))
        shown = user_plan(fed.snapshot, combined)
        assert validate_clusters(fed, shown) == [], s
        out[s] = shown
    return out


def placed(plan: Plan) -> dict[str, str | None]:
    return {a.workload: a.cluster for a in plan.admissions}


# -- loading ------------------------------------------------------------------


def test_combined_snapshot_renames_each_worker_into_its_cluster() -> None:
    """Nodes, flavors, queues and namespaces are scoped by cluster; every
    node carries the cluster label and every Topology has it on top; each
    dispatchable manager Workload has one pending copy per worker."""
    fed = fixture_federation()
    snap = fed.snapshot
    assert sorted(snap.nodes) == [
        "east/east-1",
        "east/east-2",
        "west/west-1",
        "west/west-2",
    ]
    assert snap.nodes["east/east-1"].labels[CLUSTER_LABEL] == "east"
    assert snap.nodes["east/east-1"].labels["kubernetes.io/hostname"] == "east/east-1"
    assert snap.topologies["east/default"].levels[0] == CLUSTER_LABEL
    assert snap.flavors["west/a100"].node_labels[CLUSTER_LABEL] == "west"
    assert snap.cluster_queues["east/team-a"].cohort is None
    assert sorted(snap.facts.dispatch) == [
        "team-a/eval-any",
        "team-a/train-h100",
        "team-a/tune-a100",
    ]
    assert dict(snap.facts.dispatch["team-a/eval-any"].copies) == {
        "east": "east.team-a/eval-any",
        "west": "west.team-a/eval-any",
    }
    copy = snap.workloads["west.team-a/eval-any"]
    assert copy.is_pending and copy.exclusive == "team-a/eval-any"
    assert copy.priority == 100
    # Already dispatched: its worker copy runs and holds quota there.
    assert "team-a/done-elsewhere" not in snap.facts.dispatch
    assert snap.workloads["west.team-a/done-elsewhere"].is_running
    # The worker's running work keeps its node, renamed.
    sweep = snap.workloads["east.team-a/sweep"].admission
    assert sweep is not None
    ta = sweep.pod_set_assignments[0].topology_assignment
    assert ta is not None and ta.domains[0].values == ("east/east-2",)


def test_dispatchable_needs_reservation_pending_check_and_no_cluster() -> None:
    """Kueue's rule: quota reserved in the manager, MultiKueue check Pending,
    no status.clusterName; otherwise the manager keeps it to itself."""
    ready = job("ready", 8)
    ready["status"]["admissionChecks"][0]["state"] = "Ready"
    named = job("named", 8)
    named["status"]["clusterName"] = "a"
    waiting = job("waiting", 8, dispatched=False)
    fed = federation(
        manager(["a"], [job("yes", 8), ready, named, waiting]),
        {"a": worker("H100", 1)},
    )
    assert sorted(fed.snapshot.facts.dispatch) == ["team/yes"]


def test_local_queue_no_worker_has_is_pending_with_warning() -> None:
    """As Kueue leaves it: a warning and a pending reason, no copy."""
    fed = federation(
        manager(["a", "b"], [job("lost", 8, queue="nowhere"), job("ok", 8)]),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    assert "team/lost" in fed.snapshot.facts.unplaced
    assert any("LocalQueue team/nowhere" in str(w) for w in fed.warnings)
    for s, plan in plans(fed).items():
        lost = [p for p in plan.pending if p.workload == "team/lost"]
        assert len(lost) == 1 and "LocalQueue team/nowhere" in lost[0].reason, s


def test_inactive_cluster_gets_nothing() -> None:
    fed = federation(
        manager(["a", "b"], [job("j", 8)], inactive=("a",)),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    assert dict(fed.snapshot.facts.dispatch["team/j"].copies) == {"b": "b.team/j"}
    assert any("not Active" in str(w) for w in fed.warnings)


def test_stale_copies_in_workers() -> None:
    """A worker's pending MultiKueue copy is replaced by ours; a worker that
    already admitted the Workload takes it out of dispatch."""
    pending_copy = job("j", 8, dispatched=False)
    admitted_copy = running(job("k", 8, dispatched=False), "a100")
    fed = federation(
        manager(["a", "b"], [job("j", 8), job("k", 8)]),
        {
            "a": [*worker("H100", 1), pending_copy],
            "b": [*worker("A100", 2), admitted_copy],
        },
    )
    snap = fed.snapshot
    assert sorted(snap.facts.dispatch) == ["team/j"]
    assert snap.workloads["a.team/j"].exclusive == "team/j"
    assert snap.workloads["b.team/k"].is_running
    assert any("already admitted by worker b" in str(w) for w in fed.warnings)


# -- solving ------------------------------------------------------------------


def test_fixture_plans_are_valid_and_cpsat_is_not_worse() -> None:
    fed = fixture_federation()
    got = plans(fed)
    for s, plan in got.items():
        assert placed(plan)["team-a/train-h100"] == "east", s  # only east has H100
        assert placed(plan)["team-a/tune-a100"] == "west", s
        assert {p.workload for p in plan.pending} == {"team-a/local-job"}
        (local,) = plan.pending
        assert local.cluster == "east" and "east/" not in local.reason
    snap = fed.snapshot
    combined = {
        s: solve(snap, SolveParams(solver=s, time_limit=2, workers=1)) for s in SOLVERS
    }
    best = max(primary_vector(snap, combined[s]) for s in SOLVERS[:2])
    assert primary_vector(snap, combined["cpsat"]) >= best


def test_user_plan_speaks_each_workers_names() -> None:
    fed = fixture_federation()
    plan = plans(fed)["cpsat"]
    (train,) = [a for a in plan.admissions if a.workload == "team-a/train-h100"]
    psa = train.pod_set_assignments[0]
    assert train.cluster_queue == "team-a" and psa.flavors["nvidia.com/gpu"] == "h100"
    ta = psa.topology_assignment
    assert ta is not None and ta.levels == ("kubernetes.io/hostname",)
    assert sorted(d.values for d in ta.domains) == [("east-1",), ("east-2",)]
    (victim,) = plan.preemptions
    assert (victim.workload, victim.cluster, victim.preemptor) == (
        "team-a/sweep",
        "east",
        "team-a/train-h100",
    )


def test_same_cycle_race_first_cluster_keeps_it_and_frees_the_other() -> None:
    """Both workers admit j1 in cycle 1: the first in cluster order keeps it,
    the other's admission is undone, and its room goes to j2 next cycle."""
    fed = federation(
        manager(
            ["a", "b"], [job("j1", 8), job("j2", 8, created="2026-01-01T10:00:05Z")]
        ),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    for s, plan in plans(fed).items():
        assert placed(plan) == {"team/j1": "a", "team/j2": "b"}, s
        assert not plan.pending


def test_allatonce_race_preempts_needlessly_incremental_and_cpsat_do_not() -> None:
    """Worker a has room; worker b is full of low-priority work.  All at once,
    b's copy preempts in the same cycle a admits: the victim is evicted for
    nothing.  Incremental with one cluster per round asks a first; the
    optimizer sees both."""
    low = running(job("low", 8, priority=1, dispatched=False), "a100")
    fed = federation(
        manager(["a", "b"], [job("j1", 8)], step=1),
        {"a": worker("H100", 1), "b": [*worker("A100", 1), low]},
    )
    got = plans(fed)
    assert [
        (p.workload, p.cluster) for p in got["multikueue-allatonce"].preemptions
    ] == [("team/low", "b")]
    for s in ("multikueue-incremental", "cpsat"):
        assert placed(got[s]) == {"team/j1": "a"} and not got[s].preemptions, s


def test_incremental_moves_to_the_next_round_when_nothing_admits() -> None:
    """Step 1, order [a, b]: a cannot run the A100 job.  The plan of now holds
    round one (b is asked five minutes later); played to the end, b admits."""
    fed = federation(
        manager(["a", "b"], [job("j", 8, model="A100")], step=1),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    now = plans(fed)["multikueue-incremental"]
    assert placed(now) == {}
    (pending,) = now.pending
    assert "b: not nominated yet" in pending.reason
    later = solve_multikueue(fed.snapshot, "incremental", rounds=None)
    assert placed(user_plan(fed.snapshot, later)) == {"team/j": "b"}
    # A round in progress keeps its nominations: b already asked, a is next.
    nominated = job("j", 8, model="A100")
    nominated["status"]["nominatedClusterNames"] = ["b"]
    fed = federation(
        manager(["a", "b"], [nominated], step=1),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    assert placed(plans(fed)["multikueue-incremental"]) == {"team/j": "b"}


def test_optimizer_chooses_the_cluster_jointly() -> None:
    """The race sends the big gang to the first cluster with room and strands
    the small one's only fit; the optimizer swaps them and admits both."""
    # a: 2 H100 hosts; b: 1 host of either model.  big (16 GPUs) fits only a;
    # small (8, H100 only) fits a or b... cluster b is A100, so small must use a.
    fed = federation(
        manager(
            ["a", "b"],
            [
                job("any-8", 8, created="2026-01-01T09:00:00Z"),
                job("h100-16", 8, count=2, model="H100"),
            ],
        ),
        {"a": worker("H100", 2), "b": worker("A100", 1)},
    )
    got = plans(fed)
    assert placed(got["multikueue-allatonce"]) == {"team/any-8": "a"}
    assert placed(got["cpsat"]) == {"team/any-8": "b", "team/h100-16": "a"}


def test_cluster_costs_and_preferences_steer_the_optimizer() -> None:
    workers = {"a": worker("H100", 1), "b": worker("A100", 1)}
    jobs = [job("j", 8)]
    cheap_b = federation(manager(["a", "b"], jobs), workers, ClusterCosts({"a": 5}))
    assert placed(plans(cheap_b)["cpsat"]) == {"team/j": "b"}
    prefers_b = [job("j", 8, annotations={"placewise.io/preferred-clusters": "b"})]
    fed = federation(manager(["a", "b"], prefers_b), workers)
    assert placed(plans(fed)["cpsat"]) == {"team/j": "b"}
    # Preferences come after the tiers: never at the cost of admitting less.
    full_b = worker("A100", 1, gpus=0)
    fed = federation(
        manager(["a", "b"], prefers_b), {"a": worker("H100", 1), "b": full_b}
    )
    assert placed(plans(fed)["cpsat"]) == {"team/j": "a"}


def test_pending_reason_names_every_cluster() -> None:
    fed = federation(
        manager(["a", "b"], [job("huge", 8, count=4)]),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    for s, plan in plans(fed).items():
        (p,) = plan.pending
        assert p.workload == "team/huge" and p.cluster is None
        assert p.reason.startswith("a: ") and "; b: " in p.reason, s


# -- validation ------------------------------------------------------------------


def test_validate_clusters_catches_cross_cluster_mistakes() -> None:
    fed = fixture_federation()
    good = plans(fed)["multikueue-allatonce"]
    (eval_any,) = [a for a in good.admissions if a.workload == "team-a/eval-any"]
    # Admitted in both clusters.
    twice = good.model_copy(
        update={
            "admissions": (
                *good.admissions,
                eval_any.model_copy(update={"cluster": "east"}),
            )
        }
    )
    rules = {v.rule for v in validate_clusters(fed, twice)}
    assert "multicluster.admitted-twice" in rules
    # Left out entirely; an admission without its cluster; an unknown cluster.
    missing = good.model_copy(
        update={
            "admissions": tuple(
                a.model_copy(update={"cluster": None})
                if a.workload == "team-a/train-h100"
                else a
                for a in good.admissions
                if a.workload != "team-a/eval-any"
            ),
            "pending": (
                *good.pending,
                PlanPending(workload="team-a/ghost", reason="", cluster="mars"),
            ),
        }
    )
    rules = {v.rule for v in validate_clusters(fed, missing)}
    assert {"multicluster.missing", "multicluster.cluster"} <= rules


def test_validate_clusters_checks_each_worker_independently() -> None:
    """An admission on a node of the other cluster is a plain validator
    violation of that worker, named with its cluster."""
    fed = fixture_federation()
    good = plans(fed)["cpsat"]
    bad = tuple(
        PlanAdmission(
            workload=a.workload,
            cluster="west" if a.workload == "team-a/train-h100" else a.cluster,
            cluster_queue=a.cluster_queue,
            pod_set_assignments=a.pod_set_assignments,
        )
        for a in good.admissions
    )
    found = validate_clusters(fed, good.model_copy(update={"admissions": bad}))
    assert any("in cluster west" in v.message for v in found)


def test_combined_validator_enforces_exclusivity() -> None:
    fed = fixture_federation()
    snap = fed.snapshot
    plan = solve(snap, SolveParams(solver="multikueue-allatonce"))
    assert validate(snap, plan) == []


def test_bad_worker_files_name_the_cluster(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '-1'}}\n"
    )
    with pytest.raises(InstanceError) as err:
        load_federation(
            [str(DATA / "manager.yaml")],
            [Worker("east", (str(bad), str(tmp_path / "none.yaml")))],
        )
    text = str(err.value)
    assert f"cluster east: {bad}:1: Node n" in text
    assert "none.yaml: cannot read" in text


# -- bounds ------------------------------------------------------------------


def test_copies_no_flavor_admits_leave_the_bound_exact() -> None:
    """A copy in a worker none of whose flavors the workload may use can
    never run there: the tier bound does not count it (it did, whole)."""
    pinned = [job("h100-8", 8, model="H100")]
    fed = federation(
        manager(["a", "b"], pinned),
        {"a": worker("H100", 1, gpus=0), "b": worker("A100", 1)},
    )
    plan = solve(fed.snapshot, SolveParams(solver="cpsat", time_limit=2, workers=1))
    (tier,) = plan.solver.tiers
    assert tier.gpus == 0 and tier.bound == 0


def test_copies_the_model_leaves_out_count_once() -> None:
    """Of a dispatched workload's copies at most one runs: a bound that must
    allow for copies outside the model counts the largest, once."""
    fed = federation(
        manager(["a", "b"], [job("h100-8", 8, model="H100")]),
        {"a": worker("A100", 1), "b": worker("A100", 1)},
    )
    data = compile_problem(fed.snapshot).data
    copies = sorted(data.unsupported)
    assert len(copies) == 2 and set(copies) == data.inadmissible

    def size(w: Workload) -> int:
        return 8

    assert outside_demand(data, size) == {}
    data.inadmissible.clear()  # as if the model merely could not express them
    assert outside_demand(data, size) == {100: 8}
    assert outside_demand(data, size, admitted={copies[0]}) == {}
