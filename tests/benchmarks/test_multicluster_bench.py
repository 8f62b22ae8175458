"""The multi-cluster benchmark runs end to end on a tiny instance."""

from __future__ import annotations

import pytest

from placewise.benchmarks import multicluster_bench


def test_bench_table(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--seeds", "1", "--hosts", "16", "--pending", "8", "--time-limit", "1"]
    assert multicluster_bench.main([*args, "--workers", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 1 |")]
    assert [r.split(" | ")[1] for r in rows] == list(multicluster_bench.SOLVERS)
    assert "!!" not in out  # no plan was rejected


def test_pending_with_room_counts_what_fits_alone() -> None:
    """A race that nominates one busy region per round leaves work pending
    that another region could take now; the optimizer does not."""
    fed = multicluster_bench.federation(1, 48, 24)
    from placewise.solver.solve import SolveParams

    inc = multicluster_bench.measure(
        fed, "multikueue-incremental", SolveParams(solver="multikueue-incremental")
    )
    assert inc.with_room > 0 and inc.violations == 0
    assert sum(inc.idle.values()) > 0
