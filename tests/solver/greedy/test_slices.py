"""Elastic workload slices in the greedy (and the optimizer keeping its call).

Built on the validator's ``flat.yaml`` (queue ``cq``: 10 cpu on flavor ``f``,
then 10 on ``g``) and ``tas.yaml`` (4-cpu hosts h1..): a running slice
``old`` and its scale-up ``new`` (``Workload.replaces``).
"""

from __future__ import annotations

from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.cpsat import CpSatParams
from placewise.solver.cpsat.solve import solve_cpsat
from placewise.solver.greedy import solve_greedy
from placewise.solver.greedy.slices import TAS_SLICE
from tests.models.test_validate_slices import LINK, old_slice, slice_of, tas_old
from tests.models.validate_builders import load, pod_set, psa, running, workload

PARAMS = CpSatParams(time_limit=2.0, workers=1, seed=0)


def grown(pods: int, *extra: dict[str, object]) -> Snapshot:
    return load(
        "flat.yaml", old_slice(), slice_of("default/old", "default/new", pods), *extra
    )


def test_only_the_growth_needs_quota() -> None:
    """6 running + 9 asked is 15 of 10: Kueue checks the growth (3) and
    finishes the old slice, which is replaced, not preempted."""
    plan = solve_greedy(grown(9))
    (adm,) = plan.admissions
    assert (adm.workload, adm.replaces) == ("default/new", "default/old")
    assert adm.pod_set_assignments[0].flavors == {"cpu": "f"}
    assert plan.preemptions == ()


def test_growth_beyond_quota_waits() -> None:
    """11 pods: the growth (5) exceeds the 4 left; the old slice keeps running
    and the slice may not move to ``g`` (Kueue pins the old flavors)."""
    plan = solve_greedy(grown(11))
    assert plan.admissions == () and plan.preemptions == ()
    (pending,) = plan.pending
    assert pending.workload == "default/new"


def test_the_freed_quota_serves_others_in_the_same_cycle() -> None:
    """After the replacement 1 cpu of f is left: a 1-cpu workload fits,
    which it would not if the old slice still counted."""
    extra = workload("default/small", "lq", created="2026-01-01T00:00:10Z")
    plan = solve_greedy(grown(9, extra))
    assert {a.workload for a in plan.admissions} == {"default/new", "default/small"}
    assert validate(grown(9, extra), plan) == []


def test_a_slice_without_its_running_slice_is_a_workload_of_its_own() -> None:
    snap = load(
        "flat.yaml",
        running("default/busy", "cq", 4),
        slice_of("default/gone", "default/new", 6),
    )
    (adm,) = solve_greedy(snap).admissions
    assert adm.replaces is None


def test_a_placed_slice_keeps_its_pods_and_places_the_growth() -> None:
    """The old slice's 2 pods stay on h1; the third pod is placed with them
    or elsewhere, and the plan replaces the old slice."""
    snap = load("tas.yaml", tas_old(), slice_of("default/old", "default/new", 3))
    plan = solve_greedy(snap)
    (adm,) = plan.admissions
    assert adm.replaces == "default/old"
    (psa,) = adm.pod_set_assignments
    assert psa.count == 3 and psa.topology_assignment is not None
    placed = psa.topology_assignment.as_counts()
    assert placed.get(("h1",), 0) >= 2 and sum(placed.values()) == 3


def test_a_constrained_placed_slice_waits() -> None:
    """A required topology cannot be grown in place (Kueue refuses it too)."""
    rack = {"kueue.x-k8s.io/podset-required-topology": "cloud/rack"}
    grow = workload("default/new", "lq", [pod_set(count=3, annotations=rack)])
    grow["metadata"]["annotations"] = {LINK: "default/old"}
    plan = solve_greedy(load("tas.yaml", tas_old(), grow))
    assert plan.admissions == ()
    assert plan.pending[0].reason == TAS_SLICE


def test_the_optimizer_keeps_the_greedys_slice_decision() -> None:
    snap = grown(9)
    plan = solve_cpsat(snap, PARAMS)
    assert [(a.workload, a.replaces) for a in plan.admissions] == [
        ("default/new", "default/old")
    ]
    assert plan.preemptions == ()


def test_the_growth_goes_where_there_is_room() -> None:
    """Two 2-cpu pods fill h1 (4 cpu): the third lands on another host, the
    two stay; the optimizer keeps that decision."""
    old = workload(
        "default/old",
        "lq",
        [pod_set(count=2, requests={"cpu": "2"})],
        running_in="tas-cq",
        assignments=[
            psa("main", {"cpu": "tas"}, {"cpu": "4"}, 2, domains=[(["h1"], 2)])
        ],
    )
    grow = workload("default/new", "lq", [pod_set(count=3, requests={"cpu": "2"})])
    grow["metadata"]["annotations"] = {LINK: "default/old"}
    snap = load("tas.yaml", old, grow)
    for plan in (solve_greedy(snap), solve_cpsat(snap, PARAMS)):
        (adm,) = plan.admissions
        assert adm.replaces == "default/old"
        placed = adm.pod_set_assignments[0].topology_assignment
        assert placed is not None
        counts = placed.as_counts()
        assert counts[("h1",)] == 2 and sum(counts.values()) == 3


def test_two_slices_of_one_job_replace_it_once() -> None:
    """Only one slice can take the running one's place; the other is then a
    workload of its own (the plan stays valid)."""
    twin = slice_of("default/old", "default/new2", 2, created="2026-01-01T00:00:05Z")
    plan = solve_greedy(grown(9, twin))
    replacing = [a.workload for a in plan.admissions if a.replaces]
    assert replacing == ["default/new"]
