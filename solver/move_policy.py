"""The ``moves`` section of a policy file: the move budget and who may move.

```yaml
moves:
  budget:
    count: 2              # at most 2 moves per plan
    lost_gpu_hours: 4.0   # at most 4 GPU-hours of work thrown away
  price: 1.0              # GPUs a gang must gain per GPU-hour its moves lose
  movable:                # besides the placewise.io/movable: "true" label
    priority_at_most: 100 # running workloads of priority <= 100
    queues: [team-a]      # running workloads of these ClusterQueues
```

Moves are off without a budget (:class:`~placewise.models.moves.MoveRules`).
Every field is checked here, with its path, so a bad file stops the command
with the file, the object and the field (exit 2) rather than deep in a
model; ClusterQueues are checked against the instance once it is loaded
(:func:`check_queues`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from placewise.models.moves import MoveRules, unknown_queues
from placewise.models.snapshot import Snapshot

MAX_COUNT = 10**4
MAX_LOST_GPU_HOURS = 10.0**9
MAX_PRICE = 1000
"""As the policy's ``preemption_price``: beyond it no move ever pays."""


class PolicyError(ValueError):
    """A policy value that is wrong, with the field it is in."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def parse_moves(raw: object) -> MoveRules:
    """The ``moves`` mapping as rules; raises :class:`PolicyError`."""
    if raw is None:
        return MoveRules()
    top = _mapping(raw, "moves", ("budget", "movable", "price"))
    budget = _mapping(top.get("budget"), "moves.budget", ("count", "lost_gpu_hours"))
    movable = _mapping(
        top.get("movable"), "moves.movable", ("priority_at_most", "queues")
    )
    count = budget.get("count")
    if count is not None:
        count = _integer(count, "moves.budget.count", 0, MAX_COUNT)
    lost = budget.get("lost_gpu_hours")
    if lost is not None:
        field = "moves.budget.lost_gpu_hours"
        if isinstance(lost, bool) or not isinstance(lost, int | float):
            raise PolicyError(field, f"must be a number of GPU-hours, got {lost!r:.80}")
        if not math.isfinite(lost) or not 0 <= lost <= MAX_LOST_GPU_HOURS:
            raise PolicyError(field, f"must be in [0, {MAX_LOST_GPU_HOURS:g}]")
        lost = float(lost)
    price = top.get("price")
    if price is not None:
        if isinstance(price, bool) or not isinstance(price, int | float):
            raise PolicyError("moves.price", f"must be a number, got {price!r:.80}")
        if not math.isfinite(price) or not 0 <= price <= MAX_PRICE:
            raise PolicyError("moves.price", f"must be in [0, {MAX_PRICE}]")
        price = float(price)
    prio = movable.get("priority_at_most")
    if prio is not None:
        prio = _integer(prio, "moves.movable.priority_at_most", -(2**31), 2**31 - 1)
    queues = movable.get("queues", [])
    if not isinstance(queues, list) or not all(
        isinstance(q, str) and q for q in queues
    ):
        raise PolicyError("moves.movable.queues", "must be a list of ClusterQueues")
    return MoveRules(
        count=count,
        lost_gpu_hours=lost,
        priority_at_most=prio,
        queues=tuple(sorted(set(queues))),
        price=price,
    )


def check_queues(rules: MoveRules, snapshot: Snapshot) -> None:
    """A move policy naming a ClusterQueue the instance lacks is an error
    (a typo would silently make nothing movable)."""
    missing = unknown_queues(rules, snapshot.cluster_queues)
    if missing:
        raise PolicyError(
            "moves.movable.queues", f"unknown ClusterQueue(s) {missing[:10]}"
        )


def _mapping(raw: object, field: str, keys: tuple[str, ...]) -> Mapping[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise PolicyError(field, "must be a mapping")
    unknown = sorted(str(k)[:80] for k in raw if k not in keys)
    if unknown:
        raise PolicyError(field, f"unknown keys {unknown}; known: {list(keys)}")
    return raw


def _integer(value: object, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(field, f"must be an integer, got {value!r:.80}")
    if not low <= value <= high:
        raise PolicyError(field, f"must be in [{low}, {high}], got {value}")
    return value
