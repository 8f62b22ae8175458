"""Proven upper bounds on the accelerators (GPUs) running after any plan.

Benchmarks report a gap against a *proven* ceiling, and the optimizer
reports one per priority tier.  Both come from the optimizer's own rows —
the same host classes, packing patterns, quota tree and preemption links —
so a model and its bound cannot disagree about the problem:

* :func:`lp_bound`: the LP relaxation of the model (Gilmore-Gomory's
  configuration LP for the placement), or a time-limited MIP, with every
  rule the validator does not judge (StrictFIFO order) left out; workloads
  the model cannot express count with all their GPUs;
* :func:`class_bound`: the configuration LP over host classes with demand
  aggregated per type (:mod:`.classes`): a relaxation of :func:`lp_bound`'s
  LP that solves in about a second at 10,000 hosts, where that one does not
  finish; per priority tier in :mod:`.tiers`;
* :func:`aggregate_bound`: the same without placement detail (pods need room
  only in each TAS flavor's total capacity): cheap, looser.

HiGHS runs in a child process (:mod:`placewise.solver.highs`).
"""

from placewise.solver.bound.figures import gpus_after, running_gpus
from placewise.solver.bound.lp import (
    BoundResult,
    aggregate_bound,
    class_bound,
    lp_bound,
)
from placewise.solver.kueue.resources import ACCELERATORS

__all__ = [
    "ACCELERATORS",
    "BoundResult",
    "aggregate_bound",
    "class_bound",
    "gpus_after",
    "lp_bound",
    "running_gpus",
]
