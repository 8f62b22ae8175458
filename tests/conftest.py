"""Suite-wide rules: every solver plan is validated, ../shared may be absent.

See :mod:`tests.plan_audit` and :mod:`tests.shared`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import plan_audit, shared


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{plan_audit.MARKER}(reason): the test means to see solver plans the "
        "validator rejects (they are counted, not failed)",
    )
    plan_audit.install()


@pytest.fixture(autouse=True)
def _audit_solver_plans(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail the test if a plan made outside its thread (a sidecar's) was
    rejected; torn down after the test's other fixtures have stopped them."""
    audit = plan_audit.AUDIT
    audit.take_errors()
    audit.allow = request.node.get_closest_marker(plan_audit.MARKER) is not None
    yield
    audit.allow = False
    errors = audit.take_errors()
    if errors:
        pytest.fail("\n\n".join(errors), pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    audit = plan_audit.AUDIT
    total = sum(audit.validated.values())
    by_solver = ", ".join(f"{k} {v}" for k, v in sorted(audit.validated.items()))
    line = f"placewise: {total} solver plans validated"
    if by_solver:
        line += f" ({by_solver})"
    line += f" in {audit.seconds:.1f} s"
    if audit.published:
        line += f"; {audit.published} sidecar plans re-checked when published"
    if audit.allowed:
        line += f"; {audit.allowed} rejected in tests that expect it"
    terminalreporter.write_line(line)
    if not shared.present():
        skipped = [
            r
            for r in terminalreporter.stats.get("skipped", [])
            if shared.MISSING in str(getattr(r, "longrepr", ""))
        ]
        terminalreporter.write_line(f"{shared.MISSING} ({len(skipped)} tests skipped)")
