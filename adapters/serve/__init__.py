"""``placewise serve``: the kube-scheduler extender / binder / Kueue-admission sidecar.

It watches the cluster through the official client, keeps the batch solver's
snapshot, re-solves on change and makes the plan happen: gangs bind whole on
their planned hosts, victims are evicted, Kueue Workloads get admissions.
See docs/serve.md.
"""

from placewise.adapters.serve.app import Sidecar as Sidecar
from placewise.adapters.serve.app import discover as discover
from placewise.adapters.serve.config import ServeConfig as ServeConfig
from placewise.adapters.serve.kube import Kube as Kube
