"""A fast YAML stream reader on libyaml's C parser.

PyYAML's loaders spend most of their time in Python, composing nodes and
resolving every plain scalar through regular expressions; on a 10,000-node
``kubectl get -o yaml`` dump that is several times the parse itself.  This
reader takes libyaml's event stream and builds the documents in one tight
loop.  By default it resolves only what Kubernetes objects need: plain
``null``/``~``/empty as None and ``true``/``false`` as booleans; numbers,
quantities and timestamps stay strings, which every decoder accepts.
``typed=True`` also resolves YAML 1.1 integers and floats (plans, configs
and the emulator's seed objects need real numbers); timestamps stay strings
there too, so documents remain plain JSON data.

The input is untrusted, so the builder also bounds what a small file can
cost: nesting deeper than :data:`MAX_DEPTH` is an error (libyaml slows
quadratically with depth and every recursive consumer downstream would
overflow), and so is alias expansion beyond :data:`ALIAS_BUDGET` nodes plus
:data:`ALIAS_RATIO` times the nodes actually written (a 600-byte "billion
laughs" file would otherwise expand to gigabytes in the first ``str()``).
Recursive and undefined aliases and complex (non-scalar) mapping keys are
rejected; mapping keys are always their source text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NoReturn

import yaml
from yaml._yaml import CParser  # libyaml ships in the pinned PyYAML wheel
from yaml.events import (
    AliasEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)

MAX_DEPTH = 100
"""Deepest nesting accepted in any input file.  Kubernetes objects stay
under 20 levels; CRD schemas under 50."""
ALIAS_BUDGET = 100_000
ALIAS_RATIO = 10
"""Aliases may add ``ALIAS_BUDGET + ALIAS_RATIO * written`` nodes to a stream."""

_PLAIN: dict[str, Any] = {
    "": None,
    "~": None,
    "null": None,
    "Null": None,
    "NULL": None,
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
_NO_KEY = object()
_OPEN = object()
"""Anchor of a collection still being built: an alias to it would be a cycle."""
_TAG = "tag:yaml.org,2002:"
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()

Document = tuple[Any, int, list[int] | None]
"""A document, the line it starts on and the lines its items start on."""


class ComplexKeyError(yaml.MarkedYAMLError):
    """A mapping or sequence used as a mapping key (never valid in Kubernetes)."""


class LimitError(yaml.MarkedYAMLError):
    """Input beyond what the reader accepts: too deep, too many aliases."""


def _fail(cls: type[yaml.MarkedYAMLError], message: str, mark: Any) -> NoReturn:
    raise cls(None, None, message, mark)


def _typed(ev: Any) -> Any:
    """A scalar as SafeLoader would build it, except timestamps (strings)."""
    tag = ev.tag if ev.tag not in (None, "!") else None
    if tag is None:
        tag = _RESOLVER.resolve(  # type: ignore[no-untyped-call]
            yaml.ScalarNode, ev.value, ev.implicit
        )
    name = tag[len(_TAG) :] if tag.startswith(_TAG) else ""
    if name not in ("null", "bool", "int", "float"):
        return ev.value
    try:
        return getattr(_CONSTRUCTOR, f"construct_yaml_{name}")(
            yaml.ScalarNode(tag, ev.value)
        )
    except (ValueError, KeyError, yaml.YAMLError):
        _fail(LimitError, f"not a valid {name}", ev.start_mark)


def documents(text: str, typed: bool = False) -> Iterator[Document]:
    """Yield (document, first line, item lines) for every document of ``text``.

    Lines are 1-based.  The item lines are where each item of the document
    starts when it is a sequence or a mapping with an ``items`` sequence (a
    ``kind: List``), so a problem in the 500th object of a dump names its
    own line; None for other documents.  Raises ``yaml.MarkedYAMLError``
    (with the line) on a syntax error or an input beyond the limits above,
    ``yaml.YAMLError`` on unreadable text.
    """
    parser = CParser(text)
    get = parser.get_event
    anchors: dict[str, tuple[Any, int, str]] = {}
    stack: list[tuple[Any, Any, int, str | None]] = []
    cur: Any = None
    key: Any = _NO_KEY
    line = 1
    listed: Any = None  # the sequence whose items' lines are recorded
    item_lines: list[int] = []
    written = 0  # nodes in the text
    extra = 0  # nodes aliases add beyond their own
    while True:
        ev: Any = get()
        kind = type(ev)
        if kind is ScalarEvent:
            written += 1
            raw: str = ev.value
            value: Any = raw
            if typed:
                value = _typed(ev)
            elif ev.implicit[0] and raw in _PLAIN:
                value = _PLAIN[raw]
            if ev.anchor:
                anchors[ev.anchor] = (value, 1, raw)
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if len(stack) >= MAX_DEPTH:
                _fail(LimitError, f"nested deeper than {MAX_DEPTH}", ev.start_mark)
            written += 1
            new: Any = {} if kind is MappingStartEvent else []
            if ev.anchor:
                anchors[ev.anchor] = (_OPEN, 0, "")
            if type(cur) is dict:
                if key is _NO_KEY:
                    _fail(
                        ComplexKeyError,
                        "complex mapping keys are not supported",
                        ev.start_mark,
                    )
                cur[key] = new
                if key == "items" and len(stack) == 1 and type(new) is list:
                    listed, item_lines = new, []  # a List's items
            elif cur is not None:
                if cur is listed:
                    item_lines.append(ev.start_mark.line + 1)
                cur.append(new)
            elif type(new) is list:
                listed, item_lines = new, []  # a top-level sequence
            stack.append((cur, key, written + extra, ev.anchor))
            cur, key = new, _NO_KEY
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            done = cur
            cur, key, start, anchor = stack.pop()
            if anchor:
                anchors[anchor] = (done, written + extra - start + 1, "")
            if cur is None:
                yield done, line, item_lines if listed is not None else None
                listed, item_lines = None, []
            else:
                key = _NO_KEY
            continue
        elif kind is AliasEvent:
            value, size, raw = anchors.get(ev.anchor, (None, -1, ""))
            if size < 0:
                _fail(yaml.MarkedYAMLError, "found undefined alias", ev.start_mark)
            if value is _OPEN:
                _fail(LimitError, "recursive alias", ev.start_mark)
            written += 1
            extra += size - 1
            if extra > ALIAS_BUDGET + ALIAS_RATIO * written:
                _fail(LimitError, "aliases expand too much", ev.start_mark)
        elif kind is DocumentStartEvent:
            line = ev.start_mark.line + (2 if ev.explicit else 1)
            anchors.clear()  # anchors never cross documents
            continue
        elif kind is StreamEndEvent or ev is None:
            return
        else:
            continue
        if cur is None:
            if value is not None:
                yield value, line, None
        elif type(cur) is dict:
            if key is _NO_KEY:
                if type(value) is dict or type(value) is list:
                    _fail(
                        ComplexKeyError,
                        "complex mapping keys are not supported",
                        ev.start_mark,
                    )
                key = raw
            else:
                cur[key] = value
                key = _NO_KEY
        else:
            if cur is listed:
                item_lines.append(ev.start_mark.line + 1)
            cur.append(value)
