"""Label and field selectors with the apiserver's grammar and error texts.

Label selector strings follow ``k8s.io/apimachinery/pkg/labels.Parse``:
``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``,
``k>3``/``k<3``. Field selectors allow ``=``, ``==`` and ``!=`` on the field
labels the resource's storage strategy knows; any other label is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from placewise.adapters.emulator.errors import bad_request

JSON = dict[str, Any]

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # in, notin, exists, !, =, !=, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if not present:
            return False
        try:
            have, want = int(value), int(self.values[0])
        except ValueError:
            return False
        return have > want if self.op == "gt" else have < want


LabelSelector = tuple[Requirement, ...]


def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str) -> None:
    if not key or not _KEY.match(key):
        raise bad_request(f'unable to parse requirement: invalid label key "{key}"')


_SET_RE = re.compile(r"^\s*(\S+?)\s+(in|notin)\s*\((.*)\)\s*$")
_CMP_RE = re.compile(r"^\s*([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*?)\s*$")


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query value; malformed input is a 400 as upstream."""
    if not text or not text.strip():
        return ()
    reqs: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise bad_request(
                f"unable to parse requirement: found '', expected: identifier "
                f'in selector "{text}"'
            )
        m = _SET_RE.match(part)
        if m:
            key, op, inner = m.group(1), m.group(2), m.group(3)
            _check_key(key)
            values = tuple(v.strip() for v in inner.split(",")) if inner.strip() else ()
            if op == "in" and not values:
                raise bad_request(
                    "unable to parse requirement: for 'in', 'notin' operators, values "
                    "set can't be empty"
                )
            reqs.append(Requirement(key, op, values))
            continue
        m = _CMP_RE.match(part)
        if m:
            key, sym, value = m.group(1), m.group(2), m.group(3)
            _check_key(key)
            op = {"==": "=", "=": "=", "!=": "!=", ">": "gt", "<": "lt"}[sym]
            if op in ("gt", "lt") and not re.fullmatch(r"-?\d+", value):
                raise bad_request(
                    "unable to parse requirement: for 'Gt', 'Lt' operators, the value "
                    f"must be an integer: {value}"
                )
            reqs.append(Requirement(key, op, (value,)))
            continue
        if part.startswith("!"):
            key = part[1:].strip()
            _check_key(key)
            reqs.append(Requirement(key, "!"))
            continue
        _check_key(part)
        reqs.append(Requirement(part, "exists"))
    return tuple(reqs)


def labels_match(selector: LabelSelector, labels: Mapping[str, str] | None) -> bool:
    have = labels or {}
    return all(req.matches(have) for req in selector)


def from_label_selector_object(sel: JSON | None) -> LabelSelector | None:
    """Convert a ``metav1.LabelSelector`` object; ``None`` stands for a nil selector."""
    if sel is None:
        return None
    reqs = [
        Requirement(k, "=", (str(v),))
        for k, v in sorted((sel.get("matchLabels") or {}).items())
    ]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expr in sel.get("matchExpressions") or []:
        op = ops.get(str(expr.get("operator")))
        if op is None:
            raise ValueError(
                f"{expr.get('operator')!r} is not a valid label selector operator"
            )
        reqs.append(
            Requirement(
                str(expr.get("key")),
                op,
                tuple(str(v) for v in expr.get("values") or ()),
            )
        )
    return tuple(reqs)


# -- field selectors -------------------------------------------------------------------


@dataclass(frozen=True)
class FieldTerm:
    field: str
    value: str
    negate: bool


FieldSelector = tuple[FieldTerm, ...]


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    out: list[str] = []
    cur: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == sep:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    out.append("".join(cur))
    return out


def parse_field_selector(
    text: str | None,
    allowed: tuple[str, ...],
    aliases: tuple[tuple[str, str], ...] = (),
) -> FieldSelector:
    """Parse ``fieldSelector``; a label the resource does not index is a 400.

    ``aliases`` renames a served label to the stored object's one, for a view of
    another resource's storage (``regarding.name`` is ``involvedObject.name``).
    """
    renamed = dict(aliases)
    if not text or not text.strip():
        return ()
    terms: list[FieldTerm] = []
    for raw in _split_unescaped(text, ","):
        part = raw.strip()
        m = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        name, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3).strip())
        if name not in allowed:
            raise bad_request(f"field label not supported: {name}")
        terms.append(FieldTerm(renamed.get(name, name), value, op == "!="))
    return tuple(terms)


def _field_value(obj: JSON, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(selector: FieldSelector, obj: JSON) -> bool:
    for term in selector:
        value = _field_value(obj, term.field)
        if term.field == "source":
            # An Event's source is its component, else the reporting controller.
            source = obj.get("source")
            component = source.get("component") if isinstance(source, dict) else None
            value = str(component or obj.get("reportingComponent") or "")
        if (value == term.value) == term.negate:
            return False
    return True


Predicate = Callable[[JSON], bool]


def predicate(labels: LabelSelector, fields: FieldSelector) -> Predicate:
    """One callable combining both selectors, for list and watch filtering."""

    def match(obj: JSON) -> bool:
        meta = obj.get("metadata") or {}
        return labels_match(labels, meta.get("labels")) and fields_match(fields, obj)

    return match
