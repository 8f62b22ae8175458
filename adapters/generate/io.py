"""Writing generated objects as kubectl prints them.

Keys are sorted, as ``kubectl get -o yaml|json`` prints unstructured objects,
which also makes the bytes a pure function of the objects.

YAML is exactly what libyaml's emitter (PyYAML's ``CSafeDumper``, block
style, sorted keys, no anchors) produces.  Even with libyaml, PyYAML spends
most of a large dump in Python-side representer and resolver callbacks
(about 6-9 s of CPU for 10,000 nodes and 20,000 pods), so documents made of
plain dicts, lists, ints, bools and simple strings go through a small
block-style writer that emits the same bytes several times faster; anything
else — and any string whose quoting is not trivially plain — is rendered by
``CSafeDumper`` itself.  A test holds the two paths byte-identical.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any, Literal

import yaml

Format = Literal["yaml", "json"]

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_BOOL = "tag:yaml.org,2002:bool"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_RESOLVER = yaml.resolver.Resolver()
_DUMP_OPTIONS: dict[str, Any] = {
    "sort_keys": True,
    "default_flow_style": False,
    "allow_unicode": True,
    "width": 1 << 16,
}
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*\Z")
"""Strings libyaml always writes unquoted unless they read as another type."""


@functools.lru_cache(maxsize=1 << 16)
def _implicit_tag(value: str) -> str:
    """The tag PyYAML would read ``value`` as when unquoted, memoised."""
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    return str(tag)


class _Dumper(yaml.CSafeDumper):
    """libyaml's emitter with a lean representer for plain dict/list/str/int data.

    Byte-identical to ``CSafeDumper`` with ``sort_keys=True`` except that no
    anchors are emitted (kubectl never prints ``&id001``).
    """

    def resolve(self, kind: type, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode:
            # (False, True) asks for the default tag, which never depends on value
            return _implicit_tag(value) if implicit[0] else _STR
        return str(_RESOLVER.resolve(kind, value, implicit))  # type: ignore[no-untyped-call]

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data)
        if kind is dict:
            rep = self.represent_data
            return yaml.MappingNode(
                _MAP,
                [(yaml.ScalarNode(_STR, k), rep(v)) for k, v in sorted(data.items())],
                flow_style=False,
            )
        if kind is list:
            rep = self.represent_data
            return yaml.SequenceNode(_SEQ, [rep(v) for v in data], flow_style=False)
        if kind is bool:
            return yaml.ScalarNode(_BOOL, "true" if data else "false")
        if kind is int:
            return yaml.ScalarNode(_INT, str(data))
        node: yaml.Node = super().represent_data(data)
        return node


def libyaml_document(obj: Mapping[str, Any]) -> str:
    """One document as ``CSafeDumper`` writes it (what the fast path matches)."""
    return str(yaml.dump(obj, Dumper=_Dumper, **_DUMP_OPTIONS))


class _NotPlain(Exception):
    """A value the fast writer leaves to libyaml."""


@functools.lru_cache(maxsize=1 << 18)
def _string(value: str) -> str:
    """A string scalar exactly as libyaml writes it in block context."""
    if _PLAIN.match(value) and _implicit_tag(value) == _STR:
        return value
    text = libyaml_document({"k": value})[3:-1]  # "k: <scalar>\n"
    if "\n" in text:
        raise _NotPlain(value)
    return text


def _scalar(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return _string(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is dict and not value:
        return "{}"
    if kind is list and not value:
        return "[]"
    raise _NotPlain(value)


def _mapping(data: dict[Any, Any], indent: int, out: list[str], dash: bool) -> None:
    """Block mapping with keys at ``indent``; ``dash``: it is a sequence item."""
    pad = " " * indent
    first = " " * (indent - 2) + "- " if dash else pad
    for key in sorted(data):
        if type(key) is not str:
            raise _NotPlain(key)
        value = data[key]
        head = f"{first}{_string(key)}:"
        first = pad
        kind = type(value)
        if kind is dict and value:
            out.append(head + "\n")
            _mapping(value, indent + 2, out, dash=False)
        elif kind is list and value:
            out.append(head + "\n")
            _sequence(value, indent, out)
        else:
            out.append(f"{head} {_scalar(value)}\n")


def _sequence(data: list[Any], indent: int, out: list[str]) -> None:
    """Block sequence with dashes at ``indent`` (indentless under a key)."""
    pad = " " * indent
    for item in data:
        kind = type(item)
        if kind is dict and item:
            _mapping(item, indent + 2, out, dash=True)
        elif kind is list and item:
            raise _NotPlain(item)
        else:
            out.append(f"{pad}- {_scalar(item)}\n")


def yaml_document(obj: Mapping[str, Any]) -> str:
    """One object as a YAML document, via the fast path when it applies."""
    out: list[str] = []
    try:
        if type(obj) is not dict or not obj:
            raise _NotPlain(obj)
        _mapping(obj, 0, out, dash=False)
    except _NotPlain:
        return libyaml_document(obj)
    return "".join(out)


def write(
    objects: Iterable[Mapping[str, Any]],
    path_or_stream: str | os.PathLike[str] | IO[str] | None = None,
    fmt: Format = "yaml",
) -> None:
    """Write objects to a path or text stream (stdout when None).

    ``yaml`` is a multi-document stream (``---`` between objects); ``json``
    is one ``kind: List`` object, the shape of ``kubectl get -o json``.
    """
    if fmt not in ("yaml", "json"):
        raise ValueError(f"unknown format {fmt!r}; use yaml or json")
    if path_or_stream is None:
        _write(objects, sys.stdout, fmt)
    elif isinstance(path_or_stream, str | os.PathLike):
        with Path(path_or_stream).open("w", encoding="utf-8") as stream:
            _write(objects, stream, fmt)
    else:
        _write(objects, path_or_stream, fmt)


def dumps(objects: Iterable[Mapping[str, Any]], fmt: Format = "yaml") -> str:
    """The text :func:`write` would produce."""
    if fmt not in ("yaml", "json"):
        raise ValueError(f"unknown format {fmt!r}; use yaml or json")
    if fmt == "json":
        return _json_text(objects)
    return "---\n".join(yaml_document(o) for o in objects)


def _write(objects: Iterable[Mapping[str, Any]], stream: IO[str], fmt: Format) -> None:
    if fmt == "json":
        stream.write(_json_text(objects))
        return
    for i, obj in enumerate(objects):
        if i:
            stream.write("---\n")
        stream.write(yaml_document(obj))


def _json_text(objects: Iterable[Mapping[str, Any]]) -> str:
    """kubectl's List envelope, 4-space indented as kubectl indents it."""
    document = {
        "apiVersion": "v1",
        "items": list(objects),
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    }
    return json.dumps(document, indent=4, sort_keys=True, ensure_ascii=False) + "\n"
