"""Located input errors and warnings.

Bad input must never become a silently wrong plan: every problem names the
file, the object (kind namespace/name) and the field, and all problems found
are reported together, not just the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
            parts.append(f"{self.kind} {obj}".rstrip())
        if self.field:
            parts.append(f"field {self.field}")
        return ": ".join(parts)


@dataclass(frozen=True, slots=True)
class Problem:
    location: Location
    message: str

    def __str__(self) -> str:
        where = str(self.location)
        return f"{where}: {self.message}" if where else self.message


@dataclass
class InstanceError(Exception):
    """One or more malformed inputs; the CLI prints them all and exits 2."""

    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)
