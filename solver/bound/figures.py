"""The quantity every bound here bounds: accelerators running after a plan."""

from __future__ import annotations

from collections.abc import Sequence

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.kueue.resources import ACCELERATORS


def running_gpus(snapshot: Snapshot, accelerators: Sequence[str] = ACCELERATORS) -> int:
    """Accelerators held by running workloads (quota usage with a flavor)."""
    return sum(
        v
        for w in snapshot.running
        for (_f, r), v in w.usage().items()
        if r in accelerators
    )


def gpus_after(
    snapshot: Snapshot, plan: Plan, accelerators: Sequence[str] = ACCELERATORS
) -> int:
    """Accelerators running after ``plan``: running work minus preemptions
    plus admissions."""
    evicted = {p.workload for p in plan.preemptions}
    total = sum(
        v
        for w in snapshot.running
        if w.key not in evicted
        for (_f, r), v in w.usage().items()
        if r in accelerators
    )
    for adm in plan.admissions:
        for psa in adm.pod_set_assignments:
            total += sum(
                v
                for r, v in psa.resource_usage.items()
                if r in accelerators and r in psa.flavors
            )
    return total
