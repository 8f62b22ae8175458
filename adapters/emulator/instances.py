"""Read instance files: YAML streams of objects, as ``kubectl get -o yaml`` prints.

A small reader of our own (the project loader may replace it): multi-document
streams and ``kind: List`` / ``kind: <Kind>List`` wrappers, flattened into one
list of plain dicts in file order.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

JSON = dict[str, Any]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class InstanceError(ValueError):
    """A file that is not a stream of Kubernetes objects (exit code 2 in the CLI)."""


def _flatten(doc: Any, where: str) -> list[JSON]:
    if doc is None:
        return []
    if not isinstance(doc, dict):
        raise InstanceError(
            f"{where}: expected a Kubernetes object, got {type(doc).__name__}"
        )
    kind = str(doc.get("kind") or "")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        out: list[JSON] = []
        for i, item in enumerate(doc["items"]):
            out += _flatten(item, f"{where} items[{i}]")
        return out
    if not doc.get("apiVersion") or not kind:
        raise InstanceError(f"{where}: object without apiVersion/kind")
    if kind == "Configuration" and str(doc["apiVersion"]).startswith("config.kueue."):
        return [kueue_config_map(doc)]
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        raise InstanceError(f"{where}: {kind} without metadata.name")
    return [doc]


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
    """Parse one YAML (or JSON) stream; syntax errors name the line."""
    try:
        docs = list(yaml.load_all(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise InstanceError(
            f"{source}{line}: {getattr(exc, 'problem', None) or exc}"
        ) from exc
    out: list[JSON] = []
    for i, doc in enumerate(docs):
        out += _flatten(doc, f"{source} document {i + 1}")
    return out


def load_instance_files(paths: Iterable[str | Path]) -> list[JSON]:
    """All objects of several instance files, merged into one snapshot."""
    out: list[JSON] = []
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise InstanceError(f"{p}: {exc.strerror or exc}") from exc
        out += read_objects(text, str(p))
    return out
