"""Quantities, timestamps and uids for generated objects.

The generator keeps every amount as an exact integer (CPU in milli-cores,
memory in bytes, everything else in its base unit), as Kueue does, and only
turns amounts back into Kubernetes quantity strings when an object is
emitted.  It has its own small parser so that it depends on nothing but the
standard library and numpy.
"""

from __future__ import annotations

import functools
import re
import uuid
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from placewise.models.cluster import PODS

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
RESOURCES: tuple[str, ...] = (CPU, MEMORY, GPU, PODS)
"""Resource order of every capacity vector in the generator."""

_QUANTITY = re.compile(
    r"^(?P<num>\d+(?:\.\d*)?|\.\d+)(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$"
)
_SCALE: dict[str, Fraction] = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_BINARY_UNITS: tuple[tuple[str, int], ...] = (
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_UID_NAMESPACE = uuid.UUID("6f1c1a0e-5a1e-4c39-9d43-0c8f5b0f7a11")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@functools.lru_cache(maxsize=4096)
def parse_quantity(value: str | int | float, resource: str) -> int:
    """Parse a non-negative quantity into the unit Kueue accounts in.

    CPU becomes milli-cores and everything else its base unit, both rounded
    up, so a config value means exactly what Kueue would make of it.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    if isinstance(value, int | float):
        value = repr(value) if isinstance(value, float) else str(value)
    m = _QUANTITY.match(value.strip())
    if m is None:
        raise ValueError(f"{value!r} is not a non-negative Kubernetes quantity")
    amount = Fraction(m["num"]) * _SCALE[m["suffix"] or ""]
    if resource == CPU:
        amount *= 1000
    return -((-amount.numerator) // amount.denominator)


def format_quantity(amount: int, resource: str) -> str:
    """Format an amount the way kubectl users expect to read it."""
    if resource == CPU:
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if resource == MEMORY:
        return format_memory(amount)
    return str(amount)


def format_memory(amount: int) -> str:
    """Use the largest binary suffix that keeps the value exact."""
    for suffix, unit in _BINARY_UNITS:
        if amount and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return str(amount)


def format_kibibytes(amount: int) -> str:
    """Node memory as the kubelet reports it (whole Ki)."""
    return f"{amount // 1024}Ki" if amount % 1024 == 0 else str(amount)


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 UTC timestamp of the form kubectl prints."""
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def timestamp(base: datetime, offset_seconds: float) -> str:
    """A timestamp at a fixed offset from the snapshot, never the wall clock."""
    return (base + timedelta(seconds=int(offset_seconds // 1))).strftime(TIME_FORMAT)


def make_uid(seed: int, kind: str, namespace: str, name: str) -> str:
    """Derive a uid from the object's identity so it is stable across runs.

    Hashing the identity, instead of drawing from the generator's random
    stream, keeps uids identical when an unrelated part of a config changes.
    """
    return str(uuid.uuid5(_UID_NAMESPACE, f"{seed}/{kind}/{namespace}/{name}"))
