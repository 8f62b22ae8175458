"""What serve says about itself: fallback reasons and log lines."""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest

from placewise.adapters.cli.serve import log_formatter
from placewise.adapters.serve import solveloop
from placewise.adapters.serve.informer import Cache
from placewise.adapters.serve.metrics import Metrics
from placewise.models.plan import Plan, SolverInfo
from placewise.solver.cpsat.plan_io import fallback
from tests.adapters.serve.conftest import serve_config


def fallbacks(metrics: Metrics) -> dict[str, float]:
    return {
        s.labels["reason"]: s.value
        for m in metrics.fallbacks.collect()
        for s in m.samples
        if s.name.endswith("_total")
    }


@pytest.mark.parametrize(
    ("why", "label"),
    [
        ("the search ended below the warm start", "below-warm-start"),
        ("no solution within the time limit", "time-limit"),
        ("building the model used the time limit", "time-limit"),
        ("the plan shares the cohort less fairly", "fair-sharing"),
        ("fair sharing refuses ml/a: ...", "fair-sharing"),
        ("running usage or quota beyond int64 is outside the model", "outside-model"),
        ("the optimizer failed: ValueError: x", "error"),
    ],
)
def test_an_optimizer_fallback_is_counted_under_its_own_reason(monkeypatch, why, label):
    """The optimizer returned its warm start after 0.37 s because the search
    ended below it: that is not a time limit, and the metric says so."""
    greedy = Plan(solver=SolverInfo(name="greedy", status="OPTIMAL"))
    returned = fallback(greedy, 0.37, why=why)
    monkeypatch.setattr(solveloop, "solve", lambda snap, params: returned)
    metrics = Metrics()
    loop = solveloop.SolveLoop(
        Cache(), None, serve_config(solver="cpsat", time_limit=5.0), metrics, []
    )
    plan, reason = loop._solve(SimpleNamespace(pending=[object()]))
    assert plan is returned and plan.solver.fallback == why
    assert reason == label
    assert fallbacks(metrics) == {label: 1.0}


def test_plain_text_log_lines_carry_a_timestamp():
    record = logging.LogRecord(
        "placewise.serve", logging.INFO, __file__, 1, "admitted %s", ("ml/a",), None
    )
    line = log_formatter("text").format(record)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} INFO placewise\.serve: admitted ml/a",
        line,
    ), line
    assert '"ts": "' in log_formatter("json").format(record)
