"""Untrusted files to plain documents: the one reader of every input file.

Instances, plans, generator configs, objective policies and the emulator's
seed files all come from users, scripts and fuzzers.  Whatever the bytes,
reading them ends in plain data or in located problems, never in a
traceback, a hang or a blow-up: text that is not UTF-8 (or UTF-16 with a
byte-order mark, what PowerShell's ``>`` writes), JSON or YAML syntax,
nesting deeper than :data:`MAX_DEPTH`, runaway aliases (both bounded in
:mod:`placewise.adapters.io.yaml_fast`), numbers Python refuses to convert.
``kind: List`` and ``<Kind>List`` wrappers are unwrapped here too, with the
items of a ``<Kind>List`` taking the list's kind and apiVersion when they
carry none (``kubectl get --raw`` output, formats.md §1).
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from placewise.adapters.io import yaml_fast
from placewise.adapters.io.yaml_fast import MAX_DEPTH, Document
from placewise.models.errors import InstanceError, Location, Problem, describe

__all__ = [
    "MAX_DEPTH",
    "Document",
    "documents",
    "load_one",
    "objects",
    "parse_json",
    "read_text",
]


def _decode(data: bytes) -> tuple[str, str | None]:
    """(text, None) or ("", why) with the line of the first bad byte."""
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    try:
        return data.decode("utf-16" if utf16 else "utf-8-sig"), None
    except UnicodeDecodeError as exc:
        if utf16:
            return "", f"not UTF-16 text (byte {exc.start})"
        line = data.count(b"\n", 0, exc.start) + 1
        return "", f"not UTF-8 text (line {line}, byte {exc.start})"


def read_text(path: str, problems: list[Problem], kind: str = "") -> str | None:
    """The file's text (``-`` is standard input); None after recording why not."""
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read() if stream is not None else sys.stdin.read().encode()
        else:
            data = Path(path).read_bytes()
    except OSError as exc:
        problems.append(
            Problem(Location(file=path, kind=kind), f"cannot read: {exc.strerror}")
        )
        return None
    text, why = _decode(data)
    if why is not None:
        problems.append(Problem(Location(file=path, kind=kind), why))
        return None
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _json_depth_ok(doc: Any, limit: int = MAX_DEPTH) -> bool:
    """At most ``limit`` levels of containers, ``doc`` the first.

    Level by level, not recursively (the check must not recurse where the
    parser could not); about 0.3 s for a 50 MB dump, so a ``List``'s items
    are only walked when their text could be that deep (see
    :func:`_json_listed`)."""
    level = [doc] if type(doc) is dict or type(doc) is list else []
    for _ in range(limit):
        if not level:
            return True
        items: list[Any] = []
        for value in level:
            items.extend(value.values() if type(value) is dict else value)
        level = [v for v in items if type(v) is dict or type(v) is list]
    return not level


def _listed_depth_ok(doc: Any, starts: list[int], deep: list[Any]) -> bool:
    """:func:`_json_depth_ok` of a document read by :func:`_json_listed`,
    walking only the listed items that ``deep`` holds (the doc is level 1,
    its list level 1 or 2, so an item may nest the rest)."""
    if isinstance(doc, list):
        return all(_json_depth_ok(v, MAX_DEPTH - 1) for v in deep)
    if isinstance(doc.get("items"), list) and starts:
        rest = {k: v for k, v in doc.items() if k != "items"}
        return _json_depth_ok(rest) and all(
            _json_depth_ok(v, MAX_DEPTH - 2) for v in deep
        )
    return _json_depth_ok(doc)


def parse_json(text: str) -> Any:
    """One JSON value within the reader's limits; ValueError says why not.

    For JSON embedded in fields (Kueue's slice-topology annotation) as much
    as for whole files: ``json.loads`` alone recurses without a limit of
    our choosing and accepts NaN, which no Kubernetes client writes.
    """
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH}") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise ValueError(describe(str(exc), quote=False)) from None
    if not _json_depth_ok(doc):
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    return doc


_SPACE = re.compile(r"[ \t\n\r]*")


def _json_listed(text: str) -> tuple[Any, list[int] | None]:
    """A JSON document and the lines its items start on (formats.md §1).

    ``json.loads`` keeps no positions, so a ``kind: List`` (or a top-level
    array) is read here with the json module's own scanner value by value,
    which records where each item starts at no extra parsing cost.  Anything
    unusual (a syntax error, NaN, a huge number) is left to
    :func:`parse_json`, which reports it.
    """
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    scan: Callable[[str, int], tuple[Any, int]] = decoder.scan_once  # type: ignore[attr-defined]

    def skip(i: int) -> int:
        end = _SPACE.match(text, i)
        return i if end is None else end.end()

    def array(i: int, starts: list[int], deep: list[Any]) -> tuple[list[Any], int]:
        out: list[Any] = []
        i = skip(i + 1)
        if text[i] == "]":
            return out, i + 1
        while True:
            starts.append(i)
            value, end = scan(text, i)
            # Nesting needs an opening bracket per level: an item with few
            # in its text (strings included) cannot be too deep.
            if text.count("{", i, end) + text.count("[", i, end) > MAX_DEPTH - 2:
                deep.append(value)
            out.append(value)
            i = skip(end)
            if text[i] == "]":
                return out, i + 1
            if text[i] != ",":
                raise ValueError("expected , or ]")
            i = skip(i + 1)

    starts: list[int] = []
    deep: list[Any] = []
    """Items of the listed array whose depth must be walked."""
    try:
        i = skip(0)
        if text[i] == "[":
            doc: Any
            doc, i = array(i, starts, deep)
        elif text[i] == "{":
            doc, i = {}, skip(i + 1)
            while text[i] != "}":
                key, i = scan(text, i)
                i = skip(i)
                if not isinstance(key, str) or text[i] != ":":
                    raise ValueError("expected a key")
                i = skip(i + 1)
                if key == "items" and text[i] == "[":
                    starts, deep = [], []
                    doc[key], i = array(i, starts, deep)
                else:
                    doc[key], i = scan(text, i)
                i = skip(i)
                if text[i] == ",":
                    i = skip(i + 1)
                elif text[i] != "}":
                    raise ValueError("expected , or }")
            i += 1
        else:
            raise ValueError("not a List")
        if text[i:].strip() or not _listed_depth_ok(doc, starts, deep):
            raise ValueError("trailing data or too deep")
    except (ValueError, IndexError, StopIteration, RecursionError):
        return parse_json(text), None
    lines, line, at = [], 1, 0
    for start in starts:
        line += text.count("\n", at, start)
        at = start
        lines.append(line)
    return doc, lines if isinstance(doc, list) or "items" in doc else None


def documents(
    path: str,
    text: str,
    problems: list[Problem],
    typed: bool = False,
    kind: str = "",
) -> Iterator[Document]:
    """(document, first line, item lines) for every document of ``text``.

    JSON goes through the json module (fast, typed); YAML through
    :mod:`yaml_fast`.  ``typed`` makes YAML numbers numbers (see there).
    The item lines say where each item of a ``List`` (or a top-level
    sequence) starts, or are None.  Problems are recorded with ``path``
    and the line, and end the file.
    """

    def fail(line: int | None, message: str) -> None:
        problems.append(Problem(Location(file=path, kind=kind, line=line), message))

    if not text.strip():
        return  # blank (libyaml refuses a tab even there): an empty stream

    is_json = path.endswith(".json")
    if is_json or text.lstrip().startswith(("{", "[")):
        # Not JSON after all: a .yaml file may hold flow-style YAML, and the
        # YAML reader then reports the problem with its line.
        why: tuple[int | None, str]
        try:
            doc, lines = _json_listed(text)
        except json.JSONDecodeError as exc:
            why = exc.lineno, f"JSON syntax error: {exc.msg}"
        except ValueError as exc:
            why = None, f"JSON error: {exc}"
        else:
            lead = len(text) - len(text.lstrip())
            yield doc, text.count("\n", 0, lead) + 1, lines
            return
        if is_json:
            fail(*why)
            return
    try:
        yield from yaml_fast.documents(text, typed)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = "error" if isinstance(exc, yaml_fast.LimitError) else "syntax error"
        fail(
            mark.line + 1 if mark is not None else None,
            f"YAML {what}: {describe(exc.problem or 'malformed', quote=False)}",
        )
    except yaml.reader.ReaderError as exc:
        fail(text.count("\n", 0, exc.position) + 1, f"YAML error: {exc.reason}")
    except yaml.YAMLError as exc:
        fail(None, f"YAML error: {describe(str(exc))}")


def objects(
    path: str,
    doc: Any,
    line: int,
    problems: list[Problem],
    item_lines: list[int] | None = None,
) -> Iterator[tuple[Mapping[str, Any], int]]:
    """(object, line) for the Kubernetes objects of one document, ``List``
    wrappers unwrapped; an item's line is its own when ``item_lines`` (from
    :func:`documents`) has it, else the document's."""
    if type(doc) is dict and type(doc.get("items")) is not list:
        yield doc, line  # the common case, first: one object per document
        return
    items = [doc]
    inherit: dict[str, Any] = {}
    listed = False
    if isinstance(doc, list):
        items, listed = doc, True
    elif isinstance(doc, Mapping) and isinstance(doc.get("items"), list):
        kind = doc.get("kind")
        if isinstance(kind, str) and kind.endswith("List"):
            items, listed = doc["items"], True
            if kind != "List":
                inherit = {"kind": kind[: -len("List")]}
                if isinstance(doc.get("apiVersion"), str):
                    inherit["apiVersion"] = doc["apiVersion"]
    lines = (
        item_lines if listed and item_lines and len(item_lines) == len(items) else None
    )
    for n, item in enumerate(items):
        at = lines[n] if lines is not None else line
        if type(item) is not dict and not isinstance(item, Mapping):
            problems.append(
                Problem(
                    Location(file=path, line=at),
                    f"expected a Kubernetes object (a mapping), got {describe(item)}",
                )
            )
            continue
        if inherit and not ("kind" in item and "apiVersion" in item):
            item = {**inherit, **item}
        yield item, at


def load_one(path: str, kind: str, typed: bool = True) -> Any:
    """The single document of a plan, config or policy file.

    Raises :class:`InstanceError` (exit 2) naming the file, with ``kind``
    as the object it should have held.
    """
    problems: list[Problem] = []
    text = read_text(path, problems, kind)
    docs = list(documents(path, text, problems, typed, kind)) if text else []
    if not problems and len(docs) != 1:
        why = "holds no document" if not docs else "holds more than one document"
        problems.append(Problem(Location(file=path, kind=kind), why))
    if problems:
        raise InstanceError(problems)
    return docs[0][0]
