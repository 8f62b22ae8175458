"""The README's policy block is a policy file: it lists every knob (the
move rules have their own section), each at its default."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

import yaml

from placewise.solver.policy import Policy

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_policy_block_is_the_default_policy() -> None:
    text = README.read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(objective: tiers.*?)```", text, re.S)
    assert block is not None
    raw = yaml.safe_load(block.group(1))
    assert Policy.from_mapping(raw) == Policy()
    # Every knob but the move rules (their own section) is listed.
    assert set(raw) | {"moves"} == {f.name for f in fields(Policy)}
