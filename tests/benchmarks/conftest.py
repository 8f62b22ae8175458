"""Shared fixtures: the openb data lives in ../shared beside the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from placewise.benchmarks.fgd.trace import Trace, load_trace
from tests.shared import SHARED, skip_if_missing


@pytest.fixture(scope="session")
def shared() -> Path:
    skip_if_missing()
    return SHARED


@pytest.fixture(scope="session")
def trace(shared: Path) -> Trace:
    return load_trace("default", shared=shared)


def tiny_trace(
    nodes: list[tuple[int, int, int]], pods: list[tuple[int, int, int]]
) -> Trace:
    """A synthetic trace: nodes (cpu, gpus, model ix), pods (cpu, num, milli)."""
    import numpy as np

    def arr(xs: list[int]) -> np.ndarray:
        return np.array(xs, dtype=np.int64)

    return Trace(
        name="tiny",
        node_names=tuple(f"n{i:02d}" for i in range(len(nodes))),
        node_cpu=arr([n[0] for n in nodes]),
        node_mem=arr([1 << 20] * len(nodes)),
        node_gpus=arr([n[1] for n in nodes]),
        node_model=arr([n[2] for n in nodes]),
        models=("A", "B"),
        pod_names=tuple(f"p{i:02d}" for i in range(len(pods))),
        pod_cpu=arr([p[0] for p in pods]),
        pod_mem=arr([1024] * len(pods)),
        pod_num=arr([p[1] for p in pods]),
        pod_milli=arr([p[2] for p in pods]),
        pod_spec=("",) * len(pods),
        pod_model_mask=arr([3] * len(pods)),
    )
