"""The sweep spec: one YAML file naming a base, a job source and axes.

Strict on purpose: a sweep may run for hours on a cluster, so a typo
(``add_host``, a flavor that does not exist, a policy key the solver does
not have) must fail at once, naming the file and the key path, not after
the first hundred points.  :func:`load_spec` checks the shape (pydantic,
unknown keys rejected, no type coercion); :mod:`.check` checks the names
against the loaded base.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

Quantity = int | float | str


class SpecError(ValueError):
    """Every problem of a spec, each ``FILE: key.path: message``."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Base(_Strict):
    """The cluster: instance ``files`` or a generated ``family`` (with
    generator ``overrides``, e.g. ``{nodes: 8}`` as ``generate --nodes 8``)."""

    files: list[str] = []
    family: str | None = None
    overrides: dict[str, Any] = {}

    @model_validator(mode="after")
    def _one_source(self) -> Base:
        if bool(self.files) == bool(self.family):
            raise ValueError("give files or family, not both or neither")
        if self.overrides and not self.family:
            raise ValueError("overrides change a generated family; give family")
        return self


class Jobs(_Strict):
    """The arrivals, as ``placewise simulate`` takes them: a trace, or the
    base family's pending workloads (``arrivals`` generates that many)."""

    trace: str | None = None
    trace_format: str = "helios"
    arrivals: int | None = Field(default=None, ge=1)
    load: float | None = Field(default=None, gt=0)
    """Offered load against the *base* cluster's GPUs: a variant with more
    hosts gets the same arrivals, so it shows what the hosts buy."""
    hours: float | None = Field(default=None, gt=0)
    durations: Literal["generated", "openb"] = "generated"


class HostsAxis(_Strict):
    flavor: str
    values: list[int] = Field(min_length=1)
    """Hosts added (negative: removed), cheapest first."""
    grow_quota: bool = True
    """The flavor's quotas grow (shrink) with its hosts, shared as they
    were: without it Kueue would admit nothing more on the new hosts."""


class QuotaAxis(_Strict):
    cluster_queue: str
    resource: str = "nvidia.com/gpu"
    flavor: str | None = None
    """Needed only when the queue has ``resource`` in several flavors."""
    values: list[Quantity] = Field(min_length=1)


class WeightAxis(_Strict):
    cluster_queue: str
    values: list[Quantity] = Field(min_length=1)


class Axes(_Strict):
    """Each axis multiplies the points; ``policy`` is one axis per key."""

    add_hosts: HostsAxis | None = None
    quota: QuotaAxis | None = None
    fair_weight: WeightAxis | None = None
    policy: dict[str, list[Any]] = {}
    load: list[float] | None = None
    seed: list[int] = Field(default=[1], min_length=1)


class Target(_Strict):
    """The question: the first variant (spec order) where ``metric`` (of
    ``priority``: a class name or value) is at most / at least a bound, on
    every seed (``over_seeds: worst``) or on the median seed."""

    metric: str
    priority: int | str | None = None
    at_most: float | None = None
    at_least: float | None = None
    over_seeds: Literal["worst", "median"] = "worst"

    @model_validator(mode="after")
    def _one_bound(self) -> Target:
        if (self.at_most is None) == (self.at_least is None):
            raise ValueError("give at_most or at_least (one of them)")
        return self


DEFAULT_METRICS = (
    "mean_delay_s",
    "p95_delay_s",
    "p95_jct_s",
    "utilization_pct",
    "preemptions",
)
DEFAULT_SOLVE_METRICS = ("admitted_gpus", "gpus_after", "preemptions")


class SweepSpec(_Strict):
    """A whole sweep (see the README's ``placewise sweep``)."""

    kind: Literal["replay", "solve"] = "replay"
    base: Base
    jobs: Jobs | None = None
    axes: Axes = Axes()
    solvers: list[str] = Field(default=["greedy"], min_length=1)
    time_limit: float = Field(default=10.0, gt=0)
    workers: int = Field(default=1, ge=0)
    """CP-SAT workers per point (points already run in parallel)."""
    metrics: list[str] = []
    """Columns of the table: metric keys, ``KEY@PRIORITY`` for one class."""
    target: Target | None = None

    @model_validator(mode="after")
    def _jobs_for_replays(self) -> SweepSpec:
        if self.kind == "solve" and self.jobs is not None:
            raise ValueError("kind: solve decides the base's pending work; no jobs")
        if self.kind == "solve" and (self.axes.load is not None):
            raise ValueError("kind: solve has no arrivals to load; drop axes.load")
        return self

    @property
    def metric_names(self) -> list[str]:
        if self.metrics:
            return list(self.metrics)
        return list(DEFAULT_METRICS if self.kind == "replay" else DEFAULT_SOLVE_METRICS)


def load_spec(path: str | Path) -> SweepSpec:
    """The spec in ``path``; SpecError names the file and every bad key."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError([f"{path}: cannot read: {exc.strerror or exc}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise SpecError([f"{path}{where}: not YAML: {exc}"]) from None
    if not isinstance(raw, dict):
        raise SpecError([f"{path}: a sweep spec is a YAML mapping"])
    try:
        return SweepSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError([_located(path, e) for e in exc.errors()]) from None


def _located(path: Path, error: Any) -> str:
    loc = ".".join(str(p) for p in error["loc"]) or "(top)"
    msg = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"{path}: {loc}: {msg}"


def resolve(spec: SweepSpec, path: str | Path) -> SweepSpec:
    """Paths in the spec made absolute, relative to the spec's folder (so a
    spec runs the same from any directory and on a Ray worker)."""
    here = Path(path).resolve().parent

    def abs_(p: str) -> str:
        return str((here / p).resolve()) if not Path(p).is_absolute() else p

    base = spec.base.model_copy(update={"files": [abs_(f) for f in spec.base.files]})
    jobs = spec.jobs
    if jobs is not None and jobs.trace is not None:
        jobs = jobs.model_copy(update={"trace": abs_(jobs.trace)})
    return spec.model_copy(update={"base": base, "jobs": jobs})
