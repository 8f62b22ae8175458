"""``placewise serve``: delegates to :mod:`placewise.adapters.serve.cli`."""

from __future__ import annotations

from placewise.adapters.serve.cli import register as register
from placewise.adapters.serve.cli import run as run
