"""Located input errors and warnings.

Bad input must never become a silently wrong plan: every problem names the
file, the object (kind namespace/name) and the field, and all problems found
are reported together, not just the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SHOWN = 80
"""Characters of an input value an error message shows at most."""


def describe(value: object, quote: bool = True) -> str:
    """An input value as an error message may show it: short and safe.

    Messages never ``repr`` arbitrary input: a nested or alias-expanded
    value would print gigabytes (or recurse without end), and an integer
    of more than 4300 digits cannot be printed at all.  Scalars are shown
    (strings truncated), collections only by their type and size.
    """
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int):
        if value.bit_length() > 64:
            return f"an integer of about {int(value.bit_length() * 0.30103)} digits"
        return str(value)
    if isinstance(value, str):
        text = value if len(value) <= SHOWN else value[:SHOWN] + "..."
        return repr(text) if quote else text
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item(s)"
    return f"a {type(value).__name__}"


def _short(text: str, limit: int = 600) -> str:
    """Object names and field paths embed input keys: bound them too."""
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, slots=True)
class Location:
    file: str = ""
    kind: str = ""
    namespace: str = ""
    name: str = ""
    field: str = ""
    line: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file if self.line is None else f"{self.file}:{self.line}")
        if self.kind:
            obj = f"{self.namespace}/{self.name}" if self.namespace else self.name
            parts.append(_short(f"{self.kind} {obj}".rstrip()))
        if self.field:
            parts.append(f"field {_short(self.field)}")
        return ": ".join(parts)


@dataclass(frozen=True, slots=True)
class Problem:
    location: Location
    message: str

    def __str__(self) -> str:
        where = str(self.location)
        return f"{where}: {self.message}" if where else self.message


@dataclass
class InstanceError(ValueError):
    """One or more malformed inputs; the CLI prints them all and exits 2.

    A ``ValueError``, so code that reports bad values generically (the
    emulator's command line) reports these too."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
