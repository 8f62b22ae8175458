"""The machinery of the ``placewise`` command line: global flags, logging, exit codes.

Each subcommand is a module exposing ``register(subparsers)`` and
``run(args) -> int``; which ones make up the program is the composition
root's choice (:mod:`placewise.cli`), so this layer never imports the
benchmarks that sit above it.  The global flags (``-v``, ``--version``) are
accepted before *and* after the subcommand: people type ``placewise solve
x.yaml -v`` and argparse alone rejects that.  Input errors become exit 2
with every located problem printed, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Protocol

from placewise.adapters.cli.common import Subparsers
from placewise.adapters.cli.status import LogHandler
from placewise.models.errors import InstanceError

LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


class Command(Protocol):
    """A subcommand module."""

    def register(self, subparsers: Subparsers) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


def _version() -> str:
    try:
        return version("placewise")
    except PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0+unknown"


def _global_flags(parser: argparse.ArgumentParser, dest: str) -> None:
    """``-v``/``--version`` on the top parser and on every subcommand.

    A subparser parses into a namespace of its own and copies it over the
    top one, so the flags after the subcommand count under another ``dest``
    (added up in :func:`main`) instead of resetting the ones before it.
    """
    parser.add_argument(
        "--version", action="version", version=f"placewise {_version()}"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        dest=dest,
        action="count",
        default=0,
        help="say what the solver is doing on stderr: -v its stages, "
        "incumbents and bounds, -vv debug detail (before or after COMMAND)",
    )


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placewise",
        description=(
            "Constraint-optimization placement for Kubernetes batch and AI clusters: "
            "Kueue objects in, Kueue-shaped admission plans out."
        ),
    )
    _global_flags(parser, "verbose")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands:
        command.register(sub)
    for subparser in sub.choices.values():
        _global_flags(subparser, "verbose_after")
    return parser


def verbosity_level(count: int) -> int:
    """The stderr log level for ``count`` ``-v`` flags."""
    return logging.WARNING - 10 * min(count, 2)


def _configure_logging(level: int) -> None:
    """Log records on stderr at ``level``, unless the host process (a test
    runner, an embedding program) has configured logging already."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = LogHandler()
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.setLevel(level)  # the status line may lower a logger's level
    root.addHandler(handler)
    root.setLevel(level)


def main(commands: Sequence[Command], argv: list[str] | None = None) -> int:
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    _configure_logging(
        verbosity_level(args.verbose + getattr(args, "verbose_after", 0))
    )
    run: Any = getattr(args, "run", None)
    if not run:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = run(args)
    except InstanceError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piping into head
        return 0
    return code
