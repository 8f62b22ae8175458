"""Read instance files: YAML streams of objects, as ``kubectl get -o yaml`` prints.

Parsing is the project's one reader of untrusted files
(:mod:`placewise.adapters.io.documents`: encodings, depth and alias limits,
``List``/``<Kind>List`` unwrapping with the list's kind inferred for its
items), typed so that numbers stay numbers when objects are served as JSON.
This module adds only what the emulator needs: every object has an
apiVersion, a kind and a name, in file order; a Kueue Configuration becomes
Kueue's manager ConfigMap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from placewise.adapters.io.documents import documents, objects, read_text
from placewise.models.errors import InstanceError, Location, Problem

JSON = dict[str, Any]

__all__ = ["InstanceError", "load_instance_files", "read_objects"]


def _check(
    obj: Mapping[str, Any], path: str, line: int, problems: list[Problem]
) -> bool:
    where = Location(file=path, line=line)
    kind = obj.get("kind")
    if not obj.get("apiVersion") or not kind:
        problems.append(Problem(where, "object without apiVersion/kind"))
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        what = kind if isinstance(kind, str) else "object"
        problems.append(Problem(where, f"{what[:80]} without metadata.name"))
        return False
    return True


def _read(text: str, source: str, problems: list[Problem]) -> list[JSON]:
    out: list[JSON] = []
    for doc, line in documents(source, text, problems, typed=True):
        for obj in objects(source, doc, line, problems):
            if _is_kueue_config(obj):
                out.append(kueue_config_map(dict(obj)))
            elif _check(obj, source, line, problems):
                out.append(dict(obj))
    return out


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
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "kueue-manager-config", "namespace": "kueue-system"},
        "data": {
            "controller_manager_config.yaml": yaml.safe_dump(body, sort_keys=False)
        },
    }


def read_objects(text: str, source: str = "<string>") -> list[JSON]:
    """Parse one YAML (or JSON) stream; problems name the file and line."""
    problems: list[Problem] = []
    out = _read(text, source, problems)
    if problems:
        raise InstanceError(problems)
    return out


def load_instance_files(paths: Iterable[str | Path]) -> list[JSON]:
    """All objects of several instance files, merged into one snapshot."""
    problems: list[Problem] = []
    out: list[JSON] = []
    for path in paths:
        text = read_text(str(path), problems)
        if text is not None:
            out += _read(text, str(path), problems)
    if problems:
        raise InstanceError(problems)
    return out
