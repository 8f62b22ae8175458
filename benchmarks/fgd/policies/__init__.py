"""Placement policies replayed by :mod:`benchmarks.fgd.replay`.

Each policy decides a window of arrivals at once (size 1 for the online
baselines) and returns one :class:`~benchmarks.fgd.cluster.Decision` or None
(dropped) per pod.  The replay, not the policy, applies decisions, after the
independent checker in :mod:`benchmarks.fgd.feasible` has accepted them.
"""

from benchmarks.fgd.policies.base import Policy as Policy
