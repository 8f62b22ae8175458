"""Which resources are accelerators: the unit every report and objective counts."""

from __future__ import annotations

from placewise.models.cluster import PODS

ACCELERATORS: tuple[str, ...] = ("nvidia.com/gpu", "amd.com/gpu", "google.com/tpu")
"""Extended resources counted as accelerator units ("GPUs"): the objective's
leading term, the bound's quantity and the bench's figures all use this list."""

__all__ = ["ACCELERATORS", "PODS"]
