"""The validator accepts what Kueue itself decided in ../shared/kueue-cases.

The plan comes from ``expected.yaml`` and the instance alone
(:func:`tests.kueue_cases.expected_plan`), never from a solver, so a
rejection here means the validator is stricter than Kueue.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from placewise.adapters.io.loader import load_snapshot
from placewise.models.snapshot import Snapshot
from placewise.models.validate import validate
from tests.kueue_cases import case_id, expected_plan, instance_path, list_cases
from tests.shared import EXPECTED, params, requires_shared

CASES = list_cases()


@cache
def snapshot(case: Path) -> Snapshot:
    """Each instance is loaded once for all tests of this module."""
    return load_snapshot([instance_path(case)])


@requires_shared
def test_cases_are_present() -> None:
    """Guard against silently testing fewer cases if ../shared moves."""
    assert len(CASES) >= sum(EXPECTED.values())


@pytest.mark.parametrize("case", params(CASES, ids=case_id))
def test_kueue_outcome_is_feasible(case: Path) -> None:
    """Kueue's admissions, preemptions and pending set pass every rule."""
    snap = snapshot(case)
    violations = validate(snap, expected_plan(case, snap))
    assert violations == [], "\n".join(str(v) for v in violations)


@requires_shared
def test_expected_plans_exercise_the_validator() -> None:
    """The cases cover admissions, TAS placements and preemptions alike, so
    acceptance above is not vacuous."""
    admissions = topology = preemptions = 0
    for case in CASES:
        snap = snapshot(case)
        p = expected_plan(case, snap)
        admissions += len(p.admissions)
        preemptions += len(p.preemptions)
        topology += sum(
            1
            for a in p.admissions
            for psa in a.pod_set_assignments
            if psa.topology_assignment is not None
        )
    assert admissions >= 80 and topology >= 50 and preemptions >= 40
