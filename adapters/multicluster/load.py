"""``--cluster NAME=FILE[,FILE...]`` options and the files behind them.

Every malformed option (no ``=``, an empty or invalid name, no file, a name
given twice) and every problem of every file — the manager's and each
worker's, the latter naming the worker — is reported together, exit 2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placewise.adapters.io.loader import RawObject, read_objects
from placewise.adapters.multicluster.combine import (
    PREFERENCE_COST,
    ClusterCosts,
    Federation,
    federation_from_raws,
    in_cluster,
)
from placewise.models.errors import InstanceError, Location, Problem, describe

NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""A MultiKueueCluster name: a DNS subdomain, as Kubernetes names objects."""
MAX_COST = 1_000_000


@dataclass(frozen=True, slots=True)
class Worker:
    """One ``--cluster`` option: the worker's name (its MultiKueueCluster)
    and its dump's files."""

    name: str
    files: tuple[str, ...]


def parse_workers(values: Sequence[str], flag: str = "--cluster") -> list[Worker]:
    """Parse every option; raises :class:`InstanceError` listing all problems."""
    problems: list[Problem] = []
    out: list[Worker] = []
    seen: set[str] = set()
    for value in values:
        where = Location(field=f"{flag} {describe(value, quote=False)}")
        name, sep, files = value.partition("=")
        if not sep:
            problems.append(Problem(where, "expected NAME=FILE[,FILE...]"))
            continue
        paths = tuple(f for f in files.split(",") if f)
        if not NAME.fullmatch(name) or len(name) > 253:
            problems.append(
                Problem(
                    where,
                    f"cluster name {describe(name)} is not a DNS subdomain name "
                    "(lower-case letters, digits, '-' and '.')",
                )
            )
        elif name in seen:
            problems.append(Problem(where, f"cluster {name} is given twice"))
        if not paths:
            problems.append(Problem(where, "names no file"))
        seen.add(name)
        out.append(Worker(name, paths))
    if problems:
        raise InstanceError(problems)
    return out


def load_federation(
    manager: Sequence[str],
    workers: Sequence[Worker],
    costs: ClusterCosts | None = None,
) -> Federation:
    """Read the manager's and every worker's files, then combine them."""
    problems: list[Problem] = []
    raws, own, notes = read_objects(manager)
    problems += own
    worker_raws: dict[str, list[RawObject]] = {}
    for w in workers:
        wraws, wproblems, wnotes = read_objects(w.files)
        problems += [in_cluster(p, w.name) for p in wproblems]
        notes += [in_cluster(p, w.name) for p in wnotes]
        worker_raws[w.name] = wraws
    try:  # decode what was read, so every problem is listed at once
        fed = federation_from_raws(raws, worker_raws, costs, notes)
    except InstanceError as exc:
        raise InstanceError(problems + exc.problems) from None
    if problems:
        raise InstanceError(problems)
    return fed


def split_policy(raw: object, source: str) -> tuple[object, ClusterCosts]:
    """The multi-cluster keys of a ``--policy`` mapping (``clusterCosts``:
    cost per GPU admitted in each cluster; ``preferenceCost``: per workload
    admitted outside its preferred clusters) and the rest for
    :meth:`Policy.from_mapping`."""
    if not isinstance(raw, Mapping):
        return raw, ClusterCosts()
    rest = {k: v for k, v in raw.items() if k not in ("clusterCosts", "preferenceCost")}
    problems: list[Problem] = []
    where = Location(file=source, kind="Policy")
    per_gpu: dict[str, int] = {}
    table = raw.get("clusterCosts") or {}
    if not isinstance(table, Mapping):
        problems.append(Problem(where, "clusterCosts must map cluster names to costs"))
        table = {}
    for name, cost in table.items():
        if not _cost(cost):
            problems.append(
                Problem(
                    where,
                    f"clusterCosts.{describe(name, quote=False)}: expected an integer "
                    f"in [0, {MAX_COST}], got {describe(cost)}",
                )
            )
        else:
            per_gpu[str(name)] = cost
    preference = raw.get("preferenceCost", PREFERENCE_COST)
    if not _cost(preference):
        problems.append(
            Problem(
                where,
                f"preferenceCost: expected an integer in [0, {MAX_COST}], "
                f"got {describe(preference)}",
            )
        )
        preference = PREFERENCE_COST
    if problems:
        raise InstanceError(problems)
    return rest, ClusterCosts(per_gpu=per_gpu, preference=preference)


def _cost(value: object) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and 0 <= value <= MAX_COST
    )
