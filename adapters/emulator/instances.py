"""Read instance files: YAML streams of objects, as ``kubectl get -o yaml`` prints.

Parsing is the project's one reader of untrusted files
(:mod:`placewise.adapters.documents`: encodings, depth and alias limits,
``List``/``<Kind>List`` unwrapping with the list's kind inferred for its
items), typed so that numbers stay numbers when objects are served as JSON.
This module adds only what the emulator needs: every object has an
apiVersion, a kind and a name, in file order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from placewise.adapters.documents import documents, objects, read_text
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
            if _check(obj, source, line, problems):
                out.append(dict(obj))
    return out


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
