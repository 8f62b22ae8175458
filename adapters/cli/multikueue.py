"""``placewise serve --mode multikueue --kubeconfig MANAGER --worker NAME=CONFIG``.

The manager comes from ``--kubeconfig``/``--context`` (or ``--in-cluster``);
each ``--worker`` names a worker cluster (as its MultiKueueCluster) and a
kubeconfig: its context of the same name if it has one, else its current
context — so the one kubeconfig ``placewise emulate --cluster`` writes works
for every worker.  Health and metrics are served on ``--metrics-listen``
(``/healthz``, ``/readyz``: a first plan exists, ``/metrics``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

import yaml

from placewise.adapters.multicluster import parse_workers
from placewise.adapters.serve.kube.client import ApiError, Kube
from placewise.adapters.serve.modes.multikueue import DispatchConfig, Dispatcher
from placewise.adapters.serve.server import (
    PROMETHEUS_TYPE,
    TEXT_TYPE,
    HttpServer,
    Limits,
    Reply,
    Routes,
)
from placewise.models.errors import InstanceError, Location, Problem

log = logging.getLogger("placewise.serve")


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--worker",
        action="append",
        metavar="NAME=KUBECONFIG",
        help="multikueue mode: a worker cluster (its MultiKueueCluster's name) "
        "and its kubeconfig (the context named NAME if present, else the "
        "current one); repeat per worker",
    )
    p.add_argument(
        "--renominate-after",
        type=float,
        default=300.0,
        metavar="SEC",
        help="multikueue mode: nominate another worker when the chosen one has "
        "not admitted the Workload after this long (default: %(default)s, "
        "Kueue's incremental dispatcher round)",
    )


def _context(path: str, name: str) -> str | None:
    """``name`` when the kubeconfig has a context of that name."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise InstanceError(
            [Problem(Location(file=path, field="--worker"), f"unreadable: {exc}")]
        ) from None
    contexts = doc.get("contexts") if isinstance(doc, dict) else None
    names = {c.get("name") for c in contexts or [] if isinstance(c, dict)}
    return name if name in names else None


def connect(args: argparse.Namespace) -> tuple[Kube, dict[str, Kube]]:
    """The manager's and every worker's client; exit 2 on bad options."""
    if not args.worker:
        raise InstanceError(
            [Problem(Location(field="--worker"), "multikueue mode needs a --worker")]
        )
    if not (args.kubeconfig or args.in_cluster):
        raise InstanceError(
            [
                Problem(
                    Location(field="--kubeconfig"),
                    "multikueue mode needs the manager cluster (--kubeconfig or "
                    "--in-cluster)",
                )
            ]
        )
    workers = parse_workers(args.worker, flag="--worker")
    problems = [
        Problem(Location(field=f"--worker {w.name}"), "expects one kubeconfig")
        for w in workers
        if len(w.files) != 1
    ]
    if problems:
        raise InstanceError(problems)
    manager = (
        Kube.in_cluster()
        if args.in_cluster
        else Kube.from_kubeconfig(args.kubeconfig, args.context)
    )
    clients = {}
    for w in workers:
        path = w.files[0]
        try:
            clients[w.name] = Kube.from_kubeconfig(path, _context(path, w.name))
        except Exception as exc:  # the kubernetes loader raises several kinds
            problems.append(
                Problem(Location(file=path, field=f"--worker {w.name}"), str(exc))
            )
    if problems:
        raise InstanceError(problems)
    return manager, clients


def config_from(args: argparse.Namespace) -> DispatchConfig:
    extra = {"identity": args.identity} if args.identity else {}
    return DispatchConfig(
        solver=args.solver,
        time_limit=args.time_limit,
        workers=args.workers,
        debounce=args.debounce,
        renominate_after=args.renominate_after,
        leader_elect=not args.no_leader_elect,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name
        if args.lease_name != "placewise-serve"
        else "placewise-dispatcher",
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        **extra,
    )


def main(args: argparse.Namespace) -> int:
    """Run until SIGINT/SIGTERM; 0 after a clean stop, 2 for bad options.
    (``placewise serve`` set the log format before calling this.)"""
    stop = threading.Event()
    previous = {
        s: signal.signal(s, lambda *_: stop.set())
        for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        return run(args, stop)
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    manager, workers = connect(args)
    try:
        dispatcher = Dispatcher(config_from(args), manager, workers).start()
    except ApiError as exc:
        print(f"placewise serve: the manager does not answer: {exc}", file=sys.stderr)
        return 2

    def health() -> Reply:
        ok = dispatcher.alive()
        return (200 if ok else 503), b"ok\n" if ok else b"loop stopped\n", TEXT_TYPE

    def ready() -> Reply:
        ok = dispatcher.last is not None
        return (200 if ok else 503), b"ok\n" if ok else b"no plan yet\n", TEXT_TYPE

    def scrape() -> Reply:
        return 200, dispatcher.metrics.exposition(), PROMETHEUS_TYPE

    routes = {
        "/healthz": health,
        "/livez": health,
        "/readyz": ready,
        "/metrics": scrape,
    }
    host, port = args.metrics_listen
    http = HttpServer(host, port, Routes(routes), Limits(), None, "metrics").start()
    print(
        f"placewise serve (multikueue) dispatching to {', '.join(workers)}; "
        f"metrics on {http.url}/metrics",
        file=sys.stderr,
    )
    try:
        while not stop.wait(0.5):
            pass
    finally:
        dispatcher.stop()
        http.stop()
    return 0
