"""The rule catalog matches the code, and every rule has a test."""

from __future__ import annotations

import re
from pathlib import Path

from placewise.models.validate import RULES

ROOT = Path(__file__).resolve().parents[2]
RULE_ID = re.compile(
    r'"((?:bookkeeping|podsets|eligibility|quota|topology|capacity|slice|preemption|moves)'
    r'\.[a-z-]+)"'
)


def _ids(paths: list[Path]) -> set[str]:
    return {m for p in paths for m in RULE_ID.findall(p.read_text())}


def test_every_reported_rule_is_catalogued() -> None:
    """Scripts match on rule ids; RULES lists exactly the ids the code emits."""
    modules = sorted((ROOT / "models" / "validate").glob("*.py"))
    emitted = _ids([m for m in modules if m.name != "__init__.py"])
    assert emitted == set(RULES)


def test_every_rule_has_a_violating_test() -> None:
    """Each rule id is asserted by at least one hand-made violating plan."""
    tests = sorted(Path(__file__).parent.glob("test_validate_*.py"))
    tests = [t for t in tests if t.name != Path(__file__).name]
    assert set(RULES) - _ids(tests) == set()
