"""What a plan is worth: the objective policy and the figures users read.

The optimizer maximises, per priority tier from the highest down, the
accelerators ("GPUs") running after the plan, with other demand (CPU,
memory, ... in thousandths of the cluster's capacity, at least one unit per
pod) breaking ties inside a tier, and a victim priced inside its own tier
by the work it throws away plus the reversal of a decision acted on
(:mod:`placewise.solver.lost_work`), and in the higher tier that evicts
it at ``cross_tier_price``; then fewer
and cheaper preemptions, fewer preferred-level domains, fewer empty hosts
opened and less borrowing.  The
``gpus`` objective folds the tiers into one GPU count so a plan can be held
against a GPU bound like for like.  Everything here is computed from a plan
and the snapshot alone, so the bench, the acceptance test against the
greedy and the tests judge plans the same way whatever produced them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

import yaml

from placewise.models.cluster import PODS
from placewise.models.moves import MoveRules
from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.models.workload import Workload
from placewise.solver.kueue.resources import ACCELERATORS
from placewise.solver.move_policy import parse_moves

ObjectiveKind = Literal["tiers", "gpus"]
MAX_PRICE = 1000
"""Largest ``preemption_price``: beyond it every victim that ran a few
seconds already costs more than any tier can gain."""


@dataclass(frozen=True, slots=True)
class Policy:
    """Objective settings; ``--policy FILE`` (YAML) overrides the defaults."""

    objective: ObjectiveKind = "tiers"
    """``tiers``: per priority tier, highest first; ``gpus``: one tier, GPUs only."""
    accelerators: tuple[str, ...] = ACCELERATORS
    """Resources counted as GPUs."""
    demand_scale: int = 1000
    """Other resources count in 1/demand_scale of their cluster-wide capacity
    (at least one unit per pod that requests them): a coarse tie-break, kept
    coarse so a tier's GPU weight stays small."""
    preemption: bool = True
    topology: bool = True
    fragmentation: bool = True
    borrowing: bool = True
    waiting: bool = True
    """After the tiers: among plans as good on every tier, admit more jobs
    and the longest-waiting first (:mod:`placewise.solver.cpsat.model.objective`);
    false: the tie-breaks decide among them, as before issue 19."""
    preemption_price: float = 1.0
    """GPUs of its own priority tier a preemption must add per GPU-hour of
    work it throws away (the victim's GPUs x how long it has run): at 1 the
    GPUs gained must run an hour to repay the loss.  0: preemption costs
    only the tie-break (the objective before issue 19).  Kueue does not
    price; the greedy ignores it."""
    cross_tier_price: float = 0.0
    """GPUs of the *gaining* tier a preemption of lower-priority work must
    add per GPU-hour that work throws away
    (:mod:`placewise.solver.cpsat.model.attribution`): at 0.5 a higher tier
    evicts 64 GPU-hours of lower work only to run at least 32 more of its
    own GPUs, and of two victim sets that admit the same, takes the one that
    loses less, whatever their tiers.  0: a higher tier preempts for any
    gain, and lower tiers first (the objective before this knob).  Off by
    default: at 0.5 the replays wasted less work than Kueue on 8 of 11 runs
    (3 before) but waited longer (median mean delay -0.7 % against Kueue,
    +1.8 % without it).  The sweep at 74d1c08 (benchmarks/README, "price
    swept") kept 0: at 0.25 all four Done-when checks held on fewer runs (2
    of 10 against 3) and the median mean-delay improvement over Kueue fell
    (+1.6 % -> +0.3 %); it wasted less work on eight runs but more on
    preemption-heavy seed 2 (158.5 GPU-h against 93.0).  0.1 held the checks
    best (all four on 4 runs) at a median delay about Kueue's: the next
    candidate, once more seeds confirm it.  Needs a non-zero
    ``preemption_price`` (and a clock), as all pricing does; the greedy
    (Kueue) ignores it."""
    finish_window_minutes: int = 5
    """A running workload known to end within this many minutes (Kueue's
    maximum execution time, or its expected duration) is left to finish:
    the optimizer does not preempt it.  Only with a non-zero price."""
    moves: MoveRules = field(default_factory=MoveRules)
    """The move budget, who may move and the move price
    (:mod:`placewise.solver.move_policy`); no budget: no moves.  Moves are
    priced at ``preemption_price`` (plus ``reversal_gpus`` each) unless
    ``moves.price`` says otherwise."""

    reversal_gpus: float = 1.0
    """GPUs of its own tier that evicting a running workload costs on top
    of its lost work: running work is a decision already acted on (an
    admission written, a gang bound), and a re-solve that reverses it must
    gain more than this.  So of two equally good plans the one acted on
    stands (no flip-flop), even for work admitted a second ago, whose lost
    work is nil.  Capped at the victim's own GPUs; priced with the lost
    work (a non-zero price and a clock).  0: only the lost work prices a
    preemption."""
    aging_minutes: int = 0
    """Every this many minutes a pending workload waits, its GPUs count
    once more in its tier (at most AGING_CAP more;
    :mod:`placewise.solver.cpsat.model.aging`), so that solve after solve
    the largest gang does not always beat older, smaller work; each aged
    tier is held at Kueue's GPUs.  0: off, the default: it helped one replay
    family and made the Helios window worse (benchmarks/README, stop 30).
    The greedy (Kueue) ignores it."""
    job_gpus: int = 0
    """Each pending workload admitted counts this many GPUs more in its
    tier, and each of the tier's evictions this many less
    (:mod:`placewise.solver.cpsat.model.aging`), with each such tier held
    at Kueue's (GPUs, other demand): among plans that run as much as
    Kueue's, the one that starts the most jobs.  0: off, the default: at
    32 the replays waited no less (benchmarks/README, stop 31).  The greedy
    (Kueue) ignores it."""
    waste_cap: bool = False
    """Each plan throws away at most the work Kueue's own plan for the same
    snapshot throws away (GPUs x time since start, summed over the
    victims; :mod:`placewise.solver.cpsat.model.kueue_floor`).  Kueue's plan
    stays allowed, so every tier still gets at least Kueue's GPUs; the
    optimizer picks cheaper victims or none.  Applies where Kueue's plan
    ran (not on the large path) and needs a clock and a non-zero
    ``preemption_price``, as all pricing does."""
    keep_kueue_admissions: bool = False
    """Every workload Kueue's own plan for the same snapshot admits is
    admitted (:mod:`placewise.solver.cpsat.model.kueue_floor`): the
    optimizer adds to Kueue's choice and places it better, but never
    trades an older job for a larger one.  Where Kueue's plan ran (not on
    the large path)."""
    starvation_minutes: int = 30
    """A pending workload that has waited this long gets a reservation
    (:mod:`placewise.solver.reservation`): the room it needs is held
    against work of its priority or lower until it runs (other workloads
    past the threshold excepted), and backfill goes only where it does not
    take that room.  0: no reservations, as in
    Kueue; ``--solver greedy`` (Kueue's cycles) ignores it."""

    @property
    def weighs_jobs(self) -> bool:
        """Whether a tier values workloads beyond their GPUs (aging, the
        per-job count): such tiers are held at Kueue's GPUs."""
        return self.aging_minutes > 0 or self.job_gpus > 0

    @property
    def held_at_kueue(self) -> bool:
        """Whether some rows hold a plan at Kueue's own for the snapshot
        (:mod:`placewise.solver.cpsat.model.kueue_floor`)."""
        return self.weighs_jobs or self.waste_cap or self.keep_kueue_admissions

    @property
    def move_rules(self) -> MoveRules:
        """The move rules, lost work counted in this policy's GPUs and
        priced at its ``preemption_price`` unless ``moves.price`` says."""
        price = self.preemption_price if self.moves.price is None else self.moves.price
        return self.moves.model_copy(
            update={"accelerators": self.accelerators, "price": price}
        )

    @staticmethod
    def from_file(path: str | Path) -> Policy:
        return Policy.from_mapping(yaml.safe_load(Path(path).read_text()), str(path))

    @staticmethod
    def from_mapping(raw: object, source: str = "") -> Policy:
        """Every field checked: the weights built from a policy must stay
        small integers, and a wrong type would only fail deep in the model."""
        raw = {} if raw is None else raw
        at = f"{source}: " if source else ""
        if not isinstance(raw, Mapping):
            raise ValueError(f"{at}a policy file is a YAML mapping")
        known = {f.name for f in fields(Policy)}
        unknown = sorted(str(k)[:80] for k in set(raw) - known)
        if unknown:
            raise ValueError(f"{at}unknown policy keys {unknown}")
        values = dict(raw)
        if values.get("objective", "tiers") not in ("tiers", "gpus"):
            raise ValueError(f"{at}objective must be 'tiers' or 'gpus'")
        acc = values.get("accelerators", ())
        if not isinstance(acc, list | tuple) or not all(
            isinstance(a, str) for a in acc
        ):
            raise ValueError(f"{at}accelerators must be a list of resource names")
        if "accelerators" in values:
            values["accelerators"] = tuple(acc)
        scale = values.get("demand_scale", 1)
        if isinstance(scale, bool) or not isinstance(scale, int):
            raise ValueError(f"{at}demand_scale must be an integer")
        if not 1 <= scale <= 10**6:
            raise ValueError(f"{at}demand_scale must be in [1, 10^6]")
        for name in (
            "preemption",
            "topology",
            "fragmentation",
            "borrowing",
            "waiting",
            "waste_cap",
            "keep_kueue_admissions",
        ):
            if not isinstance(values.get(name, True), bool):
                raise ValueError(f"{at}{name} must be true or false")
        for name in ("preemption_price", "reversal_gpus", "cross_tier_price"):
            price = values.get(name, 0.0)
            if isinstance(price, bool) or not isinstance(price, int | float):
                raise ValueError(f"{at}{name} must be a number")
            if not 0 <= price <= MAX_PRICE:
                raise ValueError(f"{at}{name} must be in [0, {MAX_PRICE}]")
            if name in values:
                values[name] = float(price)
        window = values.get("finish_window_minutes", 0)
        if isinstance(window, bool) or not isinstance(window, int):
            raise ValueError(f"{at}finish_window_minutes must be an integer")
        if not 0 <= window <= 10**6:
            raise ValueError(f"{at}finish_window_minutes must be in [0, 10^6]")
        if "moves" in values:
            values["moves"] = parse_moves(values["moves"])
        for name in ("starvation_minutes", "aging_minutes", "job_gpus"):
            wait = values.get(name, 0)
            if isinstance(wait, bool) or not isinstance(wait, int):
                raise ValueError(f"{at}{name} must be an integer")
            if not 0 <= wait <= 10**6:
                raise ValueError(f"{at}{name} must be in [0, 10^6]")
        return Policy(**values)


def capacity(snapshot: Snapshot) -> dict[str, int]:
    """Cluster-wide size of each resource: what "other demand" is a share of."""
    cap: dict[str, int] = defaultdict(int)
    for node in snapshot.nodes.values():
        for r, q in node.allocatable.items():
            cap[r] += q
    for cq in snapshot.cluster_queues.values():
        for g in cq.resource_groups:
            for fq in g.flavors:
                for rq in fq.resources:
                    cap[rq.name] = max(cap[rq.name], rq.nominal)
    return cap


def other_demand(req: Mapping[str, int], cap: Mapping[str, int], pol: Policy) -> int:
    """Non-accelerator demand of one pod (or one usage vector) in buckets."""
    total = 0
    for r, q in req.items():
        if r in pol.accelerators or r == PODS or q <= 0:
            continue
        total += max(1, q * pol.demand_scale // max(cap.get(r, 1), 1))
    return total


def accelerators(req: Mapping[str, int], pol: Policy) -> int:
    return sum(q for r, q in req.items() if r in pol.accelerators)


def _usage_by_resource(w: Workload) -> dict[str, int]:
    usage: dict[str, int] = defaultdict(int)
    for (_f, r), q in w.usage().items():
        usage[r] += q
    return usage


@dataclass(frozen=True, slots=True)
class TierFigures:
    priority: int
    gpus: int
    """Accelerators running after the plan from workloads of this priority."""
    other: int
    """Other demand running after the plan, in buckets."""


def tier_figures(
    snapshot: Snapshot, plan: Plan, pol: Policy | None = None
) -> list[TierFigures]:
    """Per priority, highest first: GPUs and other demand running after
    ``plan`` (running work minus preemptions plus admissions)."""
    pol = pol or Policy()
    cap = capacity(snapshot)
    gpus: dict[int, int] = defaultdict(int)
    other: dict[int, int] = defaultdict(int)
    # A moved workload runs on: its admission in the plan counts it.
    preempted = {p.workload for p in plan.preemptions} | {
        m.workload for m in plan.moves
    }
    for w in snapshot.running:
        if w.key in preempted:
            continue
        usage = _usage_by_resource(w)
        gpus[w.priority] += accelerators(usage, pol)
        other[w.priority] += other_demand(usage, cap, pol)
    for a in plan.admissions:
        w = snapshot.workloads[a.workload]
        spec = {ps.name: ps for ps in w.pod_sets}
        for psa in a.pod_set_assignments:
            ps = spec.get(psa.name)
            if ps is None:
                continue
            gpus[w.priority] += accelerators(ps.requests, pol) * psa.count
            other[w.priority] += other_demand(ps.requests, cap, pol) * psa.count
    tiers = {w.priority for w in snapshot.workloads.values()}
    return [TierFigures(t, gpus[t], other[t]) for t in sorted(tiers, reverse=True)]


def primary_vector(
    snapshot: Snapshot, plan: Plan, pol: Policy | None = None
) -> list[int]:
    """The objective's leading criteria as one comparable vector: per tier,
    highest first, (GPUs, other demand) running after the plan; under the
    ``gpus`` objective, total GPUs first."""
    pol = pol or Policy()
    figs = tier_figures(snapshot, plan, pol)
    if pol.objective == "gpus":
        return [sum(f.gpus for f in figs)]
    out: list[int] = []
    for f in figs:
        out += [f.gpus, f.other]
    return out
