"""Kueue feature gates from the Configuration's ``featureGates``: the one
place that reads them.

Only gates that change placewise's decisions are read; every other entry is
reported back so the loader can warn once about it. Defaults are Kueue's at
the pinned commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placewise.adapters.io.convert.context import Ctx
from placewise.models.errors import describe

ADMISSION_FAIR_SHARING = "AdmissionFairSharing"
"""Beta, on by default."""

TAS_BALANCED_PLACEMENT = "TASBalancedPlacement"
"""Alpha, off by default."""

DEFAULTS: Mapping[str, bool] = {
    ADMISSION_FAIR_SHARING: True,
    TAS_BALANCED_PLACEMENT: False,
}
"""The gates placewise reads, with Kueue's defaults."""


def read_gates(ctx: Ctx, config: Mapping[str, Any]) -> dict[str, bool]:
    """Every gate placewise reads, as the Configuration sets it or Kueue's
    default; a value that is not a boolean is a located error."""
    gates = ctx.mapping(config, "featureGates", "featureGates")
    return {
        name: ctx.boolean(gates, name, f"featureGates.{name}", default)
        for name, default in DEFAULTS.items()
    }


def unread_gates(config: Mapping[str, Any]) -> list[str]:
    """``featureGates.X`` for every entry placewise ignores, sorted."""
    gates = config.get("featureGates")
    if not isinstance(gates, Mapping):
        return []
    return sorted(
        f"featureGates.{describe(k, quote=False)}" for k in gates if k not in DEFAULTS
    )
