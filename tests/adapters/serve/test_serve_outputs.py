"""What serve says about itself: fallback reasons and log lines."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from placewise.adapters.cli.serve import banner, log_formatter
from placewise.adapters.serve.engine import solveloop
from placewise.adapters.serve.engine.metrics import Metrics
from placewise.adapters.serve.kube.informer import Cache
from placewise.models.plan import Plan, SolverInfo
from placewise.solver.cpsat.decode.plan_io import fallback
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


DEMO = Path(__file__).resolve().parents[3] / "adapters" / "data"
DOC = Path(__file__).resolve().parents[3] / "docs" / "serve.md"


def bundled_demo() -> set[str]:
    """Workloads, pod gangs and lone pods of the bundled demo, as ns/name."""
    out: set[str] = set()
    for path in sorted(DEMO.glob("serve-demo-*.yaml")):
        for obj in yaml.safe_load_all(path.read_text()):
            if not obj or obj["kind"] not in ("Workload", "Pod"):
                continue
            meta = obj["metadata"]
            labels = meta.get("labels") or {}
            if obj["kind"] == "Pod" and obj["spec"].get("nodeName"):
                continue  # already running, outside any queue
            group = labels.get("kueue.x-k8s.io/pod-group-name") or labels.get(
                "scheduling.x-k8s.io/pod-group"
            )
            out.add(f"{meta['namespace']}/{group or meta['name']}")
    return out


def test_the_docs_name_the_bundled_demo_objects():
    text = DOC.read_text()
    table = text[text.index("| demo object |") : text.index("The pod gangs are")]
    named = set(re.findall(r"`([a-z0-9-]+/[a-z0-9-]+)`", table))
    assert named == bundled_demo()


def test_only_the_extender_mode_banner_lists_the_extender_verbs():
    ext = banner("extender", "http://127.0.0.1:1", "/scheduler", True, "http://m")
    assert "listening on http://127.0.0.1:1/scheduler/{filter,prioritize" in ext
    assert ext.endswith("/healthz /readyz /debug/plan; metrics on http://m/metrics")
    for mode in ("kueue", "binder"):
        line = banner(mode, "http://127.0.0.1:1", "/scheduler", False, "http://m")
        assert "filter" not in line and "/scheduler" not in line, line
        assert line == (
            f"placewise serve ({mode}) listening on http://127.0.0.1:1: "
            "/healthz /readyz; metrics on http://m/metrics"
        )
