"""The cpsat package's overview ("How a solve runs") names real steps.

Every ``module:function`` in the docstring of ``placewise.solver.cpsat``
must import and resolve, so that a renamed or moved step breaks this test
instead of leaving the overview wrong."""

from __future__ import annotations

import importlib
import re

import placewise.solver.cpsat as cpsat

PKG = "placewise.solver.cpsat."
STEP = re.compile(r"``([\w.]+):([\w.]+)``")


def steps() -> list[tuple[str, str]]:
    doc = cpsat.__doc__ or ""
    return STEP.findall(re.sub(r"\s+", " ", doc))


def test_the_overview_names_the_steps_of_a_solve_in_order() -> None:
    named = steps()
    assert len(named) >= 30
    first = [f for _, f in named]
    # The pipeline's order: start, build, hint, search, decode, accept, report.
    order = [
        "solve_cpsat",
        "_start",
        "_build",
        "_hint",
        "run_stages",
        "_finished",
        "refused",
        "tier_report",
        "_solved",
    ]
    assert [first.index(f) for f in order] == sorted(first.index(f) for f in order)


def test_every_step_in_the_overview_exists() -> None:
    missing = []
    for module, attr in steps():
        full = module if module.startswith("placewise.") else PKG + module
        obj: object = importlib.import_module(full)
        for part in attr.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                missing.append(f"{module}:{attr}")
                break
        else:
            assert callable(obj), f"{module}:{attr} is not a function or class"
    assert missing == []
