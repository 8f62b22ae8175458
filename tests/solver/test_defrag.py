"""Moves and their certificate against exhaustive enumeration.

Small seeded instances: 2 racks x 2 hosts of 4 GPUs, single-pod running jobs
of 1-2 GPUs scattered over the hosts (movable), and one pending gang of two
4-GPU pods that must share a rack — it needs two empty hosts in one rack.
The brute force below shares nothing with the solver: it tries every set of
moved jobs and every host for each, smallest sets first.
"""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from placewise.adapters.io.loader import load_snapshot
from placewise.models.moves import MOVABLE_LABEL, MoveRules
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.defrag import add_moves
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy, tier_figures
from placewise.solver.solve import SolveParams, solve

KUEUE = "kueue.x-k8s.io/v1beta1"
HOSTS = {"h1": "r1", "h2": "r1", "h3": "r2", "h4": "r2"}
GPUS = 4
HOSTNAME = "kubernetes.io/hostname"
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _node(host: str, rack: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": host,
            "labels": {"rack": rack, HOSTNAME: host, "pool": "g"},
        },
        "status": {
            "allocatable": {"cpu": "64", "nvidia.com/gpu": str(GPUS), "pods": "32"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod_set(count: int, gpus: int, rack: bool) -> dict[str, Any]:
    template: dict[str, Any] = {
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}
            ]
        }
    }
    if rack:
        template["metadata"] = {
            "annotations": {"kueue.x-k8s.io/podset-required-topology": "rack"}
        }
    return {"name": "main", "count": count, "template": template}


def _workload(
    name: str,
    count: int,
    gpus: int,
    host: str | None = None,
    rack: bool = False,
    hours: float = 0,
) -> dict[str, Any]:
    """``hours``: how long a running one has run at the snapshot's now (the
    gang's creation, the newest time in the instance)."""
    started = (NOW - timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
    obj: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {
            "namespace": "default",
            "name": name,
            "creationTimestamp": started,
        },
        "spec": {"queueName": "lq", "podSets": [_pod_set(count, gpus, rack)]},
    }
    if host is not None:
        obj["metadata"]["labels"] = {MOVABLE_LABEL: "true"}
        obj["status"] = {
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "flavors": {"nvidia.com/gpu": "g"},
                        "resourceUsage": {"nvidia.com/gpu": str(gpus)},
                        "count": 1,
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "domains": [{"values": [host], "count": 1}],
                        },
                    }
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "Admitted",
                    "lastTransitionTime": started,
                },
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "lastTransitionTime": started,
                },
            ],
        }
    return obj


def instance(jobs: list[tuple[str, int]], hours: Sequence[float] = ()) -> Snapshot:
    """``jobs``: (host, GPUs) of each running job; the gang is pending.
    ``hours``: how long each job has run (0 where not given)."""
    with tempfile.TemporaryDirectory() as tmp:
        return load_snapshot([write_instance(Path(tmp) / "i.yaml", jobs, hours)])


def write_instance(
    path: Path,
    jobs: list[tuple[str, int]],
    hours: Sequence[float] = (),
    hosts: dict[str, str] | None = None,
    gangs: Sequence[tuple[str, int]] = (("gang", 2),),
) -> Path:
    """``hosts``: host -> rack (default :data:`HOSTS`); ``gangs``: (name,
    pods) of each pending rack-required gang of 4-GPU pods, in queue order
    (one second apart)."""
    ran = [*hours, *[0.0] * (len(jobs) - len(hours))]
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}},
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "topo"},
            "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": HOSTNAME}]},
        },
        {
            "apiVersion": KUEUE,
            "kind": "ResourceFlavor",
            "metadata": {"name": "g"},
            "spec": {"nodeLabels": {"pool": "g"}, "topologyName": "topo"},
        },
        {
            "apiVersion": KUEUE,
            "kind": "ClusterQueue",
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "g",
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": "100"}
                                ],
                            }
                        ],
                    }
                ],
            },
        },
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"namespace": "default", "name": "lq"},
            "spec": {"clusterQueue": "cq"},
        },
        *(_node(h, r) for h, r in (hosts or HOSTS).items()),
        *(
            _workload(f"job-{i}", 1, g, host=h, hours=ran[i])
            for i, (h, g) in enumerate(jobs)
        ),
        *(
            _workload(name, pods, GPUS, rack=True, hours=(len(gangs) - 1 - i) / 3600)
            for i, (name, pods) in enumerate(gangs)
        ),
    ]
    path.write_text(yaml.safe_dump_all(objects))
    return path


def random_jobs(seed: int) -> list[tuple[str, int]]:
    """Jobs that fill hosts to at most 4 GPUs each, some host in every rack used."""
    rng = random.Random(seed)
    used = dict.fromkeys(HOSTS, 0)
    jobs: list[tuple[str, int]] = []
    for _ in range(rng.randint(2, 6)):
        host, gpus = rng.choice(sorted(HOSTS)), rng.randint(1, 2)
        if used[host] + gpus <= GPUS:
            used[host] += gpus
            jobs.append((host, gpus))
    return jobs


def brute_fewest(jobs: list[tuple[str, int]]) -> int | None:
    """The fewest jobs to move so that the gang fits, by trying every set
    and every new host for each; None when no set does."""
    for k in range(len(jobs) + 1):
        for moved in itertools.combinations(range(len(jobs)), k):
            for target in itertools.product(sorted(HOSTS), repeat=k):
                used = dict.fromkeys(HOSTS, 0)
                for i, (h, g) in enumerate(jobs):
                    if i not in moved:
                        used[h] += g
                for i, h in zip(moved, target, strict=True):
                    used[h] += jobs[i][1]
                if any(v > GPUS for v in used.values()):
                    continue
                racks = [
                    sum(used[h] == 0 for h, r in HOSTS.items() if r == rack)
                    for rack in sorted(set(HOSTS.values()))
                ]
                if max(racks) >= 2:
                    return k
    return None


def with_moves(snap: Snapshot, budget: int) -> Plan:
    base = solve_greedy(snap)
    policy = Policy(moves=MoveRules(count=budget))
    return add_moves(snap, base, policy, Budget.of(5.0), workers=1, seed=0)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("budget", [1, 2])
def test_fewest_moves_match_exhaustive_enumeration(seed: int, budget: int) -> None:
    jobs = random_jobs(seed)
    snap = instance(jobs)
    fewest = brute_fewest(jobs)
    plan = with_moves(snap, budget)
    assert validate(snap, plan, Policy(moves=MoveRules(count=budget)).move_rules) == []
    admitted = {a.workload for a in plan.admissions}
    if fewest is not None and fewest <= budget:
        assert "default/gang" in admitted
        assert len(plan.moves) == fewest
        return
    assert "default/gang" not in admitted and not plan.moves
    (entry,) = [p for p in plan.pending if p.workload == "default/gang"]
    idle = GPUS * len(HOSTS) - sum(g for _, g in jobs)
    assert entry.blocked_by == ("fragmentation" if idle >= 2 * GPUS else "priority")
    if fewest is None:
        assert entry.fewest_moves is None
        assert "no plan within the move budget admits it" in entry.reason
    else:  # more than the budget: the certificate still says how many
        assert entry.fewest_moves == fewest


def test_the_instances_cover_every_case() -> None:
    """The seeds above include gangs needing 0..2+ moves and impossible ones."""
    found = {brute_fewest(random_jobs(seed)) for seed in range(12)}
    assert {1, 2} <= found
    full = [("h1", 2), ("h1", 2), ("h2", 2), ("h2", 2), ("h3", 2), ("h3", 2)]
    full += [("h4", 2), ("h4", 2)]
    assert brute_fewest(full) is None


def test_no_plan_when_the_cluster_is_full() -> None:
    jobs = [(h, 2) for h in sorted(HOSTS) for _ in range(2)]
    plan = with_moves(instance(jobs), 3)
    (entry,) = plan.pending
    assert entry.blocked_by == "priority"  # no idle GPU: running work holds it
    assert entry.fewest_moves is None and not plan.moves


def test_a_budget_of_zero_moves_nothing() -> None:
    jobs = [("h1", 1), ("h3", 1)]
    assert brute_fewest(jobs) == 1
    snap = instance(jobs)
    params = SolveParams(solver="cpsat", time_limit=2, workers=1)
    assert not solve(snap, params).moves
    with_budget = SolveParams(
        solver="cpsat", time_limit=2, workers=1, policy=Policy(moves=MoveRules(count=1))
    )
    plan = solve(snap, with_budget)
    assert len(plan.moves) == 1
    assert plan.moves[0].lost_gpu_hours == 0  # started at the snapshot's now
    assert validate(snap, plan, with_budget.policy.move_rules) == []


def test_kai_consolidation_moves_victims_and_stays_valid() -> None:
    """KAI's consolidation: one job per rack blocks the gang; accumulating
    victims until the gang and every victim fit moves one of them."""
    jobs = [("h1", 1), ("h3", 1)]
    snap = instance(jobs)
    policy = Policy(moves=MoveRules(count=2))
    params = SolveParams(solver="kai-consolidation", policy=policy)
    plan = solve(snap, params)
    assert "default/gang" in {a.workload for a in plan.admissions}
    assert len(plan.moves) == 1 and not plan.preemptions
    assert validate(snap, plan, policy.move_rules) == []
    without = solve(snap, SolveParams(solver="kai-consolidation"))  # no budget
    assert not without.moves and "default/gang" not in {
        a.workload for a in without.admissions
    }


@pytest.mark.parametrize("seed", range(6))
def test_kai_consolidation_never_beats_the_exhaustive_fewest(seed: int) -> None:
    """A committed KAI scenario is a set of moves that admits the gang, so it
    is never fewer than the fewest; and each plan passes the validator."""
    jobs = random_jobs(seed)
    snap = instance(jobs)
    policy = Policy(moves=MoveRules(count=4))
    plan = solve(snap, SolveParams(solver="kai-consolidation", policy=policy))
    assert validate(snap, plan, policy.move_rules) == []
    fewest = brute_fewest(jobs)
    if "default/gang" in {a.workload for a in plan.admissions}:
        assert fewest is not None and len(plan.moves) >= fewest


def test_settling_leaves_moves_alone() -> None:
    """A moved workload's admission is no pending workload's to withdraw,
    nor a preemptor to credit: settling a plan with moves keeps them."""
    from placewise.models.plan import PlanPreemption
    from placewise.solver.settle import settle_preemptions

    snap = instance([("h1", 1), ("h3", 1)])
    plan = with_moves(snap, 1)
    assert len(plan.moves) == 1
    stay = next(w.key for w in snap.running if w.key != plan.moves[0].workload)
    extra = PlanPreemption(
        workload=stay, preemptor="default/gang", reason="InClusterQueue"
    )
    noisy = plan.model_copy(update={"preemptions": (extra,)})
    assert any(v.rule == "preemption.unneeded" for v in validate(snap, noisy))
    settled = settle_preemptions(snap, noisy)
    assert settled.preemptions == ()  # the needless victim comes back
    assert settled.moves == plan.moves and settled.admissions == plan.admissions


def test_moves_are_reproducible_under_deterministic_time() -> None:
    snap = instance([("h1", 1), ("h2", 2), ("h3", 1), ("h4", 2)])
    params = SolveParams(
        solver="cpsat",
        workers=1,
        deterministic_time=2.0,
        policy=Policy(moves=MoveRules(count=2)),
    )

    def stripped(plan: Plan) -> dict[str, Any]:
        doc = plan.to_dict()
        doc["solver"].pop("wallSeconds")
        return doc

    first, second = solve(snap, params), solve(snap, params)
    assert len(first.moves) == 2  # both jobs of one rack
    assert stripped(first) == stripped(second)


def test_fragmented_running_blocks_gangs_by_fragmentation_alone() -> None:
    """The bench family's premise: Kueue leaves half-rack gangs pending while
    their queue has quota and the idle GPUs would hold them in total; small
    running jobs carry the movable label (a quarter checkpointed)."""
    from placewise.benchmarks.defrag_bench import instance as family_instance
    from placewise.models.moves import CHECKPOINTED, is_true

    snap = family_instance(1)
    small = [w for w in snap.running if w.name.startswith("small-")]
    assert small and all(is_true(w.labels.get(MOVABLE_LABEL)) for w in small)
    assert any(is_true(w.annotations.get(CHECKPOINTED)) for w in small)
    plan = solve_greedy(snap)
    waiting = [
        p for p in plan.pending if p.workload.split("/")[1].startswith("half-rack")
    ]
    assert waiting and all("quota" not in p.reason for p in waiting)
    gpus = sum(int(n.allocatable.get("nvidia.com/gpu", 0)) for n in snap.nodes.values())
    used = sum(
        q
        for w in snap.running
        for (_, r), q in w.usage().items()
        if r == "nvidia.com/gpu"
    )
    assert gpus - used >= 2 * 32  # two half-rack gangs' worth idle, in pieces


def _cert(plan: Plan) -> Any:
    (entry,) = [p for p in plan.pending if p.workload == "default/gang"]
    return entry


def test_a_move_must_pay_for_itself() -> None:
    """The 8-GPU gang gains 8 GPUs; moving a 2-GPU job that ran 5 hours
    throws away 10 GPU-hours (plus a GPU for the reversal): at the default
    price (1 GPU per GPU-hour lost) it does not pay, at price 0 it does.
    The certificate still says how many moves would admit the gang."""
    jobs = [("h1", 2), ("h3", 2)]
    assert brute_fewest(jobs) == 1
    snap = instance(jobs, hours=[5, 5])
    base = solve_greedy(snap)
    priced = Policy(moves=MoveRules(count=2))
    plan = add_moves(snap, base, priced, Budget.of(5.0), workers=1, seed=0)
    assert not plan.moves and "default/gang" not in {
        a.workload for a in plan.admissions
    }
    entry = _cert(plan)
    assert entry.fewest_moves == 1 and entry.blocked_by == "fragmentation"
    assert "pay for themselves" in entry.reason
    free = Policy(moves=MoveRules(count=2, price=0))
    plan = add_moves(snap, base, free, Budget.of(5.0), workers=1, seed=0)
    assert len(plan.moves) == 1 and plan.moves[0].lost_gpu_hours == 10
    assert validate(snap, plan, free.move_rules) == []
    # The policy's preemption price is the default move price.
    cheap = Policy(preemption_price=0.5, moves=MoveRules(count=2))
    assert cheap.move_rules.price == 0.5
    plan = add_moves(snap, base, cheap, Budget.of(5.0), workers=1, seed=0)
    assert len(plan.moves) == 1  # 5 + 1 GPUs < 8


def test_the_move_that_pays_is_the_young_one() -> None:
    """Either job's move admits the gang; only the one that ran an hour
    pays for itself (2 GPU-hours + 1 < 8 GPUs), and that one moves."""
    snap = instance([("h1", 2), ("h3", 2)], hours=[5, 1])
    plan = add_moves(
        snap,
        solve_greedy(snap),
        Policy(moves=MoveRules(count=2)),
        Budget.of(5.0),
        workers=1,
        seed=0,
    )
    (move,) = plan.moves
    assert move.workload == "default/job-1" and move.lost_gpu_hours == 2
    assert "default/gang" in {a.workload for a in plan.admissions}


def test_tier_weights_order_plans_as_the_tiers_do() -> None:
    from placewise.solver.defrag.joint import JointGang, tier_weights

    high_one, high_none, low_a, low_b = tier_weights(
        [
            JointGang([], 10, 1, None),
            JointGang([], 10, 0, None),
            JointGang([], 0, 32, None),
            JointGang([], 0, 32, None),
        ]
    )
    assert high_none > low_a + low_b  # any gang of a higher tier first
    assert high_one > high_none > 0  # GPUs first, then gangs without GPUs
    assert low_a == low_b


def test_fragmented_running_moves_beat_kai_consolidation_at_its_cost() -> None:
    """Issue 20's clause on the bench family (seed 1, from Kueue's plan, a
    deterministic budget): the moves lift the tiers at least to KAI's
    consolidation with no more moves and no more lost work, and the gangs
    admitted through moves gain more GPUs than their moves cost."""
    from placewise.benchmarks.defrag_bench import instance as family_instance
    from placewise.solver.policy import primary_vector

    snap = family_instance(1)
    policy = Policy(moves=MoveRules(count=16))
    kai = solve(snap, SolveParams(solver="kai-consolidation", policy=policy))
    base = solve_greedy(snap)
    plan = add_moves(snap, base, policy, Budget.of(60.0), 1, 0, deterministic=1.0)
    assert validate(snap, plan, policy.move_rules) == []
    assert plan.moves and primary_vector(snap, plan) >= primary_vector(snap, kai)
    assert len(plan.moves) <= len(kai.moves)
    lost = sum(m.lost_gpu_hours for m in plan.moves)
    assert lost <= sum(m.lost_gpu_hours for m in kai.moves)
    gained = sum(f.gpus for f in tier_figures(snap, plan)) - sum(
        f.gpus for f in tier_figures(snap, base)
    )
    assert gained > lost + len(plan.moves)  # price 1, a GPU's reversal per move
