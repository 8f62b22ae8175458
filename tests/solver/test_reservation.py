"""No starvation (issue 19, item 5): a gang that keeps losing gets a reservation.

``teams.yaml``: four 8-GPU hosts; team-c owns all 32 GPUs.  One 1-GPU job
runs on every host; ``team-c/big`` (4 pods x 8 GPUs) has waited an hour;
1-GPU jobs keep arriving behind it.  Kueue (``--solver greedy``, no
policy) admits whatever fits, so every
host that frees up takes a small job and the gang never starts; with a
reservation the four hosts drain and it starts when the last one is free.
"""

from __future__ import annotations

from typing import Any

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy
from placewise.solver.reservation import starving
from placewise.solver.solve import SolveParams, solve
from tests.models.test_validate_needed import GPU, team
from tests.models.validate_builders import load, pod_set, psa, workload

HOSTS = ("n1", "n2", "n3", "n4")
NOW = "2026-01-01T00:00:00Z"
BIG = "team-c/big"


def small(key: str, created: str = NOW) -> dict[str, Any]:
    return workload(key, "lq", [pod_set(requests={GPU: "1"})], created=created)


def running(key: str, host: str) -> dict[str, Any]:
    on = psa("main", {GPU: "h100"}, {GPU: "1"}, 1, domains=[([host], 1)])
    return workload(
        key,
        "lq",
        [pod_set(requests={GPU: "1"})],
        created="2025-12-31T22:00:00Z",
        running_in="team-c",
        assignments=[on],
    )


def big(created: str = "2025-12-31T23:00:00Z") -> dict[str, Any]:
    return workload(BIG, "lq", [pod_set(count=4, requests={GPU: "8"})], created=created)


def cluster(*objects: dict[str, Any]) -> Snapshot:
    return load("teams.yaml", team("team-b", 0), team("team-c", 32), *objects)


def plan_of(snap: Snapshot, pol: Policy) -> Plan:
    plan = solve_greedy(snap, policy=pol)
    assert validate(snap, plan) == []
    return plan


def admitted(plan: Plan) -> set[str]:
    return {a.workload for a in plan.admissions}


def test_the_gang_that_waited_past_the_threshold_is_the_one_reserved_for() -> None:
    snap = cluster(*(running(f"team-c/r{i}", h) for i, h in enumerate(HOSTS)), big())
    assert [w.key for w in starving(snap, Policy())] == [BIG]
    assert starving(snap, Policy(starvation_minutes=61)) == []
    assert starving(snap, Policy(starvation_minutes=0)) == []


def test_one_snapshot_small_jobs_stay_off_the_reserved_hosts() -> None:
    runs = [running(f"team-c/r{i}", h) for i, h in enumerate(HOSTS)]
    snap = cluster(*runs, big(), small("team-c/s0"), small("team-c/s1"))
    kueue = plan_of(snap, Policy(starvation_minutes=0))
    assert admitted(kueue) == {"team-c/s0", "team-c/s1"}
    held = plan_of(snap, Policy())
    assert admitted(held) == set()
    reason = next(p.reason for p in held.pending if p.workload == BIG)
    assert "4 host(s) reserved" in reason


def test_backfill_goes_where_the_reservation_does_not_need() -> None:
    """Two hosts are enough for a 2-pod gang: the least used two (n4 is
    empty, n1 and n2 run one GPU each: n1 first by name) are held, the
    others stay open to small work."""
    runs = [running("team-c/r0", "n1"), running("team-c/r1", "n2")]
    runs += [running(f"team-c/x{i}", "n3") for i in range(7)]
    gang = workload(
        BIG,
        "lq",
        [pod_set(count=2, requests={GPU: "8"})],
        created="2025-12-31T23:00:00Z",
    )
    snap = cluster(*runs, gang, small("team-c/s0"))
    plan = plan_of(snap, Policy())
    assert admitted(plan) == {"team-c/s0"}
    (a,) = plan.admissions
    topo = a.pod_set_assignments[0].topology_assignment
    assert topo is not None
    hosts = {d.values[-1] for d in topo.domains}
    assert hosts <= {"n2", "n3"}  # held: n4 (empty) and n1 (one GPU in use)


def test_higher_priority_work_ignores_the_reservation() -> None:
    runs = [running(f"team-c/r{i}", h) for i, h in enumerate(HOSTS)]
    urgent = workload(
        "team-c/urgent", "lq", [pod_set(requests={GPU: "1"})], priority=10, created=NOW
    )
    plan = plan_of(cluster(*runs, big(), urgent), Policy())
    assert admitted(plan) == {"team-c/urgent"}


def _replay(pol: Policy, steps: int, optimizer: bool = False) -> list[set[str]]:
    """One host's job ends per step and one small job arrives; each plan is
    applied (admitted work runs on the host the plan chose) and the next
    solve starts from the result, as the replay and the sidecar do."""
    on_host = {f"team-c/r{i}": h for i, h in enumerate(HOSTS)}
    waiting = [f"team-c/s{i}" for i in range(steps)]
    history = []
    for step in range(steps):
        ended = f"team-c/r{step}"
        on_host.pop(ended, None)
        stamp = f"2026-01-01T00:{step:02d}:00Z"
        objects = [running(k, h) for k, h in on_host.items() if k != BIG]
        objects += [small(k, stamp) for k in waiting[: step + 1] if k not in on_host]
        if BIG not in on_host:
            objects.append(big())
        snap = cluster(*objects)
        plan = _cpsat(snap, pol) if optimizer else plan_of(snap, pol)
        history.append(admitted(plan))
        for a in plan.admissions:
            topo = a.pod_set_assignments[0].topology_assignment
            assert topo is not None
            on_host[a.workload] = topo.domains[0].values[-1]
        if BIG in on_host:
            break
    return history


def test_over_time_the_gang_starves_without_and_starts_with_a_reservation() -> None:
    kueue = _replay(Policy(starvation_minutes=0), 4)
    assert all(BIG not in step for step in kueue)
    assert all(len(step) == 1 for step in kueue)  # each freed GPU: a small job
    held = _replay(Policy(), 4)
    assert [BIG in step for step in held] == [False, False, False, True]
    assert held[-1] == {BIG}


def _cpsat(snap: Snapshot, pol: Policy) -> Plan:
    params = SolveParams(
        solver="cpsat",
        time_limit=2.0,
        workers=1,
        seed=0,
        deterministic_time=2.0,
        policy=pol,
    )
    plan = solve(snap, params)
    assert validate(snap, plan) == []
    return plan


def test_the_optimizer_closes_the_reserved_hosts_to_lower_work() -> None:
    runs = [running("team-c/r0", "n1"), running("team-c/r1", "n2")]
    runs += [running(f"team-c/x{i}", "n3") for i in range(7)]
    gang = workload(
        BIG,
        "lq",
        [pod_set(count=2, requests={GPU: "8"})],
        created="2025-12-31T23:00:00Z",
    )
    smalls = [small(f"team-c/s{i}") for i in range(12)]
    snap = cluster(*runs, gang, *smalls)
    free = _cpsat(snap, Policy(starvation_minutes=0))
    assert len(free.admissions) == 12  # 7 + 7 + 1 + 8 GPUs free: all fit
    held = _cpsat(snap, Policy())
    hosts = set()
    for a in held.admissions:
        topo = a.pod_set_assignments[0].topology_assignment
        assert topo is not None
        hosts |= {d.values[-1] for d in topo.domains}
    assert hosts == {"n2", "n3"} and len(held.admissions) == 8  # n1, n4 held


def test_over_time_the_optimizer_starts_the_gang_as_well() -> None:
    kueue = _replay(Policy(starvation_minutes=0), 4, optimizer=True)
    assert all(BIG not in step for step in kueue)
    held = _replay(Policy(), 4, optimizer=True)
    assert [BIG in step for step in held] == [False, False, False, True]


def test_other_starving_work_is_not_shut_out() -> None:
    """The hold stops work queued after the gang from overtaking it; a job
    that has itself waited past the threshold is not that work: it may
    use the held hosts (greedy and optimizer alike), a fresh one may not."""
    runs = [running(f"team-c/r{i}", h) for i, h in enumerate(HOSTS)]
    late = small("team-c/late", "2025-12-31T23:20:00Z")  # waited 40 minutes
    snap = cluster(*runs, big(), small("team-c/s0"), late)
    assert admitted(plan_of(snap, Policy())) == {"team-c/late"}
    assert admitted(_cpsat(snap, Policy())) == {"team-c/late"}
