"""Multi-cluster plans: the ``cluster`` field and the exclusivity rule."""

from __future__ import annotations

from placewise.models.plan import Plan, plan_from_dict
from placewise.models.validate import validate
from placewise.solver.solve import SolveParams, solve
from tests.multicluster_builders import federation, job, manager, worker


def test_cluster_field_round_trips_and_is_optional() -> None:
    doc = {
        "apiVersion": "placewise.io/v1alpha1",
        "kind": "Plan",
        "solver": {"name": "cpsat", "status": "OPTIMAL"},
        "admissions": [
            {
                "workload": "ns/a",
                "cluster": "east",
                "clusterQueue": "cq",
                "podSetAssignments": [],
            }
        ],
        "preemptions": [
            {
                "workload": "ns/v",
                "cluster": "east",
                "preemptor": "ns/a",
                "reason": "InClusterQueue",
            }
        ],
        "pending": [
            {"workload": "ns/p", "cluster": "west", "reason": "no room"},
            {"workload": "ns/q", "reason": "a: no room; b: no room"},
        ],
    }
    plan = plan_from_dict(doc)
    assert plan.admissions[0].cluster == "east"
    assert plan.preemptions[0].cluster == "east"
    assert [p.cluster for p in plan.pending] == ["west", None]
    out = plan.to_dict()
    assert list(out["admissions"][0])[:2] == ["workload", "cluster"]
    assert "cluster" not in out["pending"][1]
    assert plan_from_dict(out) == plan


def test_cluster_field_must_be_a_name() -> None:
    doc = {
        "apiVersion": "placewise.io/v1alpha1",
        "kind": "Plan",
        "pending": [{"workload": "ns/p", "cluster": ["x"], "reason": ""}],
    }
    try:
        plan_from_dict(doc, "p.yaml")
    except ValueError as exc:
        assert "pending[0].cluster" in str(exc)
    else:
        raise AssertionError("a list as cluster was accepted")


def test_two_copies_admitted_violate_exclusivity() -> None:
    """Copies of one manager Workload in two workers: both fit, at most one
    may be admitted ("bookkeeping.exclusive")."""
    fed = federation(
        manager(["a", "b"], [job("j", 8)]),
        {"a": worker("H100", 1), "b": worker("A100", 1)},
    )
    snap = fed.snapshot
    plan = solve(snap, SolveParams(solver="multikueue-allatonce"))
    (adm,) = plan.admissions
    other = "b.team/j" if adm.workload == "a.team/j" else "a.team/j"
    flavor = "b/a100" if other.startswith("b.") else "a/h100"
    psas = tuple(
        p.model_copy(update={"flavors": {r: flavor for r in p.flavors}})
        for p in adm.pod_set_assignments
    )
    twice = Plan(
        solver=plan.solver,
        admissions=(
            adm,
            adm.model_copy(
                update={
                    "workload": other,
                    "cluster_queue": other[0] + "/cq",
                    "pod_set_assignments": psas,
                }
            ),
        ),
        pending=tuple(p for p in plan.pending if p.workload != other),
    )
    found = validate(snap, twice)
    assert [v.rule for v in found] == ["bookkeeping.exclusive"]
    assert "team/j" in found[0].message
