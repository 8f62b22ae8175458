"""Kubernetes resource quantities (``100m``, ``1Gi``, ``1e3``) as exact fractions.

The emulator needs them for pod QoS and the scheduler stand-in's fit check; a
Fraction keeps ``0.1`` CPU and ``100m`` equal, as ``resource.Quantity.Cmp`` does.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_SUFFIX = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
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
_RE = re.compile(
    r"^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)


def parse_quantity(value: Any) -> Fraction:
    """Parse a quantity; raises ValueError on anything the Go parser rejects."""
    if isinstance(value, bool):
        raise ValueError(f"quantities must match the regular expression: {value!r}")
    if isinstance(value, int | float):
        return Fraction(str(value))
    text = str(value).strip()
    m = _RE.match(text)
    if not m:
        raise ValueError(
            "quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
        )
    number = Fraction(m.group(1))
    if m.group(2):
        return number * Fraction(10) ** int(m.group(2)[1:])
    return number * _SUFFIX[m.group(3) or ""]


def resource_list(values: Any) -> dict[str, Fraction]:
    """A ResourceList (``{cpu: "1", memory: "1Gi"}``) parsed; bad entries skipped."""
    out: dict[str, Fraction] = {}
    if not isinstance(values, dict):
        return out
    for name, raw in values.items():
        try:
            out[str(name)] = parse_quantity(raw)
        except ValueError:
            continue
    return out


def pod_requests(pod: dict[str, Any]) -> dict[str, Fraction]:
    """Effective pod request: max(sum of containers, any init container) plus overhead.

    Sidecar init containers (restartPolicy Always) add to the sum, as in the
    upstream resource helpers.
    """
    spec = pod.get("spec") or {}
    total: dict[str, Fraction] = {}
    for c in spec.get("containers") or []:
        for name, q in resource_list(
            (c.get("resources") or {}).get("requests")
        ).items():
            total[name] = total.get(name, Fraction(0)) + q
    sidecars: dict[str, Fraction] = {}
    for c in spec.get("initContainers") or []:
        req = resource_list((c.get("resources") or {}).get("requests"))
        if c.get("restartPolicy") == "Always":
            for name, q in req.items():
                sidecars[name] = sidecars.get(name, Fraction(0)) + q
                total[name] = total.get(name, Fraction(0)) + q
            continue
        for name, q in req.items():
            total[name] = max(
                total.get(name, Fraction(0)), q + sidecars.get(name, Fraction(0))
            )
    for name, q in resource_list(spec.get("overhead")).items():
        total[name] = total.get(name, Fraction(0)) + q
    return total


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
    q = parse_quantity(value)
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
