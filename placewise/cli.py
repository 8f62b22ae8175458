"""The ``placewise`` program: which subcommands it has, in help order.

The composition root, above every layer: the adapters' commands and the
benchmark command (which needs the whole harness) meet only here, so
``adapters`` never imports ``benchmarks``.  The console script and
``python -m placewise`` both enter through :func:`main`.
"""

from __future__ import annotations

import argparse

from placewise.adapters.cli import bound, emulate, generate, serve, solve, validate
from placewise.adapters.cli import main as cli
from placewise.benchmarks import cli as bench
from placewise.benchmarks.replay import command as simulate
from placewise.benchmarks.sweep import command as sweep

COMMANDS: tuple[cli.Command, ...] = (
    solve,
    validate,
    bound,
    generate,
    bench,
    simulate,
    sweep,
    emulate,
    serve,
)


def build_parser() -> argparse.ArgumentParser:
    return cli.build_parser(COMMANDS)


def main(argv: list[str] | None = None) -> int:
    return cli.main(COMMANDS, argv)
