"""The experiment matrix: which instances, which solvers, which seeds.

Instances are generated from the *committed* family configs in
``benchmarks/configs/`` (never from code defaults), so a published figure
names a file and a seed that reproduce it byte for byte.  One task is one
(instance, solver) pair, so ``--jobs`` can spread them over processes and
each task's peak memory is its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from placewise.models.snapshot import Snapshot

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

SOLVERS: tuple[str, ...] = ("kueue", "kube-default", "binpack-gang", "cpsat")
"""Report order; ``kueue`` is the Kueue-compatible greedy."""
LIMIT = "limit"
"""The pseudo-solver computing the LP upper bound of an instance."""

QUICK_FAMILIES: tuple[str, ...] = (
    "default",
    "fragmented",
    "multi-team",
    "fair-share",
    "preemption-heavy",
    "topology-heavy",
    "scale-100",
    "scale-300",
)
"""Small families: every solver on these finishes in seconds to a minute."""

FULL_FAMILIES: tuple[str, ...] = (
    *QUICK_FAMILIES,
    "kueue-tas-perf",
    "scale-1000",
    "scale-3000",
    "scale-10000",
)
SCALE_FAMILIES: tuple[str, ...] = (
    "scale-100",
    "scale-300",
    "scale-1000",
    "scale-3000",
    "scale-10000",
)
"""The sweep plotted as wall time against hosts."""

ONE_SEED_FAMILIES = frozenset({"scale-3000", "scale-10000", "kueue-tas-perf"})
"""Families the full bench runs on its first seed only unless seeds are given:
each of their runs takes minutes, and they measure time, not quality spread."""

AGGREGATE_BOUND_FAMILIES = frozenset({"kueue-tas-perf"})
"""Families whose LP bound is not worth building (15,000 workloads make the
LP's placement columns take many minutes; the family has no GPUs anyway):
their limit is the cheap aggregate ceiling."""


@dataclass(frozen=True, slots=True)
class Instance:
    """A generated instance: committed family config plus seed."""

    family: str
    seed: int
    overrides: tuple[tuple[str, Any], ...] = ()

    @property
    def config_path(self) -> Path:
        return CONFIGS / f"{self.family}.yaml"

    @property
    def label(self) -> str:
        extra = ",".join(f"{k}={v}" for k, v in self.overrides)
        return f"{self.family}[{extra}]" if extra else self.family


@dataclass(frozen=True, slots=True)
class Task:
    """One solver on one instance."""

    instance: Instance
    solver: str
    time_limit: float
    workers: int
    timeout: float
    """Wall seconds after which the worker gives up on the task."""

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.instance.label, self.instance.seed, self.solver)


def known_families() -> list[str]:
    return sorted(p.stem for p in CONFIGS.glob("*.yaml"))


def hosts_of(family: str) -> int:
    """Host count of a committed family (for ordering and the scale plot)."""
    from placewise.adapters.generate import GeneratorConfig

    return GeneratorConfig.from_file(CONFIGS / f"{family}.yaml").node_count


def build_tasks(
    families: Sequence[str],
    solvers: Sequence[str],
    seeds: Iterable[int],
    time_limit: float,
    workers: int,
    timeout: float,
    limit: bool = True,
    one_seed: frozenset[str] = frozenset(),
) -> list[Task]:
    """Every (family, seed) x solver, plus one bound task per instance.

    Families in ``one_seed`` run on the first seed only.  Tasks are ordered
    largest instance first so that a parallel run does not end waiting on
    one big straggler.
    """
    unknown = sorted(set(families) - set(known_families()))
    if unknown:
        raise ValueError(
            f"unknown families {', '.join(unknown)}; known: "
            f"{', '.join(known_families())}"
        )
    bad = sorted(set(solvers) - set(SOLVERS))
    if bad:
        raise ValueError(
            f"unknown solvers {', '.join(bad)}; known: {', '.join(SOLVERS)}"
        )
    seeds = list(seeds)
    tasks = []
    order = sorted(families, key=lambda f: (-hosts_of(f), f))
    for family in order:
        for seed in seeds[:1] if family in one_seed else seeds:
            inst = Instance(family, seed)
            names = [*solvers, LIMIT] if limit else list(solvers)
            for solver in names:
                tasks.append(Task(inst, solver, time_limit, workers, timeout))
    return tasks


def generate_snapshot(instance: Instance) -> Snapshot:
    """Generate the instance in memory and decode it as the loader would."""
    # Imported here so that ``placewise --help`` does not pay for them.
    from placewise.adapters.generate import GeneratorConfig, generate
    from placewise.adapters.io.loader import RawObject, decode_objects
    from placewise.models.errors import InstanceError, Problem
    from placewise.models.snapshot import build_snapshot

    config = GeneratorConfig.from_file(instance.config_path)
    if instance.overrides:
        config = config.with_overrides(**dict(instance.overrides))
    objects = generate(config, instance.seed)
    problems: list[Problem] = []
    decoded, warnings = decode_objects(
        [RawObject(o, f"<{instance.label}:{instance.seed}>", None) for o in objects],
        problems,
    )
    if problems:
        raise InstanceError(problems)
    return build_snapshot(decoded, warnings)
