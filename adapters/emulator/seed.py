"""Seeding the store from instance files: the cluster state the emulator starts in.

Loaded objects describe an existing cluster, so they keep their uid,
creationTimestamp and status and skip API validation (instance files were
checked by the loader's decoders, :func:`placewise.adapters.io.loader.load_objects`);
the namespaces they use and the two system PriorityClasses a real cluster has
are added, and Kueue's Configuration is served as its manager ConfigMap. They produce
no watch events (history starts after them).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import yaml

from placewise.adapters.emulator import controllers, strategies, views
from placewise.adapters.io.loader import (
    KUEUE_CONFIG_KEY,
    KUEUE_CONFIG_MAP,
    merge_repeats,
)

if TYPE_CHECKING:
    from placewise.adapters.emulator.registry import Registry

JSON = dict[str, Any]
_LOAD_FIRST = {"Namespace": 0, "PriorityClass": 1, "Node": 2}


def seed(reg: Registry, objects: list[JSON]) -> None:
    """Seed ``objects``; ValueError for conflicting duplicates or nameless objects."""
    objects = [kueue_config_map(o) if _is_kueue_config(o) else o for o in objects]
    with reg.store.lock:
        namespaces = set(strategies.DEFAULT_NAMESPACES)
        for obj in objects:
            ns = (obj.get("metadata") or {}).get("namespace")
            if ns:
                namespaces.add(str(ns))
        seeded = merge_repeats(objects, lambda o: o)
        declared = {
            str((o.get("metadata") or {}).get("name"))
            for o in objects
            if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1"
        }
        seeded += [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            for ns in sorted(namespaces - declared)
        ]
        seeded += [copy.deepcopy(pc) for pc in strategies.SYSTEM_PRIORITY_CLASSES]
        for obj in sorted(seeded, key=_load_order):
            _seed_one(reg, copy.deepcopy(obj))
        for ns in namespaces:
            controllers.sync_pdbs(reg.store, ns)
        reg.store.compact()


def _seed_one(reg: Registry, obj: JSON) -> None:
    meta = obj.get("metadata") or {}
    ns = str(meta.get("namespace") or "")
    rt = reg.table.ensure(
        str(obj.get("apiVersion", "")),
        str(obj.get("kind", "")),
        namespaced=bool(ns),
    )
    if not rt.namespaced:
        meta.pop("namespace", None)
    name = str(meta.get("name") or "")
    if reg.store.get(rt.storage, ns if rt.namespaced else "", name) is not None:
        if rt.storage == ("scheduling.k8s.io", "priorityclasses"):
            return
        raise ValueError(f"duplicate object {rt.kind} {ns + '/' if ns else ''}{name}")
    if not name:
        raise ValueError(f"{rt.kind} without metadata.name")
    obj = views.to_stored(
        rt, strategies.prepare_create(rt, obj, reg.store, from_api=False)
    )
    stored = reg.store.seed(rt.storage, obj)
    if reg.kubelet and rt.storage == controllers.PODS:
        controllers.kubelet_start(reg.store, stored)


def _is_kueue_config(obj: Mapping[str, Any]) -> bool:
    """Kueue's Configuration has no name and is no API object of its own."""
    api_version = obj.get("apiVersion")
    return (
        obj.get("kind") == "Configuration"
        and isinstance(api_version, str)
        and api_version.startswith("config.kueue.")
    )


def kueue_config_map(config: JSON) -> JSON:
    """Kueue's Configuration in an instance is served where a cluster keeps it:
    the manager ConfigMap ``kueue-system/kueue-manager-config``, under
    ``controller_manager_config.yaml`` (what ``placewise serve`` reads)."""
    body = {k: v for k, v in config.items() if k != "metadata"}
    namespace, name = KUEUE_CONFIG_MAP
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {KUEUE_CONFIG_KEY: yaml.safe_dump(body, sort_keys=False)},
    }


def _load_order(obj: JSON) -> int:
    return _LOAD_FIRST.get(str(obj.get("kind")), 3)
