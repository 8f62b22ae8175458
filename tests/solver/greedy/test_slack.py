"""The fill back's quota margins (solver/greedy/slack.py) never promise a fit
that the cohort tree would refuse."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from placewise.solver.greedy.slack import QuotaSlack
from placewise.solver.kueue.quota import QuotaTree
from tests.helpers import cq_yaml, flavor_yaml, snapshot

FR = ("f", "cpu")
QUEUES = ("a", "b", "d", "e")


def nested_tree() -> QuotaTree:
    """Two levels of cohorts with lending and borrowing limits on the way."""
    cohort_c = """apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec:
  parentName: r
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: '2', borrowingLimit: '5', lendingLimit: '1'}
"""
    snap = snapshot(
        flavor_yaml(),
        cohort_c,
        cq_yaml("a", cohort="c", quotas={"cpu": ("10", None, "4")}),
        cq_yaml("b", cohort="c", quotas={"cpu": ("3", "2", None)}),
        cq_yaml("d", cohort="r", quotas={"cpu": ("6", None, "3")}),
        cq_yaml("e", cohort="r", quotas={"cpu": ("4", "1", "2")}),
    )
    return QuotaTree(snap)


def fits(tree: QuotaTree, cq: str, need: int, borrowing: bool) -> bool:
    """``Preemptor.fits`` without TAS, for one flavor-resource."""
    if not borrowing and tree.borrowing_with(cq, FR, need):
        return False
    return need <= tree.available(cq, FR)


def info(cq: str, units: int) -> Any:
    return SimpleNamespace(cq=cq, usage={FR: units})


@pytest.mark.parametrize("seed", range(40))
def test_margins_only_promise_real_fits(seed: int) -> None:
    """Random adds to every queue: while ``add`` says the fit is certain, the
    tree agrees (and it is not vacuous: such promises are made)."""
    rng = random.Random(seed)
    tree = nested_tree()
    promised = 0
    for _ in range(30):
        cq, borrowing = rng.choice(QUEUES), rng.random() < 0.5
        need = rng.randrange(0, 8000, 250)
        if not fits(tree, cq, need, borrowing):
            tree.add_usage(rng.choice(QUEUES), {FR: rng.randrange(0, 3000, 250)})
            continue
        slack = QuotaSlack(tree, info(cq, 0), {FR: need}, borrowing)
        for _ in range(rng.randrange(1, 12)):
            added = info(rng.choice(QUEUES), rng.randrange(0, 2500, 250))
            tree.add_usage(added.cq, added.usage)
            if slack.add(added):
                promised += 1
                assert fits(tree, cq, need, borrowing)
            elif rng.random() < 0.3:
                tree.remove_usage(added.cq, added.usage)  # conservative after
    assert promised > 0


def test_own_queue_counts_against_the_nominal_room() -> None:
    """Usage put back into the preemptor's own queue eats its room under
    nominal; another queue's does not."""
    tree = nested_tree()
    slack = QuotaSlack(tree, info("d", 0), {FR: 5000}, borrowing=False)
    assert slack.own[FR] == 1000  # nominal 6 - usage 0 - need 5
    assert slack.add(info("e", 500))
    assert slack.own[FR] == 1000
    assert not slack.add(info("d", 1500))
    assert slack.own[FR] == -500
