"""Every solver's victims are needed and their room serves who may take it
(formats.md; the live soak's in-queue evictions that served another queue)."""

from __future__ import annotations

from placewise.benchmarks.harness.matrix import Instance, generate_snapshot
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.greedy import solve_greedy
from placewise.solver.settle import WITHDRAWN, settle_preemptions
from placewise.solver.solve import SolveParams, solve
from tests.models.test_validate_needed import TEAMS, at, held, job
from tests.models.validate_builders import load, plan

NEEDED = {"preemption.unneeded", "preemption.room-elsewhere"}


def soak() -> tuple[Snapshot, Plan]:
    snap = load(
        "teams.yaml",
        *TEAMS,
        held("team-b/victim", 8, "n1"),
        held("team-c/held", 8, "n3"),
        job("team-b/small", 1, priority=100),
        job("team-c/big", 8),
    )
    bad = plan(
        [at("team-b/small", 1, "n2"), at("team-c/big", 8, "n1")],
        preemptions=[("team-b/victim", "team-b/small", "InClusterQueue")],
    )
    return snap, bad


def test_settling_the_soak_example_keeps_the_victim() -> None:
    """No admission needs the victim and no policy lets team-c take its
    node: team-c's gang waits, the victim keeps running."""
    snap, bad = soak()
    settled = settle_preemptions(snap, bad)
    assert validate(snap, settled) == []
    assert settled.preemptions == ()
    assert [a.workload for a in settled.admissions] == ["team-b/small"]
    waiting = {p.workload: p.reason for p in settled.pending}
    assert waiting == {"team-c/big": WITHDRAWN}


def test_a_valid_plan_is_left_as_it_is() -> None:
    snap, bad = soak()
    good = bad.model_copy(update={"preemptions": (), "admissions": bad.admissions[:1]})
    assert settle_preemptions(snap, good) is good


def two_gangs() -> Snapshot:
    """Two 8-GPU jobs of priority 100, one free host (n2) and team-b's
    victim on n1."""
    return load(
        "teams.yaml",
        *TEAMS,
        held("team-b/victim", 8, "n1"),
        held("team-c/held", 8, "n3", priority=100),
        held("team-c/held2", 8, "n4", priority=100),
        job("team-b/hi", 8, priority=100),
        job("team-c/big", 8, priority=100),
    )


def test_every_solver_on_the_soak_cluster_obeys() -> None:
    """Two 8-GPU jobs of priority 100 and one free host: the victim's node
    must go to its own queue's job, whichever solver decides."""
    snap = two_gangs()
    for solver in ("greedy", "cpsat"):
        p = solve(snap, SolveParams(solver=solver, workers=1, deterministic_time=5))
        assert validate(snap, p) == [], solver
    # The optimizer admits both (16 GPUs of priority 100, Kueue 8): the
    # victim's node to team-b's job, the free host to team-c's.
    assert [x.workload for x in p.preemptions] == ["team-b/victim"]
    on = {
        a.workload: a.pod_set_assignments[0].topology_assignment for a in p.admissions
    }
    assert {k: ta.domains[0].values for k, ta in on.items() if ta} == {
        "team-b/hi": ("n1",),
        "team-c/big": ("n2",),
    }


def test_kueues_cycles_hold_the_room_for_the_preemptor() -> None:
    """Run to quiescence, Kueue's cycles would hand a rack an eviction freed
    to another queue's gang (topology-heavy seed 1 had 32 such leaves); the
    greedy holds the room for the preemptor, so its raw plan obeys."""
    snap = generate_snapshot(Instance("topology-heavy", 1))
    raw = solve_greedy(snap)
    assert raw.preemptions
    assert not {v.rule for v in validate(snap, raw)} & NEEDED


def test_the_live_loop_refuses_a_plan_that_breaks_the_rule(caplog) -> None:
    """A plan with the soak's eviction never reaches the cluster: the sidecar
    validates before it writes and falls back to Kueue's (settled) plan."""
    from placewise.adapters.serve.engine import solveloop
    from placewise.adapters.serve.engine.metrics import Metrics
    from placewise.adapters.serve.kube.informer import Cache
    from tests.adapters.serve.conftest import serve_config

    snap, bad = soak()
    loop = solveloop.SolveLoop(
        Cache(), None, serve_config(solver="cpsat", time_limit=2.0), Metrics(), []
    )
    plan, reason = loop._checked(bad, None, snap)
    assert reason == "invalid"
    assert (
        "rejected by the validator (2 violation(s), first: preemption." in caplog.text
    )
    assert plan.solver.name == "greedy" and validate(snap, plan) == []
    assert "team-b/victim" not in {p.workload for p in plan.preemptions}


def test_a_withdrawn_preemptor_leaves_no_victim_behind() -> None:
    """team-c's gang is withdrawn (it sits on the room of team-b's victim,
    which no admission needs); the quota its own in-queue victim freed for it
    then serves nothing, so that victim keeps running too.  Seen in the
    ``preemption-heavy`` replay: best-fit's plan, settled, evicted two
    priority-1000 jobs for a withdrawn gang, and the optimizer could not
    express that plan (a cold start)."""
    snap = load(
        "teams.yaml",
        *TEAMS,
        held("team-b/victim", 8, "n1"),
        held("team-c/v2", 8, "n2"),
        held("team-c/v3", 8, "n3"),
        held("team-c/v4", 4, "n4"),
        job("team-b/small", 1, priority=100),
        job("team-c/big", 8, priority=100),
    )
    bad = plan(
        [at("team-b/small", 1, "n4"), at("team-c/big", 8, "n1")],
        preemptions=[
            ("team-b/victim", "team-b/small", "InClusterQueue"),
            ("team-c/v2", "team-c/big", "InClusterQueue"),
        ],
    )
    found = validate(snap, bad)
    assert {v.workload for v in found if v.rule in NEEDED} == {"team-b/victim"}
    settled = settle_preemptions(snap, bad)
    assert validate(snap, settled) == []
    assert [a.workload for a in settled.admissions] == ["team-b/small"]
    assert settled.preemptions == ()


def test_a_victim_left_unneeded_by_a_withdrawal_is_settled_too() -> None:
    """team-b borrows (8 of its 4); team-c's job sits on the room of
    team-b/v1 and may not reclaim it, so it is withdrawn.  That frees
    cohort quota: team-b's preemptor then fits with v2 back, so v2 — needed
    when the pass began — must come back as well (the Helios replay at load 7
    stopped on such a plan).  v3 stays: with v2 back the cohort is full."""
    from tests.models.test_validate_needed import team

    snap = load(
        "teams.yaml",
        team("team-b", 4),
        team("team-c", 22),
        held("team-b/v1", 4, "n1"),
        held("team-b/v2", 2, "n2"),
        held("team-b/v3", 2, "n3"),
        held("team-c/c1", 6, "n2"),
        held("team-c/c2", 6, "n3"),
        job("team-b/p", 8, priority=100),
        job("team-c/w", 6),
    )
    bad = plan(
        [at("team-b/p", 8, "n4"), at("team-c/w", 6, "n1")],
        preemptions=[
            (f"team-b/{v}", "team-b/p", "InClusterQueue") for v in ("v1", "v2", "v3")
        ],
    )
    flagged = {v.workload for v in validate(snap, bad) if v.rule in NEEDED}
    assert flagged == {"team-b/v1"}
    settled = settle_preemptions(snap, bad)
    assert validate(snap, settled) == []
    assert [a.workload for a in settled.admissions] == ["team-b/p"]
    assert [p.workload for p in settled.preemptions] == ["team-b/v3"]
