"""What a preemption throws away: the victim's GPU-time since it started.

Maximising the GPUs running *now* on every event preempts for any gain, so
replayed over hours the optimizer evicted 4-5x as often as Kueue and jobs
finished later (issue 19).  A victim is priced by the work it loses —
its GPUs x how long it has run — converted into GPUs of its own priority
tier by the policy's ``preemption_price`` (GPUs per GPU-hour lost): a
preemption pays only where the GPUs it adds to that tier outweigh it.
Tiers above stay lexicographically first, so a higher tier may still
preempt whatever Kueue's rules allow; not preempting is always allowed.

A victim evicted for a *higher* tier is priced in that tier too, at
``cross_tier_price`` (:mod:`placewise.solver.cpsat.model.attribution`).

Where a victim's start is unknown it is assumed to have run the median of
the known elapsed times (no better guess in the snapshot); with no time
known at all nothing is priced, so an instance without times solves as
before.  Work known to end within ``finish_window_minutes`` is left to
finish (not preemptible in this solve).

Every victim also costs ``reversal_gpus`` GPUs of its tier (issue 19, item
4; with a non-zero price and a clock, as the lost work): what runs was
decided and acted on, and a re-solve must not reverse it for a plan that
is merely as good — work admitted a second ago has lost
nothing, so without this an equal plan with a better tie-break would evict
it, and the next solve could trade it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from placewise.models.moves import assumed_elapsed
from placewise.models.snapshot import Snapshot
from placewise.solver.policy import Policy, accelerators

HOUR = 3600


@dataclass(frozen=True, slots=True)
class LostWork:
    """Per running workload, what preempting it would throw away."""

    gpu_seconds: dict[str, int] = field(default_factory=dict)
    """Workload key -> GPU-seconds lost (GPUs x elapsed or assumed seconds)."""
    finishing: frozenset[str] = frozenset()
    """Keys of running workloads known to end within the finish window."""
    assumed_elapsed: int = 0
    """Seconds assumed where a workload's start is unknown (the median)."""
    timed: bool = False
    """Some running workload's start is known (the snapshot has a clock)."""
    gpus: dict[str, int] = field(default_factory=dict)
    """Workload key -> the GPUs it runs (what a reversal is capped at)."""

    @property
    def priced(self) -> bool:
        return bool(self.gpu_seconds) or bool(self.finishing)


def lost_work(snapshot: Snapshot, pol: Policy) -> LostWork:
    """Nothing when the price is zero: the objective is then Kueue-like."""
    if pol.preemption_price <= 0:
        return LostWork()
    times = snapshot.run_times
    known = [rt.elapsed for rt in times.values() if rt.elapsed is not None]
    assumed = assumed_elapsed(known)
    lost: dict[str, int] = {}
    held: dict[str, int] = {}
    for w in snapshot.running:
        rt = times.get(w.key)
        elapsed = rt.elapsed if rt is not None and rt.elapsed is not None else assumed
        usage: dict[str, int] = {}
        for (_f, r), q in w.usage().items():
            usage[r] = usage.get(r, 0) + q
        gpus = held[w.key] = accelerators(usage, pol)
        if gpus > 0 and elapsed > 0:
            lost[w.key] = gpus * elapsed
    window = pol.finish_window_minutes * 60
    finishing = frozenset(
        k
        for k, rt in times.items()
        if rt.remaining is not None and rt.remaining < window
    )
    return LostWork(lost, finishing, assumed, bool(known), held if known else {})


def price_units(
    gpu_seconds: int, per_gpu: int, pol: Policy, price: float | None = None
) -> int:
    """The lost work in units of ``1 / per_gpu`` GPU, rounded up:
    ``price x GPU-hours``, at ``pol.preemption_price`` unless ``price`` is
    given (the cross-tier price).  Exact (the price as a fraction), so a
    plan is priced the same wherever it is compared."""
    rate = pol.preemption_price if price is None else price
    exact = Fraction(rate).limit_denominator(10**6)
    return -((-per_gpu * exact * gpu_seconds) // HOUR)


def victim_units(lw: LostWork, key: str, per_gpu: int, pol: Policy) -> int:
    """What evicting running workload ``key`` costs, in ``1 / per_gpu``
    GPU: its lost work plus the reversal, ``reversal_gpus`` but never more
    than the victim's own GPUs (none for a victim without GPUs, which the
    tiers weigh by their tie-break alone).  The reversal needs a clock, as the lost
    work does: an instance without times solves as before."""
    gpu_seconds = lw.gpu_seconds.get(key, 0)
    lost = price_units(gpu_seconds, per_gpu, pol) if gpu_seconds > 0 else 0
    if not lw.timed or pol.reversal_gpus <= 0:
        return lost
    gpus = lw.gpus.get(key, 0)
    if gpus <= 0:
        return lost  # GPUs are the currency: a CPU-only victim is not priced
    reversal = Fraction(min(pol.reversal_gpus, gpus)).limit_denominator(10**6)
    return lost - ((-per_gpu * reversal) // 1)
