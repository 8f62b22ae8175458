"""Every serve mode re-solves under one policy (issue 19, item 4): the
reversal and lost-work prices and the reservation reach the solver whether
the sidecar answers kube-scheduler, binds pods or writes Kueue admissions,
and ``serve --policy FILE`` reads the same keys as ``solve --policy``."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from placewise.adapters.cli.serve import config_from
from placewise.adapters.serve.engine import solveloop
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.kube.informer import Cache
from placewise.cli import build_parser
from placewise.models.errors import InstanceError
from placewise.models.plan import Plan, SolverInfo
from placewise.solver.policy import Policy
from tests.adapters.serve.conftest import serve_config


@pytest.mark.parametrize("mode", ["extender", "binder", "kueue"])
@pytest.mark.parametrize("solver", ["auto", "cpsat", "greedy"])
def test_every_mode_solves_with_the_configured_policy(monkeypatch, mode, solver):
    seen: list[Any] = []

    def fake(snap: object, params: Any) -> Plan:
        seen.append(params)
        return Plan(solver=SolverInfo(name=params.solver, status="OPTIMAL"))

    monkeypatch.setattr(solveloop, "solve", fake)
    policy = Policy(reversal_gpus=2.5, starvation_minutes=90)
    cfg = serve_config(mode=mode, solver=solver, time_limit=1.0, policy=policy)
    loop = solveloop.SolveLoop(Cache(), None, cfg, Metrics(), [])
    loop._solve(SimpleNamespace(pending=[object()]))
    assert [p.policy for p in seen] == [policy]


def _args(*argv: str) -> Any:
    return build_parser().parse_args(["serve", *argv])


def test_serve_reads_a_policy_file(tmp_path: Path) -> None:
    good = tmp_path / "policy.yaml"
    good.write_text("reversal_gpus: 3\nstarvation_minutes: 0\n")
    cfg = config_from(_args("--policy", str(good)), ("127.0.0.1", 0))
    assert cfg.policy == Policy(reversal_gpus=3.0, starvation_minutes=0)
    assert config_from(_args(), ("127.0.0.1", 0)).policy == Policy()
    bad = tmp_path / "bad.yaml"
    bad.write_text("reversal_gpus: -1\n")
    with pytest.raises(InstanceError, match="reversal_gpus must be in"):
        config_from(_args("--policy", str(bad)), ("127.0.0.1", 0))
