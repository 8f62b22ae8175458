"""A loopback Kubernetes API-server emulator, driven through the official client.

``Emulator(objects).start()`` serves the real REST protocol on 127.0.0.1:
list/watch with resourceVersions, bookmarks and 410 expiry, optimistic
concurrency, the three patch types, pods/binding, pods/eviction with PDBs,
CRD-style Kueue and gang kinds, Leases, and injectable faults.
"""

from placewise.adapters.emulator.emulator import Emulator
from placewise.adapters.emulator.extender import ExtenderConfig
from placewise.adapters.emulator.faults import Faults
from placewise.adapters.emulator.kueue_standin import KueueControllers
from placewise.adapters.emulator.scheduler_standin import Outcome, SchedulerStandin

__all__ = [
    "Emulator",
    "ExtenderConfig",
    "Faults",
    "KueueControllers",
    "Outcome",
    "SchedulerStandin",
]
