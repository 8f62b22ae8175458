"""Kueue feature gates on by default that act through a Workload annotation
(issue 22): AdmissionGatedBy keeps a gated workload out of every solver's
plan, with Kueue's message."""

from __future__ import annotations

from placewise.solver.cpsat import CpSatParams
from placewise.solver.cpsat.solve import solve_cpsat
from placewise.solver.greedy import solve_greedy
from tests.helpers import NS, cq_yaml, flavor_yaml, snapshot
from tests.solver.greedy.test_mechanisms import lq, wl

GATE = "kueue.x-k8s.io/admission-gated-by"


def gated_instance() -> str:
    """Room for both; the earlier one is gated by an external controller."""
    text = wl("gated", "q", "1", ts=0)
    return text.replace(
        "  namespace: default\n",
        f"  namespace: default\n  annotations: {{{GATE}: example.com/quota-check}}\n",
        1,
    )


def test_gated_workload_stays_pending_for_greedy_and_cpsat() -> None:
    snap = snapshot(
        NS,
        flavor_yaml(),
        cq_yaml("cq"),
        lq("q", "cq"),
        gated_instance(),
        wl("free", "q", "1", ts=1),
    )
    assert snap.workloads["default/gated"].annotations == {
        GATE: "example.com/quota-check"
    }
    for plan in (
        solve_greedy(snap),
        solve_cpsat(snap, CpSatParams(time_limit=2.0, workers=1, seed=0)),
    ):
        assert [a.workload for a in plan.admissions] == ["default/free"]
        (pending,) = plan.pending
        assert pending.workload == "default/gated"
        assert pending.reason == "Admission is gated by: example.com/quota-check"
