"""Quantities for the emulator: resource lists, pod requests, Go's canonical form.

Parsing and the effective pod request come from the project's own model
(``placewise.models.quantity``, ``placewise.adapters.io.convert.core``) so the
scheduler stand-in
counts exactly what the solver counts; only the canonical string form that
``resource.Quantity`` marshals to lives here.
"""

from __future__ import annotations

from typing import Any

from placewise.adapters.io.convert.context import Ctx
from placewise.adapters.io.convert.core import effective_requests
from placewise.models.quantity import parse_fraction, to_units


def resource_units(values: Any) -> dict[str, int]:
    """A ResourceList in integer units (CPU milli, else base); bad entries skipped."""
    out: dict[str, int] = {}
    if not isinstance(values, dict):
        return out
    for name, raw in values.items():
        try:
            out[str(name)] = to_units(str(name), raw)
        except ValueError:
            continue
    return out


def pod_requests(pod: dict[str, Any]) -> dict[str, int]:
    """The effective pod request (containers, sidecars, init containers, overhead)."""
    meta = pod.get("metadata") or {}
    ctx = Ctx(
        [],
        "<emulator>",
        "Pod",
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
    )
    return effective_requests(ctx, pod.get("spec") or {}, "spec")


_DEC_SUFFIX = {
    -9: "n",
    -6: "u",
    -3: "m",
    0: "",
    3: "k",
    6: "M",
    9: "G",
    12: "T",
    15: "P",
    18: "E",
}
_BIN_SUFFIX = {10: "Ki", 20: "Mi", 30: "Gi", 40: "Ti", 50: "Pi", 60: "Ei"}


def canonical_quantity(value: Any) -> str:
    """How ``resource.Quantity`` marshals: ``1000m`` -> ``1``, ``2048Ki`` -> ``2Mi``.

    Binary-suffixed inputs stay binary when they are whole bytes of at least 1Ki;
    everything else is written with the largest decimal SI suffix that keeps an
    integer mantissa (sub-nano precision rounds up, as upstream). Exponent-form
    inputs keep exponent form.
    """
    text = str(value).strip()
    q = parse_fraction(value)
    sign = "-" if q < 0 else ""
    q = abs(q)
    binary = text.endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
    exponent_form = "e" in text.lower() and not binary
    if binary and q.denominator == 1 and q >= 1024:
        n, shift = int(q), 0
        while shift < 60 and n % 1024 == 0:
            n, shift = n // 1024, shift + 10
        return f"{sign}{n}{_BIN_SUFFIX.get(shift, '')}"
    nanos = q * 10**9
    units = int(nanos) + (1 if nanos.denominator != 1 else 0)
    if units == 0:
        return "0"
    exp = -9
    while exp < 18 and units % 1000 == 0:
        units, exp = units // 1000, exp + 3
    if exponent_form:
        return f"{sign}{units}" + (f"e{exp}" if exp else "")
    return f"{sign}{units}{_DEC_SUFFIX[exp]}"
