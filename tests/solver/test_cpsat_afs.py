"""The optimizer's admission-fair-sharing tie-break (``solver/cpsat/model/afs.py``).

Tiny instances: one ClusterQueue, two LocalQueues, room for one job.  With
the usage-based mode the low-usage LocalQueue's job is admitted (as the
greedy does); without it the model has no AFS stage and plans are unchanged.
"""

from __future__ import annotations

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat import CpSatParams
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.solve import solve_cpsat
from placewise.solver.greedy import solve_greedy
from placewise.solver.problem.compile import compile_problem
from placewise.solver.solve import SolveParams, solve
from tests.helpers import NS, cq_yaml, flavor_yaml, snapshot
from tests.solver.greedy.test_afs import USAGE_BASED, config, local_queue
from tests.solver.greedy.test_mechanisms import wl


def one_slot(extra: str, with_config: bool = True) -> Snapshot:
    """a recorded 4 cpu of usage and submitted first; b nothing; room for one."""
    docs = [config()] if with_config else []
    return snapshot(
        NS,
        flavor_yaml(),
        *docs,
        cq_yaml("cq", quotas={"cpu": ("1", None, None)}, extra=extra),
        local_queue("a", "cpu: '4'"),
        local_queue("b"),
        wl("a1", "a", "1", ts=0),
        wl("b1", "b", "1", ts=1),
        wl("b2", "b", "1", ts=2),
    )


def cpsat(snap: Snapshot) -> Plan:
    params = SolveParams(solver="cpsat", workers=1, seed=1, deterministic_time=5.0)
    return solve(snap, params)


def admitted(plan: Plan) -> list[str]:
    return sorted(a.workload for a in plan.admissions)


def test_cpsat_and_greedy_admit_the_low_usage_queue() -> None:
    snap = one_slot(USAGE_BASED)
    assert admitted(solve_greedy(snap)) == ["default/b1"]
    assert admitted(cpsat(snap)) in (["default/b1"], ["default/b2"])


def test_the_term_moves_cpsat_off_a_warm_start_of_the_busy_queue() -> None:
    """Warm-started with the classical plan (a1, the busy queue's job), the
    optimizer still ends on the low-usage queue: the AFS stage, not the
    greedy's hint, decides."""
    snap = one_slot(USAGE_BASED)
    classical = solve_greedy(one_slot(""))
    assert admitted(classical) == ["default/a1"]
    params = CpSatParams(workers=1, seed=1, deterministic_time=5.0)
    plan = solve_cpsat(snap, params, warm=classical)
    assert admitted(plan) in (["default/b1"], ["default/b2"])


def test_stage_ranks_local_queues_by_usage() -> None:
    """a (usage 4) has rank 1, b (0) rank 0: only a1's admission costs."""
    problem = compile_problem(one_slot(USAGE_BASED))
    data = problem.data
    model = CPModel(problem, CpSatParams())
    (stage,) = [s for s in model.stages if s.name == "admission-fair-sharing"]
    a1 = next(wd.idx for wd in data.workloads if wd.key == "default/a1")
    assert stage.terms == [(-1, model.vars.workloads[a1].admit)]
    off = CPModel(compile_problem(one_slot("")), CpSatParams())
    assert all("admission-fair-sharing" not in s.name for s in off.stages)


def test_without_usage_based_mode_the_plan_is_unchanged() -> None:
    """No usage-based queue: no AFS stage, the same plan as with no
    Configuration at all (and as before this term existed)."""
    off = cpsat(one_slot(""))
    assert off.model_dump(exclude={"solver"}) == cpsat(
        one_slot("", with_config=False)
    ).model_dump(exclude={"solver"})
    assert admitted(off) == ["default/a1"]
