"""``placewise generate``: write a seeded synthetic instance."""

from __future__ import annotations

import argparse
import logging
import re
import sys
import time
from typing import Any, Literal

from placewise.adapters.cli.common import Subparsers
from placewise.adapters.generate import families
from placewise.adapters.generate.config import ConfigError, GeneratorConfig
from placewise.adapters.generate.core import generate, summary
from placewise.adapters.generate.io import write

log = logging.getLogger("placewise.generate")
_SHAPE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*[xX]\s*(\d+)\s*$")


class UsageError(ValueError):
    """Flags that cannot be combined into a config."""


def register(subparsers: Subparsers) -> None:
    """Add the ``generate`` subcommand to a CLI's subparsers."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "generate",
        help="write a seeded synthetic cluster instance (nodes, queues, workloads)",
        description=(
            "Write a realistic, deterministic instance: GPU hosts with block/rack/host "
            "labels and a Topology, ResourceFlavors, ClusterQueues in cohorts, running "
            "pods and Workloads fragmenting the hosts, and pending single pods and "
            "gangs. "
            "The same flags and seed always give the same bytes."
        ),
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--family",
        metavar="NAME",
        help="preset family (default: default); one of: "
        + ", ".join(families.FAMILIES)
        + "; or multi-cluster (a MultiKueue manager and three regions: -o names "
        "a directory, --nodes is hosts per region, --pending the manager's "
        "Workloads)",
    )
    source.add_argument("--config", metavar="FILE", help="YAML generator config")
    p.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="host count (racks fill in order; the last may be partial)",
    )
    p.add_argument(
        "--shape",
        metavar="BxRxH",
        help="blocks x racks per block x hosts per rack, e.g. 2x8x16",
    )
    p.add_argument("--pending", type=int, metavar="M", help="pending Workloads")
    p.add_argument(
        "--running-pods",
        type=int,
        metavar="N",
        help="exact number of plain running pods",
    )
    p.add_argument(
        "--seed", type=int, default=0, metavar="S", help="random seed (default 0)"
    )
    p.add_argument(
        "--api-version",
        choices=("v1beta1", "v1beta2"),
        help="Kueue API version of the Kueue objects (default: the config's)",
    )
    p.add_argument(
        "--format",
        choices=("yaml", "json"),
        help="multi-document YAML or a kubectl-style JSON List (default: JSON "
        "when -o ends in .json, else YAML)",
    )
    p.add_argument(
        "-o", "--output", metavar="FILE", help="output file (default: stdout)"
    )
    p.set_defaults(run=run)


def build_config(args: argparse.Namespace) -> GeneratorConfig:
    """The family or config file, with the command-line overrides applied."""
    if args.config:
        config = GeneratorConfig.from_file(args.config)
    else:
        try:
            config = families.family(args.family or "default")
        except KeyError as exc:
            raise UsageError(str(exc.args[0])) from None
    changes: dict[str, Any] = {}
    if args.shape is not None:
        m = _SHAPE.match(args.shape)
        if m is None:
            raise UsageError(
                f"--shape {args.shape!r}: expected BLOCKSxRACKSxHOSTS, e.g. 2x8x16"
            )
        b, r, h = (int(g) for g in m.groups())
        if min(b, r, h) < 1:
            raise UsageError(f"--shape {args.shape!r}: every dimension must be >= 1")
        if args.nodes is not None and args.nodes != b * r * h:
            raise UsageError(
                f"--nodes {args.nodes} contradicts --shape {args.shape} "
                f"({b * r * h} hosts)"
            )
        changes.update(blocks=b, racks_per_block=r, hosts_per_rack=h, nodes=None)
    elif args.nodes is not None:
        if args.nodes < 1:
            raise UsageError(f"--nodes {args.nodes}: must be >= 1")
        changes["nodes"] = args.nodes
    if args.pending is not None:
        if args.pending < 0:
            raise UsageError(f"--pending {args.pending}: must be >= 0")
        changes["pending"] = args.pending
    if args.running_pods is not None:
        if args.running_pods < 0:
            raise UsageError(f"--running-pods {args.running_pods}: must be >= 0")
        changes["running_pods"] = args.running_pods
    if args.api_version is not None:
        changes["api_version"] = args.api_version
    return config.with_overrides(**changes) if changes else config


def output_format(args: argparse.Namespace) -> Literal["yaml", "json"]:
    """``--format``, else what the output file's name says (the loader reads
    a ``.json`` file as JSON, so writing YAML there made a file it refused)."""
    named = args.format or ("json" if str(args.output or "").endswith(".json") else "")
    return "json" if named == "json" else "yaml"


def run(args: argparse.Namespace) -> int:
    """Generate and write; 2 with a message on stderr for bad usage or config."""
    if args.family == MULTI_CLUSTER:
        return _multi_cluster(args)
    try:
        config = build_config(args)
        start = time.perf_counter()
        objects = generate(config, args.seed)
        built = time.perf_counter()
        write(objects, args.output, fmt=output_format(args))
    except (UsageError, ConfigError) as exc:
        print(f"placewise generate: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"placewise generate: error: cannot write {args.output}: {exc}",
            file=sys.stderr,
        )
        return 2
    log.info(
        "family %s, seed %d: %s (generated in %.2fs, written in %.2fs)",
        config.name,
        args.seed,
        summary(objects),
        built - start,
        time.perf_counter() - built,
    )
    return 0


MULTI_CLUSTER = "multi-cluster"


def _multi_cluster(args: argparse.Namespace) -> int:
    """``--family multi-cluster -o DIR``: manager.yaml and one file per region."""
    from placewise.adapters.generate.multicluster import write_multi_cluster

    if not args.output or args.output == "-":
        print(
            "placewise generate: error: --family multi-cluster writes several "
            "files: -o DIR names their directory",
            file=sys.stderr,
        )
        return 2
    for flag in ("shape", "running_pods", "config", "api_version"):
        if getattr(args, flag, None) is not None:
            name = "--" + flag.replace("_", "-")
            print(
                f"placewise generate: error: {name} does not apply to multi-cluster",
                file=sys.stderr,
            )
            return 2
    hosts = 300 if args.nodes is None else args.nodes
    pending = 150 if args.pending is None else args.pending
    if hosts < 1 or pending < 0:
        print(
            "placewise generate: error: --nodes must be >= 1, --pending >= 0",
            file=sys.stderr,
        )
        return 2
    try:
        paths = write_multi_cluster(
            args.output, args.seed, hosts, pending, args.format or "yaml"
        )
    except OSError as exc:
        print(
            f"placewise generate: error: cannot write {args.output}: {exc}",
            file=sys.stderr,
        )
        return 2
    log.info(
        "multi-cluster, seed %d: %s", args.seed, ", ".join(map(str, paths.values()))
    )
    return 0
