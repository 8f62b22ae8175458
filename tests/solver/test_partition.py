"""The partition search (solver/cpsat/search/partition.py): beyond LARGE_CELLS
the filled warm start is improved part by part of the topology.

A 96-host instance (one block of six racks) takes the large path here by
lowering LARGE_CELLS; its parts are then racks.  Kueue's greedy is the warm
start: the search must improve on it, keep every plan valid, and leave
everything outside a part as the incumbent has it."""

from __future__ import annotations

import itertools

import pytest

import placewise.solver.cpsat.solve as solve_module
from placewise.adapters.generate import dumps, family, generate
from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.cpsat import CpSatParams, solve_cpsat
from placewise.solver.cpsat.decode.finish import fill
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.search.partition import (
    PartitionSearch,
    partition,
    sub_problem,
)
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import primary_vector
from placewise.solver.settle import settle_preemptions

PARAMS = CpSatParams(time_limit=10.0, workers=1, seed=0)


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    config = family("fragmented").with_overrides(nodes=96, pending=40)
    return snapshot_from_text(dumps(generate(config, 2)))


@pytest.fixture(scope="module")
def search(snap: Snapshot) -> tuple[PartitionSearch, Plan]:
    """The search over the greedy's plan, filled beside its victims (as the
    large path starts it), and that plan."""
    start = solve_module._start(snap, PARAMS, solve_greedy(snap))
    plan = solve_module._filled_around_victims(start.problem, start.warm)
    part = partition(start.snapshot, PARAMS.policy)
    assert part is not None
    found = PartitionSearch(start.snapshot, start.problem, PARAMS, part, start.reasons)
    return found, plan


def test_a_one_block_cluster_is_partitioned_by_rack(snap: Snapshot) -> None:
    part = partition(snap, PARAMS.policy)
    assert part is not None
    assert len(part.blocks) == 6
    assert all(len(b) == 2 for b in part.blocks)  # (block, rack)
    nodes = set().union(*part.nodes.values())
    assert nodes == {
        n.name for f in snap.flavors.values() for n in snap.flavor_nodes(f)
    }


def test_a_part_keeps_the_incumbents_preemptions_and_the_rest_of_the_plan(
    search: tuple[PartitionSearch, Plan],
) -> None:
    """Victims' room is never a part's, preemptors are fixed, the incumbent
    is a plan of every part's model, and a round's plan differs from the
    incumbent only in what the part decides."""
    found, plan = search
    assert plan.preemptions, "the instance should exercise kept preemptions"
    victims_room = set().union(*(found.running[p.workload] for p in plan.preemptions))
    preemptors = {p.preemptor for p in plan.preemptions}
    improved = 0
    for _ in range(6):
        hosts = found._pick(plan)  # seeded: the same parts every run
        sub = sub_problem(
            found.infos, found.part, hosts, plan, found.running, found.whole
        )
        assert sub.hosts <= hosts
        assert not sub.hosts & victims_room
        data = sub.problem.data
        decided = {wd.key for wd in data.workloads}
        assert not decided & preemptors
        assert {a.workload for a in data.fixed_admissions} >= preemptors
        assert CPModel(sub.problem, found.params).hint(plan) is not None
        got = found.round(plan, hosts, Budget.of(2.0))
        if got is None or got[0] is None:
            continue
        new = got[0]
        improved += 1
        assert new.preemptions == plan.preemptions
        ours = {a.workload: a for a in new.admissions}
        for a in plan.admissions:
            if a.workload not in decided:
                assert ours.get(a.workload) == a
        assert primary_vector(found.snapshot, new) >= primary_vector(
            found.snapshot, plan
        )
        assert validate(found.snapshot, new) == []
        plan = new
    assert improved >= 1


def test_an_evicting_round_admits_work_on_room_it_frees_and_the_plan_validates(
    search: tuple[PartitionSearch, Plan],
) -> None:
    """With the part's running work as victims, some part of three racks
    evicts it to admit work the incumbent leaves waiting; the round's plan
    keeps the incumbent's evictions, validates, and needs no settling.
    (One rack alone frees no room a waiting gang can use: parts of three
    are the rounds' size here.)"""
    found, plan = search
    before = {p.workload for p in plan.preemptions}
    waiting = {w.key for w in found.snapshot.admissible()} - {
        a.workload for a in plan.admissions
    }
    for blocks in itertools.combinations(found.part.blocks, 3):
        hosts = frozenset().union(*(found.part.nodes[b] for b in blocks))
        sub = sub_problem(
            found.infos, found.part, hosts, plan, found.running, found.whole, True
        )
        ours = {v.info.key for v in sub.problem.data.victims}
        assert ours <= {k for k, held in found.running.items() if held <= sub.hosts}
        got = found.round(plan, hosts, Budget.of(2.0), evict=True)
        new = got[0] if got is not None else None
        if new is None:
            continue
        evicted = {p.workload for p in new.preemptions}
        assert evicted >= before
        if not evicted - before:
            continue
        assert evicted - before <= ours
        admitted = {a.workload for a in new.admissions} & waiting
        assert admitted
        assert validate(found.snapshot, new) == []
        assert settle_preemptions(found.snapshot, new) == new
        assert primary_vector(found.snapshot, new) > primary_vector(
            found.snapshot, plan
        )
        return
    pytest.fail("no part of three racks evicted its running work to admit")


def test_the_large_path_improves_on_the_warm_start(
    monkeypatch: pytest.MonkeyPatch, snap: Snapshot
) -> None:
    """Forced down the large path with the greedy as warm start, the plan is
    cpsat's own, valid, strictly above the old large path's plan (the
    greedy filled, then settled), and every tier keeps a bound at least its
    GPUs."""
    warm = solve_greedy(snap)
    monkeypatch.setattr(solve_module, "LARGE_CELLS", 0)
    start = solve_module._start(snap, PARAMS, warm)
    floor = settle_preemptions(snap, fill(start.problem, warm))
    plan = solve_cpsat(snap, PARAMS, warm=warm)
    assert validate(snap, plan) == []
    assert plan.solver.name == "cpsat" and plan.solver.status == "FEASIBLE"
    assert primary_vector(snap, plan) > primary_vector(snap, floor)
    for tier in plan.solver.tiers:
        assert tier.bound is not None and tier.bound >= tier.gpus, tier
