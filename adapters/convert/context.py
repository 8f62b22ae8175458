"""Field access with located errors.

Every decoder reads through a :class:`Ctx` so that each problem names the
file, the object and the dotted field path, and decoding continues after a
problem: the user gets the whole list at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from placewise.models.errors import Location, Problem
from placewise.models.quantity import QuantityError, to_units

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self.error(path, f"expected a mapping, got {type(value).__name__}")
            return {}
        return value

    def seq(self, obj: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path, f"expected a list, got {type(value).__name__}")
            return []
        return value

    def string(
        self, obj: Mapping[str, Any], key: str, path: str, default: str | None = None
    ) -> str | None:
        value = obj.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.error(path, f"expected a string, got {type(value).__name__}")
            return default
        return str(value)

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
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, str) and value.lstrip("-").isdigit():
                value = int(value)
            else:
                self.error(path, f"expected an integer, got {value!r}")
                return default
        if minimum is not None and value < minimum:
            self.error(path, f"must be >= {minimum}, got {value}")
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
        self.error(path, f"expected a boolean, got {value!r}")
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
            self.error(path, f"quantity must not be negative, got {value!r}")
            return None
        return units

    def resources(self, obj: Mapping[str, Any], key: str, path: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for r, q in self.mapping(obj, key, path).items():
            units = self.quantity(str(r), q, f"{path}.{r}")
            if units is not None:
                out[str(r)] = units
        return out

    def timestamp(self, value: object, path: str) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if not isinstance(value, str):
            self.error(path, f"expected an RFC 3339 timestamp, got {value!r}")
            return None
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            self.error(path, f"{value!r} is not an RFC 3339 timestamp")
            return None
        return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
