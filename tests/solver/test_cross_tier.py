"""A higher tier's eviction priced in the tier that gains (issue 19).

The instance of :mod:`tests.solver.test_lost_work`: ``borrower`` (4 GPUs,
priority 100) runs in queue ``b`` on quota that queue ``a`` reclaims for
``big`` (8 GPUs).  With ``big`` at priority 1000 the eviction adds 8 GPUs
to tier 1000 and throws away 4 GPUs x the borrower's run: at the default
``cross_tier_price`` 0.5 that costs 2 GPUs of tier 1000 per hour run, so
the reclaim pays up to a 4-hour run and not beyond.  Kueue (the greedy)
reclaims whatever the time.  Every plan is validated.  The knob is off by
default (see :class:`Policy`), so these tests set it.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from placewise.solver.cpsat import CpSatParams
from placewise.solver.cpsat.model.cpmodel import CPModel
from placewise.solver.cpsat.model.objective import priced_vector
from placewise.solver.policy import Policy
from placewise.solver.problem.compile import compile_problem
from placewise.solver.solve import SolveParams, solve
from tests.solver.test_lost_work import admitted, cpsat, instance, preempted

PRICED = Policy(cross_tier_price=0.5)


def test_the_knob_is_off_by_default() -> None:
    """Kueue's tiers stand unless the policy asks: the higher tier reclaims
    whatever the victim loses, as the greedy does."""
    assert Policy().cross_tier_price == 0
    assert preempted(cpsat(instance(timedelta(hours=5), priority=1000))) == [
        "default/borrower"
    ]


def test_a_higher_tier_does_not_throw_away_a_long_run_for_a_small_gain() -> None:
    """5 h x 4 GPUs = 20 GPU-hours lost costs 10 GPUs of tier 1000: more
    than the 8 the reclaim adds.  Not preempting is inside Kueue's rules."""
    snap = instance(timedelta(hours=5), priority=1000)
    plan = cpsat(snap, PRICED)
    assert preempted(plan) == [] and admitted(plan) == []
    greedy = solve(snap, SolveParams(solver="greedy"))
    assert preempted(greedy) == ["default/borrower"]  # Kueue always reclaims


@pytest.mark.parametrize("hours", [1, 3])
def test_a_higher_tier_preempts_where_its_gain_pays(hours: int) -> None:
    """1 h and 3 h cost 2 and 6 GPUs of tier 1000: the 8 GPUs pay."""
    plan = cpsat(instance(timedelta(hours=hours), priority=1000), PRICED)
    assert preempted(plan) == ["default/borrower"]
    assert admitted(plan) == ["default/big"]


def test_cross_tier_price_zero_preempts_for_any_gain() -> None:
    """The objective before the knob: the higher tier preempts whatever
    the victim loses."""
    plan = cpsat(
        instance(timedelta(hours=5), priority=1000), Policy(cross_tier_price=0)
    )
    assert preempted(plan) == ["default/borrower"]


def test_the_price_is_the_gaining_tiers_own() -> None:
    """The knob sets the trade: a 1-hour run (4 GPU-hours) costs 6 GPUs of
    tier 1000 at 1.5, under the 8 gained; at 3 it costs 12 and stays."""
    snap = instance(timedelta(hours=1), priority=1000)
    assert preempted(cpsat(snap, Policy(cross_tier_price=1.5))) == ["default/borrower"]
    assert preempted(cpsat(snap, Policy(cross_tier_price=3))) == []


def test_kueues_plan_stays_a_plan_of_the_model() -> None:
    """The attribution variables complete every plan the model had before:
    Kueue's reclaim is representable, and priced below not preempting."""
    snap = instance(timedelta(hours=5), priority=1000)
    model = CPModel(compile_problem(snap), CpSatParams(policy=PRICED))
    greedy = solve(snap, SolveParams(solver="greedy"))
    values = model.hint(greedy)
    assert values is not None
    tier = model.stages[0]
    # 10 GPUs of price, capped just above the tier's whole range (9 GPUs)
    assert tier.tier == 1000 and tier.costs == {"default/borrower": 9 * tier.weight}
    assert tier.value(values) < 0  # +8 GPUs, -9 of price


def test_the_acceptance_test_prices_a_plan_as_the_model_does() -> None:
    """``priced_vector`` (a searched plan against the warm start) charges
    the eviction to the tier that admits work, as the model's attribution
    does: the two rank Kueue's plan against doing nothing alike."""
    snap = instance(timedelta(hours=5), priority=1000)
    pol = PRICED
    model = CPModel(compile_problem(snap), CpSatParams(policy=pol))
    greedy = solve(snap, SolveParams(solver="greedy"))
    idle = greedy.model_copy(update={"admissions": (), "preemptions": ()})
    got, none = model.hint(greedy), model.hint(idle)
    assert got is not None and none is not None
    stages = [st for st in model.stages if st.gpus]
    by_model = [st.value(got) - st.value(none) for st in stages]
    mine = priced_vector(snap, greedy, stages, pol)
    base = priced_vector(snap, idle, stages, pol)
    assert by_model == [a - b for a, b in zip(mine, base, strict=True)]
    assert by_model[0] < 0  # tier 1000: +8 GPUs, -9 of price


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("-1", "cross_tier_price must be in"),
        ("true", "cross_tier_price must be a number"),
        ("'x'", "cross_tier_price must be a number"),
    ],
)
def test_policy_checks_the_cross_tier_price(value: str, error: str) -> None:
    raw = yaml.safe_load(f"cross_tier_price: {value}")
    with pytest.raises(ValueError, match=error):
        Policy.from_mapping(raw, "p.yaml")
    assert Policy.from_mapping({"cross_tier_price": 2}).cross_tier_price == 2.0
