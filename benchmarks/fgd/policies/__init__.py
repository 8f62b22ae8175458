"""Placement policies replayed by :mod:`placewise.benchmarks.fgd.replay`.

Each policy decides a window of arrivals at once (size 1 for the online
baselines) and returns one :class:`~placewise.benchmarks.fgd.cluster.Decision` or None
(dropped) per pod.  The replay, not the policy, applies decisions, after the
independent checker in :mod:`placewise.benchmarks.fgd.feasible` has accepted them.
"""

from placewise.benchmarks.fgd.policies.base import Policy as Policy
