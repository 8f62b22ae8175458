"""../shared, when present, still holds what the suite was written against.

Without it every test reading it skips with one reason; with it, a moved
or emptied folder must fail here rather than shrink the suite unnoticed.
"""

from __future__ import annotations

from tests import shared


@shared.requires_shared
def test_kueue_case_groups_hold_at_least_the_known_cases() -> None:
    found = shared.case_counts()
    short = {
        group: (found.get(group, 0), want)
        for group, want in shared.EXPECTED.items()
        if found.get(group, 0) < want
    }
    assert not short, f"(found, expected) per group: {short}"


@shared.requires_shared
def test_trace_files_are_present() -> None:
    missing = [f for f in shared.DATA_FILES if not (shared.DATA / f).is_file()]
    assert not missing


def test_params_without_shared_skip_with_the_one_reason(monkeypatch) -> None:
    monkeypatch.setattr(shared, "present", lambda: False)
    [param] = shared.params(["a", "b"])
    [mark] = param.marks
    assert mark.name == "skip" and mark.args == (shared.MISSING,)
    monkeypatch.setattr(shared, "present", lambda: True)
    assert [p.values for p in shared.params(["a", "b"])] == [("a",), ("b",)]
