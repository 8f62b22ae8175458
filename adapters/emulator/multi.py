"""Several emulated clusters at once: a MultiKueue manager and its workers.

``placewise emulate [--from MANAGER...] --cluster NAME=FILE[,FILE...] ...``
serves each cluster on a port of its own and writes one kubeconfig with a
context per cluster (``manager`` for the ``--from`` files, each worker
under its name), so ``kubectl --context east get workloads`` and
``placewise serve --mode multikueue --worker east=KUBECONFIG`` reach the
right one.  :class:`Clusters` is the same thing for tests.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from placewise.adapters.emulator.emulator import Emulator
from placewise.adapters.emulator.kubeconfig import write_multi_kubeconfig
from placewise.adapters.emulator.kueue_standin import KueueControllers
from placewise.adapters.io.loader import load_objects
from placewise.models.errors import InstanceError, Location, Problem

JSON = dict[str, Any]
MANAGER = "manager"


class Clusters:
    """Named emulators, started and stopped together."""

    def __init__(self, emulators: dict[str, Emulator]) -> None:
        self.emulators = emulators

    def start(self) -> Clusters:
        started = []
        try:
            for emu in self.emulators.values():
                started.append(emu.start())
        except OSError:
            for emu in started:
                emu.stop()
            raise
        return self

    def stop(self) -> None:
        for emu in self.emulators.values():
            emu.stop()

    def __getitem__(self, name: str) -> Emulator:
        return self.emulators[name]

    @property
    def urls(self) -> dict[str, str]:
        return {n: e.url for n, e in self.emulators.items()}

    def kubeconfig(self, path: str | Path, current: str | None = None) -> Path:
        return write_multi_kubeconfig(path, self.urls, current or next(iter(self.urls)))


def load(args: argparse.Namespace) -> dict[str, list[JSON]]:
    """Every cluster's objects; problems name the cluster, all listed."""
    from placewise.adapters.multicluster import parse_workers

    workers = parse_workers(args.cluster)
    problems: list[Problem] = []
    out: dict[str, list[JSON]] = {}
    if args.instances:
        out[MANAGER] = load_objects(args.instances)
    for w in workers:
        if w.name == MANAGER and args.instances:
            where = Location(field=f"--cluster {w.name}=...")
            problems.append(Problem(where, "'manager' names the --from files"))
            continue
        try:
            out[w.name] = load_objects(w.files)
        except InstanceError as exc:
            problems += [
                Problem(p.location, f"cluster {w.name}: {p.message}")
                for p in exc.problems
            ]
    if problems:
        raise InstanceError(problems)
    return out


def run(args: argparse.Namespace) -> int:
    """Serve every cluster until SIGINT/SIGTERM (the caller's ``done``)."""
    import signal

    try:
        objects = load(args)
        controllers = args.kueue_controllers is not None
        clusters = Clusters(
            {
                name: Emulator(
                    objs,
                    host=args.host,
                    port=args.port if i == 0 else 0,
                    kubelet=not args.no_kubelet,
                    bookmark_interval=args.bookmark_interval,
                    kueue_controllers=KueueControllers(
                        args.kueue_controllers, args.kueue_finish_after
                    )
                    if controllers
                    else None,
                )
                for i, (name, objs) in enumerate(objects.items())
            }
        )
    except (InstanceError, ValueError) as exc:
        print(f"placewise emulate: {exc}", file=sys.stderr)
        return 2
    try:
        clusters.start()
    except OSError as exc:
        print(f"placewise emulate: cannot listen: {exc}", file=sys.stderr)
        return 2
    standin = None
    if controllers and MANAGER in objects and len(objects) > 1:
        # Kueue's controllers include MultiKueue's: copy nominated Workloads.
        from placewise.adapters.emulator.multikueue_standin import MultiKueueStandin

        standin = MultiKueueStandin(
            clusters[MANAGER].api_client(),
            {n: e.api_client() for n, e in clusters.emulators.items() if n != MANAGER},
        ).start()
    done = threading.Event()
    previous = {
        s: signal.signal(s, lambda *_: done.set())
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        if args.kubeconfig_out:
            clusters.kubeconfig(args.kubeconfig_out)
        for name, emu in clusters.emulators.items():
            print(
                f"placewise emulator {name} listening on {emu.url} "
                f"({len(objects[name])} objects)",
                flush=True,
            )
        if args.kubeconfig_out:
            print(
                f"kubeconfig written to {args.kubeconfig_out} (a context per cluster)",
                flush=True,
            )
        done.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if standin is not None:
            standin.stop()
        clusters.stop()
    return 0
