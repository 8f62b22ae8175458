"""Plain running pods: the non-Kueue load that fragments the hosts.

Placed after the running Workloads on what they left, through the same
``placement.Capacity``, so no host is ever over its allocatable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placewise.adapters.generate._units import (
    CPU,
    GPU,
    MEMORY,
    format_quantity,
    parse_quantity,
    timestamp,
)
from placewise.adapters.generate.config import ConfigError
from placewise.adapters.generate.workloads import MAX_FAILURES, Running

PLAIN_POD_IMAGE = "registry.example.com/serving/runtime:1.8"


class _Batches:
    """Draws (choice, uniform) pairs in blocks: per-call numpy draws dominate
    the cost of placing 20,000 pods, and blocks keep the stream deterministic."""

    def __init__(self, rng: np.random.Generator, n: int, p: Any, size: int = 4096):
        self.rng, self.n, self.p, self.size = rng, n, p, size
        self.pos = size
        self.choices: list[int] = []
        self.uniforms: list[float] = []

    def next(self) -> tuple[int, float]:
        if self.pos == self.size:
            self.choices = self.rng.choice(self.n, size=self.size, p=self.p).tolist()
            self.uniforms = self.rng.random(self.size).tolist()
            self.pos = 0
        self.pos += 1
        return self.choices[self.pos - 1], self.uniforms[self.pos - 1]


def running_pods(state: Running, rng: np.random.Generator) -> list[dict[str, Any]]:
    """Plain pods on random hosts until the fill (or the exact count) is reached."""
    config, layout = state.config, state.layout
    shapes = config.running_pod_shapes
    if not shapes:
        return []
    weights = np.array([s.weight for s in shapes], dtype=float)
    weights /= weights.sum()
    requests = [
        np.array(
            [parse_quantity(s.cpu, CPU), parse_quantity(s.memory, MEMORY), s.gpus, 1],
            dtype=np.int64,
        )
        for s in shapes
    ]
    exact = config.running_pods
    target = config.running_fill * state.total()
    width = len(str(max((exact or 0) - 1, 99999)))
    out: list[dict[str, Any]] = []
    used = state.used()
    failures = 0
    primary = state.primary()
    draws = _Batches(rng, len(shapes), weights)
    while (len(out) < exact) if exact is not None else (used < target):
        k, age = draws.next()
        host = state.capacity.place_pod(rng, requests[k])
        if host is None:
            failures += 1
            if failures >= MAX_FAILURES:
                if exact is not None:
                    raise ConfigError(
                        f"running_pods: only {len(out)} of {exact} pods fit "
                        "on the hosts"
                    )
                break
            continue
        failures = 0
        used += int(requests[k][primary])
        shape = shapes[k]
        started = timestamp(state.snapshot, -(600 + age * 14 * 24 * 3600))
        res = {
            CPU: parse_quantity(shape.cpu, CPU),
            MEMORY: parse_quantity(shape.memory, MEMORY),
            GPU: shape.gpus,
        }
        resources: dict[str, Any] = {
            "requests": {r: format_quantity(v, r) for r, v in res.items() if v > 0}
        }
        if shape.gpus:
            resources["limits"] = {GPU: str(shape.gpus)}
        name = f"{shape.name}-{len(out):0{width}d}"
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": name,
                    "namespace": shape.namespace,
                    "creationTimestamp": started,
                    "labels": {"app": shape.name},
                },
                "spec": {
                    "nodeName": layout.names[host],
                    "containers": [
                        {
                            "name": "main",
                            "image": PLAIN_POD_IMAGE,
                            "resources": resources,
                        }
                    ],
                    "restartPolicy": "Always",
                    "schedulerName": "default-scheduler",
                    "priority": 0,
                },
                "status": {
                    "phase": "Running",
                    "startTime": started,
                    "qosClass": "Burstable",
                },
            }
        )
    return out
