"""A fast YAML stream reader on libyaml's C parser.

PyYAML's loaders spend most of their time in Python, composing nodes and
resolving every plain scalar through regular expressions; on a 10,000-node
``kubectl get -o yaml`` dump that is several times the parse itself.  This
reader takes libyaml's event stream and builds the documents in one tight
loop.  It resolves only what Kubernetes objects need: plain ``null``/``~``/
empty as None and ``true``/``false`` as booleans; numbers, quantities and
timestamps stay strings, which every decoder accepts.  Anchors and aliases
are honoured; complex (non-scalar) mapping keys are rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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


class ComplexKeyError(yaml.MarkedYAMLError):
    """A mapping or sequence used as a mapping key (never valid in Kubernetes)."""


def documents(text: str) -> Iterator[tuple[Any, int]]:
    """Yield (document, first line 1-based) for every document of ``text``.

    Raises ``yaml.MarkedYAMLError`` (with the line) on a syntax error.
    """
    parser = CParser(text)
    get = parser.get_event
    anchors: dict[str, Any] = {}
    stack: list[tuple[Any, Any]] = []
    cur: Any = None
    key: Any = _NO_KEY
    line = 1
    while True:
        ev: Any = get()
        kind = type(ev)
        if kind is ScalarEvent:
            value: Any = ev.value
            if ev.implicit[0] and value in _PLAIN:
                value = _PLAIN[value]
            if ev.anchor:
                anchors[ev.anchor] = value
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            new: Any = {} if kind is MappingStartEvent else []
            if ev.anchor:
                anchors[ev.anchor] = new
            if type(cur) is dict:
                if key is _NO_KEY:
                    raise ComplexKeyError(
                        None,
                        None,
                        "complex mapping keys are not supported",
                        ev.start_mark,
                    )
                cur[key] = new
            elif cur is not None:
                cur.append(new)
            stack.append((cur, key))
            cur, key = new, _NO_KEY
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            done = cur
            cur, key = stack.pop()
            if cur is None:
                yield done, line
            else:
                key = _NO_KEY
            continue
        elif kind is AliasEvent:
            value = anchors[ev.anchor]
        elif kind is DocumentStartEvent:
            line = ev.start_mark.line + (2 if ev.explicit else 1)
            continue
        elif kind is StreamEndEvent or ev is None:
            return
        else:
            continue
        if cur is None:
            if value is not None:
                yield value, line
        elif type(cur) is dict:
            if key is _NO_KEY:
                key = value
            else:
                cur[key] = value
                key = _NO_KEY
        else:
            cur.append(value)
