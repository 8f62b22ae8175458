"""Admission fair sharing (Kueue's AdmissionFairSharing gate, on by default
since 0.15): the Configuration section, a ClusterQueue's admission mode, a
LocalQueue's weight and recorded usage.

Bad values are located errors, as Kueue's API validation or its
configuration loader would refuse them: a duration Go cannot parse, a
negative half-life, sampling interval or weight, an admission mode outside
the enum, a consumed amount that is not a quantity.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from placewise.adapters.io.convert.context import Ctx
from placewise.models.cluster import AdmissionFairSharing, AdmissionMode
from placewise.models.errors import describe
from placewise.models.quantity import QuantityError, parse_fraction

MODES: tuple[AdmissionMode, ...] = (
    "UsageBasedAdmissionFairSharing",
    "NoAdmissionFairSharing",
)

_UNITS_NS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
MAX_DURATION_NS = 2**63 - 1
"""Go's time.Duration is an int64 of nanoseconds."""


def parse_duration(text: str) -> int:
    """Go's ``time.ParseDuration`` (what ``metav1.Duration`` reads): a signed
    sequence of decimal numbers with units, e.g. ``1h30m``, ``1.5s``; ``0``
    alone is allowed.  Exact nanoseconds (Go truncates the fraction too)."""
    s = text.strip()
    sign = 1
    if s[:1] in "+-" and s:
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"{describe(text)} is not a duration")
    total = Fraction(0)
    pos = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            raise ValueError(
                f"{describe(text)} is not a duration (like 10s, 5m, 1h30m)"
            )
        total += Fraction(m.group(1)) * _UNITS_NS[m.group(2)]
        pos = m.end()
    ns = int(total)  # truncates toward zero, as Go does
    if ns > MAX_DURATION_NS:
        raise ValueError(f"{describe(text)} overflows a Go duration")
    return sign * ns


def _duration(ctx: Ctx, raw: Mapping[str, Any], key: str) -> int | None:
    path = f"admissionFairSharing.{key}"
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        ctx.error(path, f"expected a duration string, got {describe(value)}")
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        ctx.error(path, str(exc))
        return None


def decode_admission_fair_sharing(
    ctx: Ctx, obj: Mapping[str, Any], gate_on: bool
) -> AdmissionFairSharing | None:
    """``Configuration.admissionFairSharing`` with Kueue's defaults (sampling
    every 5 minutes) and validation; None when the section is absent or the
    ``featureGates`` of the same Configuration turn the gate off (``gate_on``,
    read by :func:`~placewise.adapters.io.convert.gates.read_gates`)."""
    raw = obj.get("admissionFairSharing")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        ctx.error("admissionFairSharing", f"expected a mapping, got {describe(raw)}")
        return None
    half_life = _duration(ctx, raw, "usageHalfLifeTime")
    sampling = _duration(ctx, raw, "usageSamplingInterval")
    if half_life is not None and half_life < 0:
        ctx.error("admissionFairSharing.usageHalfLifeTime", "must not be negative")
    if sampling is not None and sampling < 0:
        ctx.error(
            "admissionFairSharing.usageSamplingInterval", "must be greater than 0"
        )
    weights: list[tuple[str, Fraction]] = []
    path = "admissionFairSharing.resourceWeights"
    items = ctx.mapping(raw, "resourceWeights", path).items()
    for name, value in sorted(items, key=lambda kv: str(kv[0])):
        w = _weight(ctx, value, f"{path}.{name}")
        if w is not None:
            weights.append((str(name), w))
    if not gate_on:
        return None
    return AdmissionFairSharing(
        usage_half_life_ns=max(half_life or 0, 0),
        usage_sampling_interval_ns=sampling or 300 * 10**9,
        resource_weights=tuple(weights),
    )


def _weight(ctx: Ctx, value: object, path: str) -> Fraction | None:
    """A non-negative exact weight (a number or a quantity string)."""
    try:
        w = parse_fraction(value)
    except QuantityError as exc:
        ctx.error(path, f"not a number: {exc}")
        return None
    if w < 0:
        ctx.error(path, f"weight must not be negative, got {describe(value)}")
        return None
    return w


def admission_mode(ctx: Ctx, spec: Mapping[str, Any]) -> AdmissionMode:
    """``spec.admissionScope.admissionMode`` (absent: no usage ordering)."""
    scope = ctx.mapping(spec, "admissionScope", "spec.admissionScope")
    path = "spec.admissionScope.admissionMode"
    mode = ctx.string(scope, "admissionMode", path)
    if mode is None:
        return "NoAdmissionFairSharing"
    if mode not in MODES:
        ctx.error(path, f"{describe(mode)} is not one of {', '.join(MODES)}")
        return "NoAdmissionFairSharing"
    return mode


def local_queue_usage(
    ctx: Ctx, obj: Mapping[str, Any]
) -> tuple[tuple[tuple[str, Fraction], ...], datetime | None]:
    """``status.fairSharing.admissionFairSharingStatus``: the consumed
    resources (exact, in each quantity's own unit) and when they were
    recorded."""
    base = "status.fairSharing.admissionFairSharingStatus"
    status = ctx.mapping(obj, "status", "status")
    fair = ctx.mapping(status, "fairSharing", "status.fairSharing")
    afs = ctx.mapping(fair, "admissionFairSharingStatus", base)
    consumed: list[tuple[str, Fraction]] = []
    path = f"{base}.consumedResources"
    items = ctx.mapping(afs, "consumedResources", path).items()
    for name, value in sorted(items, key=lambda kv: str(kv[0])):
        try:
            amount = parse_fraction(value)
        except QuantityError as exc:
            ctx.error(f"{path}.{name}", str(exc))
            continue
        if amount < 0:
            ctx.error(f"{path}.{name}", f"must not be negative, got {describe(value)}")
            continue
        consumed.append((str(name), amount))
    at = ctx.timestamp(afs.get("lastUpdate"), f"{base}.lastUpdate")
    return tuple(consumed), at
