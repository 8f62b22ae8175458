"""TASBalancedPlacement (issue 22 item 3): off by default, and the gate is what
changes the transcribed cases' placements (tests/data/kueue-cases-more/tas)."""

from __future__ import annotations

from pathlib import Path

from placewise.adapters.io.loader import snapshot_from_text
from placewise.solver.kueue.tas import TasState
from tests.kueue_cases import MORE
from tests.solver.kueue.tas.test_kueue_cases import requests_of

CASE = MORE / "tas" / "find-balanced-placement-basic"


def _place(text: str) -> dict[tuple[str, ...], int]:
    snap = snapshot_from_text(text)
    (wl,) = snap.pending
    result = TasState.build(snap).find_assignments(
        "tas-flavor", requests_of(CASE.name, wl)
    )
    assert result.assignments is not None, result.reason
    return {d.values: d.count for d in result.assignments["main"].domains}


def test_the_gate_spreads_evenly_and_off_is_bestfit() -> None:
    text = (CASE / "instance.yaml").read_text()
    assert "TASBalancedPlacement: true" in text
    assert _place(text) == {("x1",): 13, ("x2",): 12}
    off = text.replace("TASBalancedPlacement: true", "TASBalancedPlacement: false")
    assert _place(off) == {("x1",): 15, ("x2",): 10}
    unset = text.replace("featureGates:\n  TASBalancedPlacement: true\n", "")
    assert unset != text
    assert _place(unset) == _place(off)


def test_every_balanced_case_is_transcribed() -> None:
    cases = sorted(Path(MORE / "tas").glob("find-balanced-placement-*"))
    assert len(cases) == 19
