"""Instance files -> snapshot.

Reads YAML streams (multi-document or ``kind: List``) and JSON, with
libyaml's C loader, decodes every recognised kind through
:mod:`placewise.adapters.convert`, and reports all problems with their location.
Several files merge into one snapshot.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from placewise.adapters import yaml_fast
from placewise.adapters.convert.context import Ctx
from placewise.adapters.convert.core import decode_namespace, decode_node, decode_pod
from placewise.adapters.convert.kueue import (
    decode_cluster_queue,
    decode_cohort,
    decode_configuration,
    decode_flavor,
    decode_local_queue,
    decode_priority_class,
    decode_topology,
)
from placewise.adapters.convert.workload import decode_workload
from placewise.models.cluster import FairSharing
from placewise.models.errors import InstanceError, Location, Problem
from placewise.models.snapshot import Objects, Snapshot, build_snapshot

KUEUE = "kueue.x-k8s.io"
KUEUE_CONFIG = "config.kueue.x-k8s.io"
SUPPORTED: dict[tuple[str, str], tuple[str, ...]] = {
    (KUEUE, "ResourceFlavor"): ("v1beta1", "v1beta2"),
    (KUEUE, "ClusterQueue"): ("v1beta1", "v1beta2"),
    (KUEUE, "LocalQueue"): ("v1beta1", "v1beta2"),
    (KUEUE, "Workload"): ("v1beta1", "v1beta2"),
    (KUEUE, "WorkloadPriorityClass"): ("v1beta1", "v1beta2"),
    (KUEUE, "Topology"): ("v1alpha1", "v1beta1", "v1beta2"),
    (KUEUE, "Cohort"): ("v1alpha1", "v1beta1", "v1beta2"),
    ("", "Node"): ("v1",),
    ("", "Pod"): ("v1",),
    ("", "Namespace"): ("v1",),
    ("scheduling.k8s.io", "PriorityClass"): ("v1",),
    (KUEUE_CONFIG, "Configuration"): ("v1beta1", "v1beta2"),
}
NAMESPACED = {"LocalQueue", "Workload", "Pod"}


@dataclass(frozen=True, slots=True)
class RawObject:
    """One decoded document item, remembering where it came from."""

    obj: Mapping[str, Any]
    file: str
    line: int | None


def _documents(
    path: str, text: str, problems: list[Problem]
) -> Iterator[tuple[Any, int]]:
    stripped = text.lstrip()
    if path.endswith(".json") or stripped.startswith(("{", "[")):
        try:
            yield json.loads(text), 1
            return
        except json.JSONDecodeError as exc:
            if path.endswith(".json"):
                problems.append(
                    Problem(
                        Location(file=path, line=exc.lineno),
                        f"JSON syntax error: {exc.msg}",
                    )
                )
                return
    try:
        yield from yaml_fast.documents(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problems.append(
            Problem(
                Location(file=path, line=mark.line + 1 if mark is not None else None),
                f"YAML syntax error: {exc.problem or exc}",
            )
        )
    except yaml.YAMLError as exc:
        problems.append(Problem(Location(file=path), f"YAML error: {exc}"))


def snapshot_from_text(text: str, source: str = "<text>") -> Snapshot:
    """Load one YAML/JSON document stream held in memory (tests, the API)."""
    problems: list[Problem] = []
    raws: list[RawObject] = []
    for doc, line in _documents(source, text, problems):
        items = (
            doc["items"]
            if isinstance(doc, Mapping) and isinstance(doc.get("items"), list)
            else [doc]
        )
        raws.extend(RawObject(item, source, line) for item in items)
    objects, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    return build_snapshot(objects, warnings)


KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
"""The key of Kueue's manager ConfigMap that holds its Configuration."""


def kueue_fair_sharing(text: str, source: str) -> tuple[FairSharing, list[Problem]]:
    """Kueue's fair-sharing settings from its configuration alone (``serve
    --kueue-config FILE``, Kueue's manager ConfigMap): a Configuration
    document, or a ConfigMap holding one under ``controller_manager_config.yaml``.
    Returns the settings and the warnings; a text without a Configuration, or
    a bad one, raises :class:`InstanceError` (exit 2)."""
    problems: list[Problem] = []
    raws: list[RawObject] = []
    for doc, line in _documents(source, text, problems):
        if not isinstance(doc, Mapping):
            continue
        if doc.get("kind") == "ConfigMap":
            meta = (
                doc.get("metadata") if isinstance(doc.get("metadata"), Mapping) else {}
            )
            assert isinstance(meta, Mapping)
            inner = (doc.get("data") or {}).get(KUEUE_CONFIG_KEY)
            if isinstance(inner, str):
                return kueue_fair_sharing(inner, f"{source} data.{KUEUE_CONFIG_KEY}")
            where = Location(
                file=source,
                kind="ConfigMap",
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or ""),
                field=f"data.{KUEUE_CONFIG_KEY}",
                line=line,
            )
            problems.append(Problem(where, "missing: no Kueue Configuration"))
            continue
        raws.append(RawObject(doc, source, line))
    if not problems and not any(r.obj.get("kind") == "Configuration" for r in raws):
        problems.append(Problem(Location(file=source), "no Kueue Configuration found"))
    objects, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    return objects.fair_sharing, warnings


def read_objects(paths: Iterable[str | Path]) -> tuple[list[RawObject], list[Problem]]:
    """Every Kubernetes object in the files, with ``List`` wrappers unwrapped."""
    problems: list[Problem] = []
    out: list[RawObject] = []
    for p in paths:
        path = str(p)
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text()
        except OSError as exc:
            problems.append(
                Problem(Location(file=path), f"cannot read: {exc.strerror}")
            )
            continue
        for doc, line in _documents(path, text, problems):
            items = [doc]
            if isinstance(doc, list):
                items = doc
            elif (
                isinstance(doc, Mapping)
                and isinstance(doc.get("items"), list)
                and (str(doc.get("kind", "")).endswith("List"))
            ):
                items = doc["items"]
            for item in items:
                if not isinstance(item, Mapping):
                    problems.append(
                        Problem(
                            Location(file=path, line=line),
                            "expected a Kubernetes object (a mapping)",
                        )
                    )
                    continue
                out.append(RawObject(item, path, line))
    return out, problems


def load_snapshot(paths: Iterable[str | Path]) -> Snapshot:
    """Load instance files; raises :class:`InstanceError` listing every problem."""
    raws, problems = read_objects(paths)
    objects, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    return build_snapshot(objects, warnings)


def decode_objects(
    raws: list[RawObject], problems: list[Problem]
) -> tuple[Objects, list[Problem]]:
    """Dispatch by kind; duplicates and unsupported versions are errors."""
    tables: dict[str, dict[str, Any]] = {
        k: {}
        for k in (
            "flavors",
            "cluster_queues",
            "cohorts",
            "local_queues",
            "priority_classes",
            "pod_priority_classes",
            "topologies",
            "namespaces",
            "nodes",
            "pods",
            "workloads",
        )
    }
    unknown: Counter[str] = Counter()
    warnings: list[Problem] = []
    config: FairSharing | None = None
    for raw in raws:
        obj = raw.obj
        api_version = str(obj.get("apiVersion", ""))
        kind = str(obj.get("kind", ""))
        group, _, version = api_version.rpartition("/")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        assert isinstance(meta, Mapping)
        name = str(meta.get("name") or "")
        namespace = str(meta.get("namespace") or "") if kind in NAMESPACED else ""
        if kind in NAMESPACED and not namespace:
            namespace = "default"
        ctx = Ctx(problems, raw.file, kind or "<no kind>", namespace, name, raw.line)
        if (group, kind) not in SUPPORTED:
            if not kind or not api_version:
                ctx.error("kind" if not kind else "apiVersion", "missing")
            else:
                unknown[f"{kind} ({api_version})"] += 1
            continue
        if version not in SUPPORTED[(group, kind)]:
            ctx.error(
                "apiVersion",
                f"unsupported apiVersion {api_version} for {kind} "
                f"(supported: {', '.join(SUPPORTED[(group, kind)])})",
            )
            continue
        if kind == "Configuration":
            config = _configuration(ctx, obj, version, config, warnings)
            continue
        if not name:
            ctx.error("metadata.name", "missing")
            continue
        table, value = _decode(ctx, obj, kind, version)
        if value is None:
            continue
        key = f"{namespace}/{name}" if namespace else name
        if key in tables[table]:
            ctx.error("metadata.name", f"duplicate {kind} {key}")
            continue
        tables[table][key] = value
    if unknown:
        kinds = ", ".join(
            f"{k} x{n}" if n > 1 else k for k, n in sorted(unknown.items())
        )
        warnings.append(
            Problem(Location(), f"ignored objects of unrecognised kinds: {kinds}")
        )
    return Objects(**tables, fair_sharing=config or FairSharing()), warnings


def _configuration(
    ctx: Ctx,
    obj: Mapping[str, Any],
    version: str,
    seen: FairSharing | None,
    warnings: list[Problem],
) -> FairSharing | None:
    """Kueue's Configuration: at most one per instance (it has no name to
    tell two apart, and Kueue runs with exactly one)."""
    if seen is not None:
        ctx.error("kind", "a second Kueue Configuration; an instance has at most one")
        return seen
    fair, ignored = decode_configuration(ctx, obj, version)
    if ignored:
        warnings.append(
            Problem(
                Location(file=ctx.file, kind=ctx.kind, name=ctx.name, line=ctx.line),
                "ignored fields of Kueue's Configuration (only fairSharing "
                f"matters to placewise): {', '.join(ignored)}",
            )
        )
    return fair


def _decode(
    ctx: Ctx, obj: Mapping[str, Any], kind: str, version: str
) -> tuple[str, Any]:
    if kind == "ResourceFlavor":
        return "flavors", decode_flavor(ctx, obj)
    if kind == "ClusterQueue":
        return "cluster_queues", decode_cluster_queue(ctx, obj, version)
    if kind == "Cohort":
        return "cohorts", decode_cohort(ctx, obj)
    if kind == "LocalQueue":
        return "local_queues", decode_local_queue(ctx, obj)
    if kind == "WorkloadPriorityClass":
        return "priority_classes", decode_priority_class(ctx, obj, kueue=True)
    if kind == "PriorityClass":
        return "pod_priority_classes", decode_priority_class(ctx, obj, kueue=False)
    if kind == "Topology":
        return "topologies", decode_topology(ctx, obj)
    if kind == "Namespace":
        return "namespaces", decode_namespace(ctx, obj)
    if kind == "Node":
        return "nodes", decode_node(ctx, obj)
    if kind == "Pod":
        return "pods", decode_pod(ctx, obj)
    return "workloads", decode_workload(ctx, obj, version)
