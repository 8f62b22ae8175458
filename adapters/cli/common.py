"""Helpers shared by the subcommands: loading instances, warnings, number flags."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import TypeAlias

from placewise.adapters.cli.status import status
from placewise.adapters.io.loader import load_snapshot
from placewise.models.snapshot import Snapshot

log = logging.getLogger("placewise")

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``register`` of every subcommand module receives."""


def load(paths: Sequence[str]) -> Snapshot:
    """Load instances and log their warnings (raises InstanceError -> exit 2)."""
    with status(f"loading {len(paths)} file(s)"):
        snap = load_snapshot(paths)
    for w in snap.warnings:
        log.warning("%s", w)
    return snap


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value
