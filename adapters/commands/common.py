"""Helpers shared by the subcommands: loading instances, warnings, spinners."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence

from rich.console import Console

from placewise.adapters.loader import load_snapshot
from placewise.models.snapshot import Snapshot

log = logging.getLogger("placewise")


def load(paths: Sequence[str]) -> Snapshot:
    """Load instances and log their warnings (raises InstanceError -> exit 2)."""
    with spinner(f"loading {len(paths)} file(s)"):
        snap = load_snapshot(paths)
    for w in snap.warnings:
        log.warning("%s", w)
    return snap


@contextlib.contextmanager
def spinner(message: str) -> Iterator[None]:
    """A progress spinner on a TTY (stderr); silent when piped or in tests."""
    if not sys.stderr.isatty():
        yield
        return
    console = Console(stderr=True)
    with console.status(message):
        yield


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
