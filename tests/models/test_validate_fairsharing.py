"""The fair-sharing preemption rule (``preemption.fair-sharing``, §5.5) on
``fair.yaml``: cohort ``co`` holds 12 cpu (a, b, c with 4 each); ``a``
runs its full 4 and admits 2 more, so it borrows 2: a share of 2000/12."""

from __future__ import annotations

from typing import Any

import pytest

from placewise.models.validate import Violation
from placewise.solver.kueue.fairsharing import final_state_violations
from tests.models.validate_builders import (
    admission,
    check,
    load,
    pending,
    plan,
    psa,
    running,
)
from tests.models.validate_builders import (
    policy_rules as rules,
)

S2A = "LessThanOrEqualToFinalShare"
S2B = "LessThanInitialShare"


def config(*strategies: str, enable: bool = True) -> dict[str, Any]:
    fair: dict[str, Any] = {"enable": enable}
    if strategies:
        fair["preemptionStrategies"] = list(strategies)
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "fairSharing": fair,
    }


def reclaim(
    victim_cpu: int,
    filler_cpu: int,
    *,
    own: int = 4,
    queue: str = "a",
    strategies: tuple[str, ...] = (),
    fair: bool = True,
    reason: str = "InCohortFairSharing",
    own_priority: int = 0,
    priority: int = 0,
) -> list[Violation]:
    """``queue`` runs ``own`` cpu and admits 2 more by evicting b's victim;
    b also runs ``filler_cpu``."""
    objects = [
        running("default/own", queue, own, priority=own_priority) if own else None,
        running("default/victim", "b", victim_cpu),
        running("default/filler", "b", filler_cpu, priority=9),
        pending("default/in", 2, queue=f"lq-{queue}", priority=priority),
    ]
    if fair:
        objects.append(config(*strategies))
    snap = load("fair.yaml", *[o for o in objects if o is not None])
    entry = psa("main", {"cpu": "f"}, {"cpu": "2"})
    p = plan(
        [admission("default/in", queue, entry)],
        preemptions=[("default/victim", "default/in", reason)],
    )
    found = check(snap, p)
    # The optimizer's guard states the same rule in the solvers' code.
    fair_here = any(v.rule == "preemption.fair-sharing" for v in found)
    assert fair_here == any("share" in m for m in final_state_violations(snap, p))
    return found


@pytest.mark.parametrize(
    ("strategies", "victim", "filler", "expected"),
    [
        # b ends borrowing 2 (share 167), as much as a: S2-a allows it.
        ((S2A,), 2, 6, []),
        # b ends borrowing 1 (share 83), below a's 167: S2-a refuses ...
        ((S2A,), 3, 5, ["preemption.fair-sharing"]),
        # ... S2-b allows it, b started at 333 ...
        ((S2B,), 3, 5, []),
        # ... and so does Kueue's default list, S2-b being its fallback.
        ((), 3, 5, []),
        ((S2A, S2B), 3, 5, []),
        # b started at 83 (borrowing 1), below a's 167: S2-b refuses too.
        ((S2B,), 2, 3, ["preemption.fair-sharing"]),
        ((S2A, S2B), 2, 3, ["preemption.fair-sharing"]),
    ],
)
def test_strategy(
    strategies: tuple[str, ...], victim: int, filler: int, expected: list[str]
) -> None:
    """Each configured strategy judged on the plan's final state."""
    assert rules(reclaim(victim, filler, strategies=strategies)) == expected


def test_refusal_names_the_shares() -> None:
    v = reclaim(3, 5, strategies=(S2A,))
    assert "ClusterQueue a's share (167)" in v[0].message
    assert "ClusterQueue b's after the plan (84)" in v[0].message


def test_nominal_first() -> None:
    """A preemptor that stays within its nominal quota reclaims whatever the
    shares say (Kueue's FairSharingPreemptWithinNominal)."""
    assert rules(reclaim(2, 3, own=1, strategies=(S2B,))) == []
    assert rules(reclaim(2, 3, own=1, reason="InCohortReclamation")) == []


def test_zero_weight_preemptor_cannot_reclaim_by_share() -> None:
    """z has weight 0: borrowing, its share is infinite and no strategy passes."""
    assert rules(reclaim(3, 5, own=0, queue="z")) == ["preemption.fair-sharing"]


def test_without_fair_sharing_the_classical_rules_apply() -> None:
    """The Configuration is what turns the rule on.  Without it, a preemptor
    that borrows afterwards needs borrowWithinCohort (a has none), and
    InCohortFairSharing is a reason Kueue never writes."""
    classical = reclaim(3, 5, fair=False, reason="InCohortReclamation")
    assert rules(classical) == ["preemption.policy"]
    assert "borrowWithinCohort is Never" in classical[0].message
    off = reclaim(3, 5, fair=False)
    assert sorted(set(rules(off))) == ["preemption.policy", "preemption.reason"]
    disabled = load("fair.yaml", config(enable=False))
    assert not disabled.fair_sharing.enable


def test_no_reclaim_while_borrowing_under_fair_sharing() -> None:
    v = reclaim(3, 5, reason="InCohortReclaimWhileBorrowing")
    assert rules(v) == ["preemption.reason"]


def test_only_the_victims_queue_must_borrow() -> None:
    """Fair sharing reclaims from any borrowing queue of the tree: sb borrows
    3 inside cohort s, which itself stays within its 4; the classical walk
    refuses that (s lends nothing), fair sharing does not."""

    def evict(*extra: dict[str, Any]) -> list[Violation]:
        snap = load(
            "fair.yaml",
            running("default/victim", "sb", 3),
            pending("default/in", 2, queue="lq-ta"),
            *extra,
        )
        entry = psa("main", {"cpu": "f"}, {"cpu": "2"})
        return check(
            snap,
            plan(
                [admission("default/in", "ta", entry)],
                preemptions=[("default/victim", "default/in", "InCohortReclamation")],
            ),
        )

    assert rules(evict()) == ["preemption.not-borrowing"]
    assert rules(evict(config())) == []


def test_own_queue_work_the_preemptor_could_evict() -> None:
    """Kueue applies the strategy after the victims it took in the preemptor's
    own queue, then its fill back may return them: a's 4 running cpu of lower
    priority count as evictable, so a's share is judged without them (within
    nominal, 0) — with higher priority they stay, and S2-a refuses."""
    assert rules(reclaim(3, 5, strategies=(S2A,), priority=1)) == []
    assert rules(reclaim(3, 5, strategies=(S2A,), priority=1, own_priority=5)) == [
        "preemption.fair-sharing"
    ]
