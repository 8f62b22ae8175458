"""Whether the searched plan replaces the warm start.

The search promises a plan never worse than its warm start, never below
Kueue's own, and held at whatever the policy holds it to (:mod:`..model.
kueue_floor`).  The stages' rows keep the search there, but a cold start,
a time limit or settling (which may withdraw admissions) can end elsewhere,
so the decoded plan is judged here against each promise, in the order a
person reading the refusal needs it.
"""

from __future__ import annotations

from fractions import Fraction

from placewise.models.plan import Plan
from placewise.models.snapshot import Snapshot
from placewise.solver.cpsat.model.aging import below_kueue
from placewise.solver.cpsat.model.kueue_floor import short_of
from placewise.solver.cpsat.model.objective import Stage, priced_vector
from placewise.solver.kueue.fairsharing import (
    final_state_violations,
    largest_weighted_share,
)
from placewise.solver.lost_work import LostWork
from placewise.solver.policy import Policy, primary_vector


def refused(
    snapshot: Snapshot,
    plan: Plan,
    warm: Plan,
    kueue: Plan | None,
    stages: list[Stage],
    floor: Fraction | None,
    pol: Policy,
    lost: LostWork,
) -> str | None:
    """Why ``plan`` is not accepted over ``warm`` (None: accepted).
    ``kueue``: Kueue's plan when it ran; ``floor``: the largest weighted
    share of the warm start under fair sharing; ``lost``: what each
    eviction throws away, as the model priced it."""
    if worse(snapshot, plan, warm, stages, pol):
        return "the search ended below the warm start"
    if below_kueue(snapshot, plan, kueue, pol):
        return "the plan runs fewer GPUs than Kueue's"
    short = short_of(lost, plan, kueue, pol)
    if short is not None:
        return short
    if floor is not None and largest_weighted_share(snapshot, plan) > floor:
        return "the plan shares the cohort less fairly"
    # -- interim guard (issue 11), until the model encodes fair sharing: a
    # plan whose evictions Kueue's fair-sharing preemption would refuse is
    # replaced by the warm start.  That one is clean either way: best-fit
    # preempts only within a queue (fair sharing judges other queues' victims
    # only), and the greedy follows Kueue's fair sharing.  The lead replaces
    # this with constraints built on solver/kueue/fairsharing.py.
    if snapshot.fair_sharing.enable:
        unfair = final_state_violations(snapshot, plan)
        if unfair:
            return "fair sharing refuses " + unfair[0]
    # -- end of interim guard
    return None


def worse(
    snapshot: Snapshot, plan: Plan, warm: Plan, stages: list[Stage], pol: Policy
) -> bool:
    """Whether ``plan`` ranks below ``warm`` under the objective: GPUs per
    tier, with victims' lost work priced as the model prices it."""
    if any(st.costs or st.aged for st in stages):
        mine = priced_vector(snapshot, plan, stages, pol)
        return mine < priced_vector(snapshot, warm, stages, pol)
    return primary_vector(snapshot, plan, pol) < primary_vector(snapshot, warm, pol)
