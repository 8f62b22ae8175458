"""Exact Kubernetes quantities.

Kueue accounts CPU in milli-cores (``ceil(q * 1000)``) and every other
resource in its base unit rounded up, so placewise does the same with Python
integers: no float ever touches a quota decision.  Values beyond int64
saturate to :data:`UNLIMITED`, as Kueue's saturating ``Amount`` does; an
unbounded Python int keeps sums of saturated values exact and still larger
than any real request.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

from placewise.models.errors import describe

INT64_MAX = 2**63 - 1
UNLIMITED = 1 << 96
"""Stand-in for Kueue's "Unlimited": far above any sum of int64 values."""

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
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
}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?)$",
    re.ASCII,
)

MAX_LENGTH = 128
"""Longest quantity text parsed.  The digits of anything longer only decide
how far beyond int64 it saturates, and an unbounded string would feed
arbitrarily long integers (or Python's 4300-digit limit) to the parser."""

MILLI_RESOURCES = frozenset({"cpu"})
"""Resources counted in milli-units, as Kueue's ``ResourceValue`` does."""


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


def parse_fraction(value: object) -> Fraction:
    """Parse the full Kubernetes quantity grammar into an exact fraction."""
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a string or number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity {value!r} is not finite")
        value = repr(value)
    if not isinstance(value, str):
        raise QuantityError(
            f"quantity must be a string or number, not {describe(value)}"
        )
    if len(value) > MAX_LENGTH:
        raise QuantityError(
            f"{describe(value)} is not a valid quantity "
            f"(longer than {MAX_LENGTH} characters)"
        )
    text = value.strip()
    m = _QUANTITY.match(text)
    if m is None:
        raise QuantityError(f"{describe(value)} is not a valid quantity")
    number = Fraction(m.group("num"))
    if m.group("exp"):
        exp = int(m.group("exp")[1:])
        if abs(exp) > 400:
            raise QuantityError(f"{describe(value)}: exponent out of range")
        number *= Fraction(10) ** exp
    else:
        suffix = m.group("suffix") or ""
        number *= _BINARY.get(suffix) or _DECIMAL[suffix]
    return -number if m.group("sign") == "-" else number


def to_units(resource: str, value: object) -> int:
    """Convert a quantity of ``resource`` to exact integer units.

    CPU becomes milli-cores, everything else base units, both rounded up
    (Kubernetes' ``MilliValue``/``Value``); beyond int64 saturates.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(
            f"quantity must be a string or number, not {describe(value)}"
        )
    return _to_units(resource in MILLI_RESOURCES, value)


@functools.lru_cache(maxsize=65536)
def _to_units(milli: bool, value: str | int | float) -> int:
    """Cached: a cluster dump repeats the same few quantity strings."""
    frac = parse_fraction(value)
    if milli:
        frac *= 1000
    units = math.ceil(frac)
    if units > INT64_MAX:
        return UNLIMITED
    if units < -INT64_MAX:
        return -UNLIMITED
    return units


def is_unlimited(units: int) -> bool:
    """True for saturated values and sums that contain one."""
    return units >= UNLIMITED // 2


def format_units(resource: str, units: int) -> str:
    """Render integer units back as a canonical Kubernetes quantity string."""
    if is_unlimited(units):
        return str(INT64_MAX) + ("m" if resource in MILLI_RESOURCES else "")
    if resource in MILLI_RESOURCES:
        if units % 1000 == 0:
            return str(units // 1000)
        return f"{units}m"
    if resource in {"memory", "ephemeral-storage"} or resource.startswith("hugepages-"):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            scale = _BINARY[suffix]
            if units != 0 and units % scale == 0:
                return f"{units // scale}{suffix}"
    return str(units)
