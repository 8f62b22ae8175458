"""The ``placewise`` command line.

Each subcommand lives in its own module exposing ``register(subparsers)``
and ``run(args) -> int``; this module only wires them together, sets up
logging on stderr and maps input errors to exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from importlib.metadata import PackageNotFoundError, version

from placewise.models.errors import InstanceError

# (module, attribute holding register) in help order.
COMMANDS = (
    "placewise.adapters.commands.solve",
    "placewise.adapters.commands.validate",
    "placewise.adapters.commands.bound",
    "placewise.adapters.generate",
    "placewise.adapters.commands.bench",
    "placewise.adapters.emulator.cli",
    "placewise.adapters.commands.serve",
)

log = logging.getLogger("placewise")


def _version() -> str:
    try:
        return version("placewise")
    except PackageNotFoundError:  # pragma: no cover - running from a bare tree
        return "0+unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="placewise",
        description=(
            "Constraint-optimization placement for Kubernetes batch and AI clusters: "
            "Kueue objects in, Kueue-shaped admission plans out."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"placewise {_version()}"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more log output on stderr (-vv for debug)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # that command has not landed in this build
            raise
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(
        level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s"
    )
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.run(args)
    except InstanceError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piping into head
        return 0
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
