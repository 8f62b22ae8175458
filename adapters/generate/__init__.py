"""Seeded synthetic instances: ``placewise generate`` and the benchmark families.

Public API::

    from placewise.adapters.generate import GeneratorConfig, generate, write, family

    config = family("fragmented")                 # or GeneratorConfig.from_file(path)
    objects = generate(config, seed=1)            # list of Kubernetes objects (dicts)
    write(objects, "instance.yaml")               # or fmt="json" for a kubectl List

The ``generate`` subcommand is :mod:`placewise.adapters.cli.generate`.  The
package is pure Python + numpy (and PyYAML for writing); it imports nothing
from the solver.
"""

from __future__ import annotations

from placewise.adapters.generate.config import ConfigError as ConfigError
from placewise.adapters.generate.config import GeneratorConfig as GeneratorConfig
from placewise.adapters.generate.config import NodeType as NodeType
from placewise.adapters.generate.config import PodShape as PodShape
from placewise.adapters.generate.config import PriorityClassSpec as PriorityClassSpec
from placewise.adapters.generate.config import QueueConfig as QueueConfig
from placewise.adapters.generate.config import WorkloadClass as WorkloadClass
from placewise.adapters.generate.core import generate as generate
from placewise.adapters.generate.core import summary as summary
from placewise.adapters.generate.families import FAMILIES as FAMILIES
from placewise.adapters.generate.families import family as family
from placewise.adapters.generate.io import dumps as dumps
from placewise.adapters.generate.io import write as write

__all__ = [
    "FAMILIES",
    "ConfigError",
    "GeneratorConfig",
    "NodeType",
    "PodShape",
    "PriorityClassSpec",
    "QueueConfig",
    "WorkloadClass",
    "dumps",
    "family",
    "generate",
    "summary",
    "write",
]
