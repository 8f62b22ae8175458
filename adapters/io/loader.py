"""Instance files -> snapshot, or -> the objects an emulated cluster serves.

The one instance reader: YAML streams (multi-document or ``kind: List``)
and JSON through :mod:`placewise.adapters.io.documents`, every recognised
kind decoded through :mod:`placewise.adapters.io.convert`, all problems
reported with their location.  Several files merge into one snapshot.
``placewise emulate`` and ``serve``'s demo seed the emulator through
:func:`load_objects`, so an object ``solve`` rejects is never served.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from placewise.adapters.io.convert.context import Ctx
from placewise.adapters.io.convert.core import decode_namespace, decode_node, decode_pod
from placewise.adapters.io.convert.kueue import (
    decode_cluster_queue,
    decode_cohort,
    decode_configuration,
    decode_flavor,
    decode_local_queue,
    decode_priority_class,
    decode_topology,
)
from placewise.adapters.io.convert.workload import decode_workload
from placewise.adapters.io.documents import documents, objects, read_text
from placewise.models.cluster import KUEUE_GROUP, FairSharing, ResourceGroup
from placewise.models.errors import InstanceError, Location, Problem, describe
from placewise.models.snapshot import Objects, Snapshot, build_snapshot

KUEUE_CONFIG = "config.kueue.x-k8s.io"
SUPPORTED: dict[tuple[str, str], tuple[str, ...]] = {
    (KUEUE_GROUP, "ResourceFlavor"): ("v1beta1", "v1beta2"),
    (KUEUE_GROUP, "ClusterQueue"): ("v1beta1", "v1beta2"),
    (KUEUE_GROUP, "LocalQueue"): ("v1beta1", "v1beta2"),
    (KUEUE_GROUP, "Workload"): ("v1beta1", "v1beta2"),
    (KUEUE_GROUP, "WorkloadPriorityClass"): ("v1beta1", "v1beta2"),
    (KUEUE_GROUP, "Topology"): ("v1alpha1", "v1beta1", "v1beta2"),
    (KUEUE_GROUP, "Cohort"): ("v1alpha1", "v1beta1", "v1beta2"),
    ("", "Node"): ("v1",),
    ("", "Pod"): ("v1",),
    ("", "Namespace"): ("v1",),
    ("scheduling.k8s.io", "PriorityClass"): ("v1",),
    (KUEUE_CONFIG, "Configuration"): ("v1beta1", "v1beta2"),
}
NAMESPACED = {"LocalQueue", "Workload", "Pod"}
JSON = dict[str, Any]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RawObject:
    """One decoded document item, remembering where it came from."""

    obj: Mapping[str, Any]
    file: str
    line: int | None


def _raws(
    path: str, text: str, problems: list[Problem], typed: bool = False
) -> Iterator[RawObject]:
    for doc, line, item_lines in documents(path, text, problems, typed):
        for item, at in objects(path, doc, line, problems, item_lines):
            yield RawObject(item, path, at)


def snapshot_from_text(text: str, source: str = "<text>") -> Snapshot:
    """Load one YAML/JSON document stream held in memory (tests, the API)."""
    problems: list[Problem] = []
    raws = list(_raws(source, text, problems))
    objs, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    return build_snapshot(objs, warnings)


KUEUE_CONFIG_MAP = ("kueue-system", "kueue-manager-config")
"""Where Kueue's manager reads its Configuration (Kueue's default install)."""
KUEUE_CONFIG_KEY = "controller_manager_config.yaml"
"""The key of Kueue's manager ConfigMap that holds its Configuration."""


def kueue_fair_sharing(
    text: str, source: str, in_config_map: bool = False
) -> tuple[FairSharing, list[Problem]]:
    """Kueue's fair-sharing settings from its configuration alone (``serve
    --kueue-config FILE``, Kueue's manager ConfigMap): a Configuration
    document, or a ConfigMap holding one under ``controller_manager_config.yaml``.
    Returns the settings and the warnings; a text without a Configuration, or
    a bad one, raises :class:`InstanceError` (exit 2).  The ConfigMap's text
    must hold the Configuration itself: a ConfigMap nested in it is refused
    (a crafted file could otherwise nest them past the recursion limit)."""
    problems: list[Problem] = []
    raws: list[RawObject] = []
    for raw in _raws(source, text, problems):
        item, line = raw.obj, raw.line
        if item.get("kind") != "ConfigMap":
            raws.append(raw)
            continue
        meta = item.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        where = Location(
            file=source,
            kind="ConfigMap",
            namespace=_shown(meta.get("namespace")),
            name=_shown(meta.get("name")),
            field=f"data.{KUEUE_CONFIG_KEY}",
            line=line,
        )
        if in_config_map:
            problems.append(Problem(where, "a ConfigMap inside a ConfigMap"))
            continue
        data = item.get("data")
        inner = data.get(KUEUE_CONFIG_KEY) if isinstance(data, Mapping) else None
        if isinstance(inner, str):
            return kueue_fair_sharing(
                inner, f"{source} data.{KUEUE_CONFIG_KEY}", in_config_map=True
            )
        problems.append(Problem(where, "missing: no Kueue Configuration"))
    if not problems and not any(r.obj.get("kind") == "Configuration" for r in raws):
        problems.append(Problem(Location(file=source), "no Kueue Configuration found"))
    objs, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    return objs.fair_sharing, warnings


def _shown(value: Any) -> str:
    """A name field of an object no decoder vouched for, safe to print."""
    return describe(value, quote=False) if value else ""


def read_objects(
    paths: Iterable[str | Path], typed: bool = False
) -> tuple[list[RawObject], list[Problem], list[Problem]]:
    """Every Kubernetes object in the files, with ``List`` wrappers unwrapped.

    Returns (objects, problems, warnings).  A file without a single
    document is almost certainly a failed dump or a wrong path: a warning
    naming it, or an error when no file holds anything.  ``typed``: YAML
    numbers are numbers (objects to serve as JSON), not strings.
    """
    out, problems, empty, read = _read_files(paths, typed)
    notes = [
        Problem(Location(file=path), "holds no Kubernetes objects (an empty stream)")
        for path in empty
    ]
    if notes and len(empty) == read:
        return out, problems + notes, []
    return out, problems, notes


def _read_files(
    paths: Iterable[str | Path], typed: bool
) -> tuple[list[RawObject], list[Problem], list[str], int]:
    """(objects, problems, files without a document, files read)."""
    problems: list[Problem] = []
    out: list[RawObject] = []
    empty: list[str] = []
    read = 0
    for p in paths:
        path = str(p)
        text = read_text(path, problems)
        if text is None:
            continue
        read += 1
        docs, before = 0, len(problems)
        for doc, line, item_lines in documents(path, text, problems, typed):
            docs += 1
            out.extend(
                RawObject(item, path, at)
                for item, at in objects(path, doc, line, problems, item_lines)
            )
        if docs == 0 and len(problems) == before:
            empty.append(path)
    return out, problems, empty, read


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """The cyclic garbage collector paused (and restored as it was).

    Why: a 50 MB dump parses into millions of small dicts and lists, and
    every few thousand allocations the collector walks all of them, again
    and again: a third of a 10,000-node load. Parsed documents and decoded
    records are trees (reference counting frees them), so nothing a load
    creates waits for the collector.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_snapshot(paths: Iterable[str | Path], now: datetime | None = None) -> Snapshot:
    """Load instance files; raises :class:`InstanceError` listing every problem.
    ``now``: the present (``solve --now``); default the newest time in them."""
    with no_cycle_collection():
        # (In a helper, so the parsed documents are freed before the
        # collector resumes and its first pass walks only the snapshot.)
        return _load(paths, now)


def _load(paths: Iterable[str | Path], now: datetime | None) -> Snapshot:
    raws, problems, notes = read_objects(paths)
    objs, warnings = decode_objects(raws, problems)
    if problems:
        raise InstanceError(problems)
    if now is not None:
        objs = replace(objs, now=now)
    return build_snapshot(objs, notes + warnings)


def load_objects(paths: Iterable[str | Path]) -> list[JSON]:
    """Every object of the files as JSON data, to serve as a cluster would.

    Numbers stay numbers.  Each object needs an apiVersion, a kind and a
    name (any kind: CRDs, Deployments...), verbatim repeats across files
    merge (``Namespace default`` in each of several dumps), and the kinds
    placewise reads must pass the decoders ``solve`` uses: an emulated
    cluster never serves a Workload with ``count: -3``.
    """
    raws, problems, _, _ = _read_files(paths, typed=True)  # empty clusters are fine
    return _servable(raws, problems)


def objects_from_text(text: str, source: str = "<string>") -> list[JSON]:
    """:func:`load_objects` for one YAML/JSON stream held in memory."""
    problems: list[Problem] = []
    return _servable(list(_raws(source, text, problems, typed=True)), problems)


def _servable(raws: list[RawObject], problems: list[Problem]) -> list[JSON]:
    named: list[RawObject] = []
    for raw in merge_repeats(raws, lambda r: r.obj):
        obj, where = raw.obj, Location(file=raw.file, line=raw.line)
        kind = obj.get("kind")
        meta = obj.get("metadata")
        if kind == "Configuration":
            named.append(raw)  # Kueue's: no name, and the decoder checks it
        elif not obj.get("apiVersion") or not kind:
            problems.append(Problem(where, "object without apiVersion/kind"))
        elif not isinstance(meta, Mapping) or not meta.get("name"):
            what = describe(kind, quote=False)
            problems.append(Problem(where, f"{what} without metadata.name"))
        else:
            named.append(raw)
    decode_objects(named, problems)  # for its problems; the warnings are moot
    if problems:
        raise InstanceError(problems)
    return [dict(raw.obj) for raw in named]


def merge_repeats(items: Iterable[T], obj: Callable[[T], Mapping[str, Any]]) -> list[T]:
    """``items`` without the verbatim repeats of an earlier object (same
    apiVersion, kind, namespace and name, equal content); differing objects
    of the same name are kept, for whoever reads them to refuse."""
    seen: dict[tuple[str, str, str, str], Mapping[str, Any]] = {}
    out = []
    for item in items:
        o = obj(item)
        meta = o.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        key = (
            str(o.get("apiVersion")),
            str(o.get("kind")),
            str(meta.get("namespace") or ""),
            str(meta.get("name")),
        )
        if seen.get(key) == o:
            continue
        seen.setdefault(key, o)
        out.append(item)
    return out


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
        ident = _identity(raw, problems)
        if ident is None:
            continue
        ctx, api_version, kind = ident
        group, _, version = api_version.rpartition("/")
        namespace, name = ctx.namespace, ctx.name
        if (group, kind) not in SUPPORTED:
            if not kind or not api_version:
                ctx.error("kind" if not kind else "apiVersion", "missing")
            else:
                unknown[describe(f"{kind} ({api_version})", quote=False)] += 1
            continue
        if version not in SUPPORTED[(group, kind)]:
            ctx.error(
                "apiVersion",
                f"unsupported apiVersion {describe(api_version, quote=False)} "
                f"for {kind} "
                f"(supported: {', '.join(SUPPORTED[(group, kind)])})",
            )
            continue
        if kind == "Configuration":
            config = _configuration(ctx, raw.obj, version, config, warnings)
            continue
        if not name:
            ctx.error("metadata.name", "missing")
            continue
        table, value = _decode(ctx, raw.obj, kind, version)
        if value is None:
            continue
        key = f"{namespace}/{name}" if namespace else name
        if key in tables[table]:
            ctx.error("metadata.name", f"duplicate {kind} {key}")
            continue
        tables[table][key] = value
        if kind == "Workload":
            warnings.extend(_unmodelled_status(ctx, raw.obj))
        if kind in ("ClusterQueue", "Cohort"):
            warnings.extend(_repeated_resources(ctx, value.resource_groups))
    if unknown:
        kinds = ", ".join(
            f"{k} x{n}" if n > 1 else k for k, n in sorted(unknown.items())
        )
        warnings.append(
            Problem(Location(), f"ignored objects of unrecognised kinds: {kinds}")
        )
    fair = config or FairSharing()
    return Objects(**tables, fair_sharing=fair), warnings  # type: ignore[arg-type]


def _unmodelled_status(ctx: Ctx, obj: Mapping[str, Any]) -> list[Problem]:
    """Workload status Kueue acts on by default and placewise does not:
    ``reclaimablePods`` (gate ReclaimablePods) shrinks a running workload's
    quota usage in Kueue; here it counts in full, so the plan is cautious."""
    status = obj.get("status")
    if not isinstance(status, Mapping) or not status.get("reclaimablePods"):
        return []
    return [
        Problem(
            Location(
                file=ctx.file,
                kind=ctx.kind,
                namespace=ctx.namespace,
                name=ctx.name,
                field="status.reclaimablePods",
                line=ctx.line,
            ),
            "reclaimable pods are not modelled (Kueue's ReclaimablePods): the "
            "workload's quota usage counts in full",
        )
    ]


def _repeated_resources(ctx: Ctx, groups: Iterable[ResourceGroup]) -> list[Problem]:
    """A resource covered by two resource groups: Kueue's webhook rejects
    the object, so no real cluster holds it; placewise reads it as Kueue's
    scheduler would (the first group serves the resource, see
    ``ClusterQueue.group_of``) and says so, naming the later listing."""
    out: list[Problem] = []
    first: dict[str, int] = {}
    for g, group in enumerate(groups):
        for r in group.covered_resources:
            if r not in first:
                first[r] = g
                continue
            out.append(
                Problem(
                    Location(
                        file=ctx.file,
                        kind=ctx.kind,
                        namespace=ctx.namespace,
                        name=ctx.name,
                        field=f"spec.resourceGroups[{g}].coveredResources",
                        line=ctx.line,
                    ),
                    f"resource {r} is already covered by resourceGroups"
                    f"[{first[r]}] (Kueue's webhook rejects this); the first "
                    "group serves it, as in Kueue's scheduler",
                )
            )
    return out


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
                "ignored fields of Kueue's Configuration (only fairSharing, "
                "admissionFairSharing and the AdmissionFairSharing gate matter "
                f"to placewise): {', '.join(ignored)}",
            )
        )
    return fair


MAX_NAME = 253
"""Longest object name or namespace Kubernetes accepts (a DNS subdomain)."""


def _identity(raw: RawObject, problems: list[Problem]) -> tuple[Ctx, str, str] | None:
    """(context, apiVersion, kind) of an object whose identity fields are
    strings; None after recording why not (nothing else of it is read)."""
    obj = raw.obj
    meta = obj.get("metadata")
    kind, api_version = obj.get("kind"), obj.get("apiVersion")
    if type(meta) is dict and type(kind) is str and type(api_version) is str:
        # The common case, decided without recording anything.
        name, ns = meta.get("name"), meta.get("namespace")
        if (
            kind
            and type(name) is str
            and len(name) <= MAX_NAME
            and (
                kind not in NAMESPACED
                or ns is None
                or (type(ns) is str and len(ns) <= MAX_NAME)
            )
        ):
            namespace = (ns or "default") if kind in NAMESPACED else ""
            ctx = Ctx(problems, raw.file, kind, namespace, name, raw.line)
            return ctx, api_version, kind
    meta = meta if isinstance(meta, Mapping) else {}
    ctx = Ctx(problems, raw.file, "<no kind>", "", "", raw.line)
    before = len(problems)
    kind = ctx.text(obj.get("kind"), "kind") or ""
    ctx.kind = kind or ctx.kind
    api_version = ctx.text(obj.get("apiVersion"), "apiVersion") or ""
    ctx.name = name = ctx.text(meta.get("name"), "metadata.name") or ""
    if kind in NAMESPACED:
        ns = ctx.text(meta.get("namespace"), "metadata.namespace")
        ctx.namespace = ns or "default"
    for field, value in (
        ("metadata.name", name),
        ("metadata.namespace", ctx.namespace),
    ):
        if len(value) > MAX_NAME:
            ctx.error(field, f"longer than {MAX_NAME} characters")
    if before != len(problems):
        return None
    return ctx, api_version, kind


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
