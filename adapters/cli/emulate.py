"""``placewise emulate``: serve instance files through an emulated API server.

``register(subparsers)`` adds the subcommand to the project CLI's argparse
tree and sets ``run=run`` (the project CLI dispatches on ``args.run``);
``run(args)`` blocks until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from placewise.adapters.cli.common import Subparsers
from placewise.adapters.emulator.emulator import Emulator
from placewise.adapters.emulator.kueue_standin import KueueControllers
from placewise.adapters.io.loader import load_objects
from placewise.models.errors import InstanceError


def register(subparsers: Subparsers) -> None:
    """Add ``emulate`` to a parser's subcommands."""
    p = subparsers.add_parser(
        "emulate",
        help="serve instance files through an emulated Kubernetes API server",
        description="Start a loopback Kubernetes API server loaded with the objects of "
        "the given instance files, for dry runs of the live adapter with kubectl or "
        "any client. Runs until interrupted.",
    )
    msg = "instance file(s): YAML streams or kind: List of Kubernetes objects"
    p.add_argument(
        "--from",
        dest="instances",
        nargs="+",
        metavar="INSTANCE",
        help=msg + " (with --cluster: the MultiKueue manager, optional)",
    )
    p.add_argument(
        "--cluster",
        action="append",
        metavar="NAME=FILE[,FILE...]",
        help="serve one more cluster (a MultiKueue worker) on a port of its own; "
        "repeat per cluster; --kubeconfig-out then has a context per cluster",
    )
    p.add_argument(
        "--port",
        type=int,
        default=0,
        help="port to listen on (0 = any free port; the chosen one is printed)",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)"
    )
    p.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        help="write a kubeconfig pointing at the emulator to FILE",
    )
    p.add_argument(
        "--no-kubelet",
        action="store_true",
        help="leave bound pods Pending instead of starting them",
    )
    p.add_argument(
        "--bookmark-interval",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="seconds between watch bookmarks (default 60, as a real apiserver)",
    )
    p.add_argument(
        "--kueue-controllers",
        nargs="?",
        type=float,
        const=1.0,
        default=None,
        metavar="RELEASE_SECONDS",
        help="stand in for Kueue's controllers: an evicted Workload's reservation "
        "is cleared this many seconds later (default 1) so it is pending again; "
        "with --cluster and --from, MultiKueue's too (nominated manager "
        "Workloads are copied to their worker, clusterName set once admitted)",
    )
    p.add_argument(
        "--kueue-finish-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --kueue-controllers: admitted Workloads finish (Finished=True) "
        "after running this long",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Load, serve, print the URL; 2 for unreadable input, 0 after a clean shutdown."""
    if args.cluster:
        from placewise.adapters.emulator import multi

        return multi.run(args)
    if not args.instances:
        print("placewise emulate: --from INSTANCE... is required", file=sys.stderr)
        return 2
    try:
        objects = load_objects(args.instances)
        controllers = None
        if args.kueue_controllers is not None:
            controllers = KueueControllers(
                args.kueue_controllers, args.kueue_finish_after
            )
        elif args.kueue_finish_after is not None:
            raise ValueError("--kueue-finish-after needs --kueue-controllers")
        emulator = Emulator(
            objects,
            host=args.host,
            port=args.port,
            kubelet=not args.no_kubelet,
            bookmark_interval=args.bookmark_interval,
            kueue_controllers=controllers,
        )
    except InstanceError as exc:
        for problem in exc.problems:
            print(f"placewise emulate: error: {problem}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"placewise emulate: error: {exc}", file=sys.stderr)
        return 2
    try:
        emulator.start()
    except OSError as exc:
        print(
            f"placewise emulate: cannot listen on {args.host}:{args.port}: {exc}",
            file=sys.stderr,
        )
        return 2
    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if args.kubeconfig_out:
            emulator.kubeconfig(args.kubeconfig_out)
        print(
            f"placewise emulator listening on {emulator.url} (port {emulator.port}, "
            f"{len(objects)} objects)",
            flush=True,
        )
        if args.kubeconfig_out:
            print(f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        done.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        emulator.stop()
    return 0
