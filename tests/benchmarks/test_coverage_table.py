"""The per-package coverage table ``make test`` ends with."""

from __future__ import annotations

import json

from placewise.benchmarks import coverage_table


def entry(statements: int, missing: int) -> dict:
    return {"summary": {"num_statements": statements, "missing_lines": missing}}


def test_files_are_summed_per_top_level_folder_with_a_total():
    report = {
        "files": {
            "solver/cpsat/model.py": entry(100, 10),
            "solver/solve.py": entry(50, 40),
            "models/plan.py": entry(10, 0),
            "placewise/__init__.py": entry(4, 1),
            "tests/helpers.py": entry(7, 7),
        }
    }
    rows = {r.package: r for r in coverage_table.rows(report)}
    assert list(rows) == ["models", "solver", "placewise", "other", "total"]
    assert (rows["solver"].files, rows["solver"].statements) == (2, 150)
    assert rows["solver"].percent == 100 * 100 / 150
    assert rows["total"].statements == 171 and rows["total"].missing == 58
    assert "adapters" not in rows  # nothing measured there: no empty row


def test_main_prints_the_table_and_fails_without_a_report(tmp_path, capsys):
    path = tmp_path / "coverage.json"
    assert coverage_table.main([str(path)]) == 1
    assert "no report" in capsys.readouterr().out
    path.write_text(json.dumps({"files": {"adapters/x.py": entry(8, 2)}}))
    assert coverage_table.main([str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split() == ["adapters", "1", "8", "2", "75.0%"]
    assert out[-1].split()[0] == "total"
