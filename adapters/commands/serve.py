"""``placewise serve``: delegates to :mod:`adapters.serve.cli`."""

from __future__ import annotations

from adapters.serve.cli import register as register
from adapters.serve.cli import run as run
