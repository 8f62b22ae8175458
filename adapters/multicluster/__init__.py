"""Multi-cluster dispatch (MultiKueue): load, combine, read plans back, check.

Public API::

    fed = load_federation(["manager.yaml"], [Worker("us", ("us.yaml",)), ...])
    plan = solve(fed.snapshot, params)          # any solver, one snapshot
    print(user_plan(fed.snapshot, plan))        # cluster: on each entry
    validate_clusters(fed, user_plan(...))      # per worker, and across them
"""

from placewise.adapters.multicluster.combine import ClusterCosts as ClusterCosts
from placewise.adapters.multicluster.combine import Federation as Federation
from placewise.adapters.multicluster.combine import (
    federation_from_raws as federation_from_raws,
)
from placewise.adapters.multicluster.load import Worker as Worker
from placewise.adapters.multicluster.load import load_federation as load_federation
from placewise.adapters.multicluster.load import parse_workers as parse_workers
from placewise.adapters.multicluster.plans import user_plan as user_plan
from placewise.adapters.multicluster.plans import (
    validate_clusters as validate_clusters,
)

__all__ = [
    "ClusterCosts",
    "Federation",
    "Worker",
    "federation_from_raws",
    "load_federation",
    "parse_workers",
    "user_plan",
    "validate_clusters",
]
