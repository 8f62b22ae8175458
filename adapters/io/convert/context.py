"""Field access with located errors.

Every decoder reads through a :class:`Ctx` so that each problem names the
file, the object and the dotted field path, and decoding continues after a
problem: the user gets the whole list at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from placewise.models.errors import Location, Problem, describe
from placewise.models.quantity import QuantityError, to_units

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
INT32 = (-(2**31), 2**31 - 1)
"""Every integer field placewise reads is an int32 in the Kubernetes API."""
_INTEGER = re.compile(r"[+-]?[0-9]{1,20}")
_UNITS: dict[tuple[str, str], int] = {}
"""(resource, quantity text) -> units of texts already accepted as a
resource amount. A dump repeats a few hundred quantity strings across
hundreds of thousands of fields; only accepted ones are kept, so a bad
value still goes through :meth:`Ctx.quantity` and is reported where it is."""
_UNITS_LIMIT = 1 << 16


class Ctx:
    """Decoding context for one Kubernetes object."""

    def __init__(
        self,
        problems: list[Problem],
        file: str,
        kind: str,
        namespace: str,
        name: str,
        line: int | None = None,
    ) -> None:
        self.problems = problems
        self.file = file
        self.kind = kind
        self.namespace = namespace
        self.name = name
        self.line = line

    def error(self, field: str, message: str) -> None:
        self.problems.append(
            Problem(
                Location(
                    file=self.file,
                    kind=self.kind,
                    namespace=self.namespace,
                    name=self.name,
                    field=field,
                    line=self.line,
                ),
                message,
            )
        )

    # -- typed getters; on a type mismatch they record and return a default --

    def mapping(self, obj: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = obj.get(key)
        if type(value) is dict:  # the parsers' own type: skip the ABC check
            return value
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(path, f"expected a mapping, got {type(value).__name__}")
            return {}
        return value

    def seq(self, obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = obj.get(key)
        if type(value) is list:
            return value
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {type(value).__name__}")
            return []
        return value

    def text(self, value: object, path: str) -> str | None:
        """The one scalar check for strings: names, labels, annotations, keys.

        A mapping or list where Kubernetes has a string is a located error,
        never ``str()``-ed: that would hide the mistake, and a nested or
        alias-expanded value can print gigabytes.  Numbers are accepted as
        their text (YAML leaves them unquoted); booleans are not, as the
        API server would refuse them too.
        """
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        self.error(path, f"expected a string, got {describe(value)}")
        return None

    def string(
        self, obj: Mapping[str, Any], key: str, path: str, default: str | None = None
    ) -> str | None:
        value = self.text(obj.get(key), path)
        return default if value is None else value

    def integer(
        self,
        obj: Mapping[str, Any],
        key: str,
        path: str,
        default: int | None = None,
        minimum: int | None = None,
    ) -> int | None:
        value = obj.get(key)
        if value is None:
            return default
        if isinstance(value, str) and _INTEGER.fullmatch(value):
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(path, f"expected an integer, got {describe(value)}")
            return default
        low = INT32[0] if minimum is None else max(minimum, INT32[0])
        if value < low or value > INT32[1]:
            bound = f">= {low}" if value < low else f"<= {INT32[1]} (int32)"
            self.error(path, f"must be {bound}, got {describe(value)}")
            return default
        return value

    def boolean(
        self, obj: Mapping[str, Any], key: str, path: str, default: bool
    ) -> bool:
        value = obj.get(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        self.error(path, f"expected a boolean, got {describe(value)}")
        return default

    def quantity(
        self, resource: str, value: object, path: str, allow_negative: bool = False
    ) -> int | None:
        try:
            units = to_units(resource, value)
        except QuantityError as exc:
            self.error(path, str(exc))
            return None
        if units < 0 and not allow_negative:
            self.error(path, f"quantity must not be negative, got {describe(value)}")
            return None
        return units

    def resources(self, obj: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r, q in self.mapping(obj, key, path).items():
            r = str(r)  # mapping keys are text (yaml_fast, JSON)
            if type(q) is str:
                units = _UNITS.get((r, q))
                if units is not None:
                    out[r] = units
                    continue
            units = self.quantity(r, q, f"{path}.{r}")
            if units is not None:
                out[r] = units
                if type(q) is str and len(_UNITS) < _UNITS_LIMIT:
                    _UNITS[(r, q)] = units
        return out

    def timestamp(self, value: object, path: str) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if not isinstance(value, str):
            self.error(path, f"expected an RFC 3339 timestamp, got {describe(value)}")
            return None
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            self.error(path, f"{describe(value)} is not an RFC 3339 timestamp")
            return None
        return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
