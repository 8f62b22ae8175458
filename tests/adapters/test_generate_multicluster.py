"""``placewise generate --family multi-cluster -o DIR``: a manager and three
regions that load as one multi-cluster instance, deterministic per seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.adapters.generate.multicluster import REGIONS
from placewise.adapters.multicluster import Worker, load_federation
from placewise.cli import main


def _generate(out: Path, seed: int = 2) -> None:
    args = ["generate", "--family", "multi-cluster", "--nodes", "24"]
    assert main([*args, "--pending", "12", "--seed", str(seed), "-o", str(out)]) == 0


def test_family_loads_and_dispatches(tmp_path: Path) -> None:
    _generate(tmp_path)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == sorted(["manager.yaml", *(f"{r.name}.yaml" for r in REGIONS)])
    fed = load_federation(
        [str(tmp_path / "manager.yaml")],
        [Worker(r.name, (str(tmp_path / f"{r.name}.yaml"),)) for r in REGIONS],
    )
    assert fed.warnings == []
    snap = fed.snapshot
    assert len(snap.facts.dispatch) == 12 and not snap.facts.unplaced
    assert snap.facts.step == 1  # the family's Configuration
    for d in snap.facts.dispatch.values():
        assert d.order == tuple(r.name for r in REGIONS)
        assert set(d.copies) == set(d.order)
    models = {
        n.labels["nvidia.com/gpu.product"].split("-")[1] for n in snap.nodes.values()
    }
    assert models == {"H100", "A100", "L4"}
    pinned = [
        w
        for w in fed.dispatched.values()
        if dict(w.pod_sets[0].placement.node_selector)
    ]
    assert pinned, "no manager workload is constrained to a GPU model"
    assert any(w.is_running for w in snap.workloads.values())


def test_family_is_deterministic(tmp_path: Path) -> None:
    _generate(tmp_path / "a")
    _generate(tmp_path / "b")
    for f in (tmp_path / "a").iterdir():
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes()


def test_family_needs_a_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "--family", "multi-cluster"]) == 2
    assert "-o DIR" in capsys.readouterr().err


def test_every_solver_on_the_family(tmp_path: Path) -> None:
    """Every plan passes the per-cluster validator; the optimizer is at least
    as good as both MultiKueue races on the priority tiers."""
    from placewise.adapters.multicluster import user_plan, validate_clusters
    from placewise.solver.policy import primary_vector
    from placewise.solver.solve import SolveParams, solve

    _generate(tmp_path, seed=3)
    fed = load_federation(
        [str(tmp_path / "manager.yaml")],
        [Worker(r.name, (str(tmp_path / f"{r.name}.yaml"),)) for r in REGIONS],
    )
    snap = fed.snapshot
    vectors = {}
    for s in ("multikueue-allatonce", "multikueue-incremental", "cpsat"):
        plan = solve(snap, SolveParams(solver=s, time_limit=2, workers=1, seed=3))
        assert validate_clusters(fed, user_plan(snap, plan)) == [], s
        vectors[s] = primary_vector(snap, plan)
    assert vectors["cpsat"] >= max(
        vectors["multikueue-allatonce"], vectors["multikueue-incremental"]
    )
