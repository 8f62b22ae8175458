"""Line coverage per top-level package, from ``coverage json`` output.

``make test`` ends with this table so a drop in one package shows at a glance
(a single total hides a package nobody tests any more).  It reads the JSON
report rather than coverage's API so the package needs no coverage import:
``python -m placewise.benchmarks.coverage_table coverage.json``.

Paths are the real files (``solver/...``), not ``placewise/solver/...``:
placewise/ reaches the top-level folders through symlinks and coverage
records resolved paths, so ``[tool.coverage.run] source`` names the folders.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGES = ("models", "solver", "adapters", "benchmarks", "placewise")


@dataclass
class Row:
    package: str
    files: int = 0
    statements: int = 0
    missing: int = 0

    @property
    def percent(self) -> float:
        """Covered share of statements; a package with none counts as covered."""
        if self.statements == 0:
            return 100.0
        return 100.0 * (self.statements - self.missing) / self.statements


def package_of(path: str) -> str:
    """The top-level folder a reported file lives in ("other" outside them)."""
    head = Path(path).parts[0] if Path(path).parts else ""
    return head if head in PACKAGES else "other"


def rows(report: dict[str, Any]) -> list[Row]:
    """One row per package, in layer order, then the total."""
    table = {p: Row(p) for p in PACKAGES}
    for path, entry in (report.get("files") or {}).items():
        summary = entry.get("summary") or {}
        row = table.setdefault(package_of(path), Row(package_of(path)))
        row.files += 1
        row.statements += int(summary.get("num_statements", 0))
        row.missing += int(summary.get("missing_lines", 0))
    out = [r for r in table.values() if r.files]
    total = Row(
        "total",
        sum(r.files for r in out),
        sum(r.statements for r in out),
        sum(r.missing for r in out),
    )
    return [*out, total]


def render(table: list[Row]) -> str:
    lines = [
        "line coverage per package",
        f"{'package':<12}{'files':>7}{'lines':>9}{'missed':>9}{'cover':>8}",
    ]
    for r in table:
        lines.append(
            f"{r.package:<12}{r.files:>7}{r.statements:>9,}{r.missing:>9,}"
            f"{r.percent:>7.1f}%"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "coverage.json")
    if not path.is_file():
        print(f"coverage: no report at {path} (run coverage json first)")
        return 1
    print(render(rows(json.loads(path.read_text()))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
