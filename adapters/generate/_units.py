"""Quantities, timestamps and uids for generated objects.

The generator keeps every amount as an exact integer (CPU in milli-cores,
memory in bytes, everything else in its base unit), as Kueue does, and only
turns amounts back into Kubernetes quantity strings when an object is
emitted.  Quantities are parsed by the models' one parser
(:mod:`placewise.models.quantity`).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from placewise.models.cluster import PODS
from placewise.models.quantity import QuantityError, to_units

CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
RESOURCES: tuple[str, ...] = (CPU, MEMORY, GPU, PODS)
"""Resource order of every capacity vector in the generator."""

_BINARY_UNITS: tuple[tuple[str, int], ...] = (
    ("Ti", 2**40),
    ("Gi", 2**30),
    ("Mi", 2**20),
    ("Ki", 2**10),
)
_UID_NAMESPACE = uuid.UUID("6f1c1a0e-5a1e-4c39-9d43-0c8f5b0f7a11")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def parse_quantity(value: str | int | float, resource: str) -> int:
    """Parse a non-negative quantity into the unit Kueue accounts in.

    The one quantity parser (:func:`placewise.models.quantity.to_units`:
    CPU in milli-cores, everything else its base unit, both rounded up), so
    a config value means exactly what Kueue, and the loader, make of it;
    generated amounts are never negative.
    """
    amount = to_units(resource, value)
    if amount < 0:
        raise QuantityError(f"{value!r} is not a non-negative Kubernetes quantity")
    return amount


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
