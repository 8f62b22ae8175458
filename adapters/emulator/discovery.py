"""API discovery documents built from the resource table.

``/api``, ``/apis``, ``/apis/{group}`` and ``/api/v1`` / ``/apis/{g}/{v}`` in
the legacy (non-aggregated) format, which the Python client's DynamicClient
and kubectl's fallback path both read.
"""

from __future__ import annotations

from typing import Any

from placewise.adapters.emulator.resources import VERBS, ResourceTable, ResourceType

JSON = dict[str, Any]

# The built-ins upstream puts in the "all" category (``kubectl get all``).
_CATEGORY_ALL = {
    ("", "pods"),
    ("", "services"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("apps", "replicasets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
}


def _group_versions(table: ResourceTable) -> dict[str, list[str]]:
    """Group -> served versions, preferred (first registered) first."""
    out: dict[str, list[str]] = {}
    for row in table.snapshot():
        versions = out.setdefault(row.group, [])
        if row.version not in versions:
            versions.append(row.version)
    return out


def api_versions(server_address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}
        ],
    }


def _group_doc(name: str, versions: list[str]) -> JSON:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def api_group_list(table: ResourceTable) -> JSON:
    groups = [
        _group_doc(name, versions)
        for name, versions in _group_versions(table).items()
        if name
    ]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(table: ResourceTable, name: str) -> JSON | None:
    versions = _group_versions(table).get(name)
    if not name or not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(name, versions)}


def resource_list(table: ResourceTable, group: str, version: str) -> JSON | None:
    rows = [r for r in table.snapshot() if (r.group, r.version) == (group, version)]
    if not rows:
        return None
    resources: list[JSON] = []
    for row in rows:
        entry: JSON = {
            "name": row.plural,
            "singularName": row.kind.lower(),
            "namespaced": row.namespaced,
            "kind": row.kind,
            "verbs": VERBS,
        }
        if row.short_names:
            entry["shortNames"] = list(row.short_names)
        if row.builtin and (row.group, row.plural) in _CATEGORY_ALL:
            entry["categories"] = ["all"]
        resources.append(entry)
        resources += [_subresource_entry(row, sub) for sub in row.subresources]
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


def _subresource_entry(row: ResourceType, sub: str) -> JSON:
    base: JSON = {"name": f"{row.plural}/{sub}", "singularName": ""}
    if sub == "binding":
        return {**base, "namespaced": True, "kind": "Binding", "verbs": ["create"]}
    if sub == "eviction":
        return {
            **base,
            "namespaced": True,
            "group": "policy",
            "version": "v1",
            "kind": "Eviction",
            "verbs": ["create"],
        }
    return {
        **base,
        "namespaced": row.namespaced,
        "kind": row.kind,
        "verbs": ["get", "patch", "update"],
    }
