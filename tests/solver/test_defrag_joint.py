"""The joint move model: the pending gangs of a flavor decided together.

Two racks of three 4-GPU hosts; four 1-GPU movable jobs leave one empty host
per rack.  Gang ``a`` (2 x 4 GPUs, one rack) comes first in Kueue's queue
order and needs one move (pack a job onto its rack-mate); gang ``b`` (3 x 4
GPUs, one rack) needs two (a rack's two jobs to the other rack); both need
three (every job onto one host).  With two moves, taking the gangs one by
one in queue order admits ``a`` and leaves ``b`` no budget; the joint model
admits ``b``: more GPUs for the same tier.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from placewise.adapters.io.loader import load_snapshot
from placewise.models.moves import MoveRules
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from placewise.solver.budget import Budget
from placewise.solver.defrag import add_moves
from placewise.solver.greedy import solve_greedy
from placewise.solver.policy import Policy
from tests.solver.test_defrag import write_instance

HOSTS = {"h1": "r1", "h2": "r1", "h3": "r1", "h4": "r2", "h5": "r2", "h6": "r2"}
JOBS = [("h1", 1), ("h2", 1), ("h4", 1), ("h5", 1)]


def instance() -> Snapshot:
    with tempfile.TemporaryDirectory() as tmp:
        path = write_instance(
            Path(tmp) / "i.yaml", JOBS, hosts=HOSTS, gangs=(("a", 2), ("b", 3))
        )
        return load_snapshot([path])


def test_the_gangs_are_chosen_together() -> None:
    snap = instance()
    base = solve_greedy(snap)
    assert {p.workload for p in base.pending} == {"default/a", "default/b"}
    policy = Policy(moves=MoveRules(count=2))
    plan = add_moves(snap, base, policy, Budget.of(5.0), workers=1, seed=0)
    assert validate(snap, plan, policy.move_rules) == []
    admitted = {a.workload for a in plan.admissions}
    assert "default/b" in admitted and "default/a" not in admitted
    assert len(plan.moves) == 2
    (a,) = [p for p in plan.pending if p.workload == "default/a"]
    assert a.blocked_by == "fragmentation"


def test_a_budget_for_both_admits_both() -> None:
    snap = instance()
    policy = Policy(moves=MoveRules(count=3))
    plan = add_moves(snap, solve_greedy(snap), policy, Budget.of(5.0), 1, 0)
    assert validate(snap, plan, policy.move_rules) == []
    assert {"default/a", "default/b"} <= {a.workload for a in plan.admissions}
    assert len(plan.moves) == 3
