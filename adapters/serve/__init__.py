"""``placewise serve``: the kube-scheduler extender / binder / Kueue-admission sidecar.

It watches the cluster through the official client, keeps the batch solver's
snapshot, re-solves on change and makes the plan happen: gangs bind whole on
their planned hosts, victims are evicted, Kueue Workloads get admissions.
See docs/serve.md.

Rooms (as kopf groups an operator):

* ``kube/`` — the client layer: the API client, the informer caches, the
  leader Lease, Events.  Only it imports ``kubernetes``.
* ``engine/`` — the solve engine: caches to snapshot, the solve loop and its
  stability rule, the plan projected onto pods, preemption, metrics.
* ``modes/`` — how the plan reaches the cluster: scheduler extender, binder,
  Kueue admission, MultiKueue dispatch, and the actuator that runs one.
* top level — ``app`` (one replica, wiring the rooms), ``server`` (the HTTP
  listeners), ``config`` (the settings).

The MultiKueue dispatcher's command line lives with the other commands, in
:mod:`placewise.adapters.cli.multikueue`.
"""

from placewise.adapters.serve.app import Sidecar as Sidecar
from placewise.adapters.serve.app import discover as discover
from placewise.adapters.serve.config import ServeConfig as ServeConfig
from placewise.adapters.serve.kube.client import Kube as Kube
