"""``placewise serve``: argument parsing and the process around one Sidecar.

Without ``--kubeconfig`` it starts the API-server emulator on the bundled
demo (or ``--demo FILE...``) and, in extender and binder modes, the
kube-scheduler stand-in wired to the sidecar, so a new user sees gangs land
at once; with ``--kubeconfig`` it talks to that cluster and nothing else.
Runs until SIGINT/SIGTERM, then releases the Lease (exit 0).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import signal
import socket
import ssl
import sys
import tempfile
import threading
from importlib import resources
from pathlib import Path
from types import FrameType
from typing import Any

from placewise.adapters.cli import multikueue as multikueue_cli
from placewise.adapters.cli.common import (
    Subparsers,
    non_negative_int,
    positive_float,
    read_policy,
)
from placewise.adapters.io.documents import read_text
from placewise.adapters.io.loader import kueue_fair_sharing, load_objects
from placewise.adapters.serve.app import Sidecar
from placewise.adapters.serve.config import MODES, ServeConfig
from placewise.adapters.serve.kube.client import Kube
from placewise.adapters.serve.server import Limits, tls_context
from placewise.models.cluster import FairSharing
from placewise.models.errors import InstanceError, Location, Problem

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve")


def listen_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: port out of range")
    return host or "0.0.0.0", number


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run beside kube-scheduler: watch, re-solve, bind gangs whole",
        description=(
            "Watch the cluster, keep a snapshot, re-solve on change and make the "
            "plan happen: as a kube-scheduler extender (filter/prioritize/preempt/"
            "bind), as a binder of gated pods, or as Kueue's admission writer. "
            "Without --kubeconfig it runs on an embedded emulator with a demo."
        ),
    )
    p.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="talk to this cluster (default: an embedded demo emulator)",
    )
    p.add_argument("--context", help="kubeconfig context (default: current)")
    p.add_argument(
        "--in-cluster",
        action="store_true",
        help="use the pod's service account (when deployed in-cluster)",
    )
    p.add_argument(
        "--listen",
        type=listen_address,
        default=("127.0.0.1", 8888),
        metavar="HOST:PORT",
        help="extender verbs and health (default: 127.0.0.1:8888; keep it on "
        "loopback beside kube-scheduler, or use TLS)",
    )
    p.add_argument(
        "--metrics-listen",
        type=listen_address,
        default=("127.0.0.1", 8889),
        metavar="HOST:PORT",
        help="/metrics and health probes, apart from the extender "
        "(default: 127.0.0.1:8889; in a pod 0.0.0.0:8889)",
    )
    p.add_argument(
        "--enable-debug",
        action="store_true",
        help="serve /debug/plan (the plan, every gang and node) on --listen",
    )
    p.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="serve the extender over HTTPS with this certificate (PEM)",
    )
    p.add_argument("--tls-private-key-file", metavar="FILE", help="its key (PEM)")
    p.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="require client certificates signed by this CA (mutual TLS; "
        "kube-scheduler's tlsConfig certFile/keyFile)",
    )
    p.add_argument(
        "--max-body-bytes",
        type=int,
        default=Limits.max_body,
        metavar="N",
        help="largest request body; larger ones get 413 (default: %(default)s)",
    )
    p.add_argument(
        "--read-timeout",
        type=positive_float,
        default=Limits.read_timeout,
        metavar="SEC",
        help="a request (or TLS handshake) must arrive whole within this "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=Limits.max_connections,
        metavar="N",
        help="connections served at once per listener; more get 503 "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--mode",
        choices=(*MODES, "multikueue"),
        default="extender",
        help="extender: answer kube-scheduler; binder: place gated pods "
        "itself; kueue: write Workload admissions; multikueue: MultiKueue's "
        "dispatcher, nominating a worker cluster per Workload (default: "
        "%(default)s)",
    )
    multikueue_cli.add_options(p)
    p.add_argument(
        "--kueue-config",
        metavar="FILE",
        help="kueue mode: Kueue's Configuration (or its manager ConfigMap) for "
        "fair sharing (default: read kueue-system/kueue-manager-config)",
    )
    p.add_argument(
        "--prefix",
        default="/scheduler",
        help="URL path of the extender verbs (default: %(default)s)",
    )
    p.add_argument(
        "--solver",
        choices=("auto", "cpsat", "greedy"),
        default="auto",
        help="solver per re-solve; failures fall back to greedy (default: %(default)s)",
    )
    p.add_argument(
        "--time-limit",
        type=positive_float,
        default=10.0,
        metavar="SEC",
        help="optimizer budget per re-solve (default: %(default)s)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="optimizer workers (default: %(default)s)",
    )
    p.add_argument(
        "--debounce",
        type=positive_float,
        default=0.5,
        metavar="SEC",
        help="quiet time after a change before re-solving (default: %(default)s)",
    )
    p.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="extender mode: schedulerName(s) whose pods are planned "
        "(default: default-scheduler)",
    )
    p.add_argument(
        "--managed-resource",
        action="append",
        metavar="NAME",
        help="extender mode: plan only pods requesting this resource (the "
        "extender entry's managedResources); repeatable",
    )
    p.add_argument(
        "--gate",
        default="placewise.io/gang",
        help="binder mode: the scheduling gate of managed pods (default: %(default)s)",
    )
    p.add_argument(
        "--topology-levels",
        default="",
        metavar="L1,L2",
        help="node labels above the hostname (highest first) for gangs "
        "outside Kueue, e.g. block,rack labels (default: none, hosts only)",
    )
    p.add_argument(
        "--no-leader-elect",
        action="store_true",
        help="act without holding the Lease (single replica only)",
    )
    p.add_argument(
        "--lease-follow",
        action="store_true",
        help="act only while this pod's kube-scheduler holds the Lease "
        "named by --lease-namespace/--lease-name (never write it)",
    )
    p.add_argument(
        "--lease-namespace",
        default="default",
        metavar="NS",
        help="namespace of the leader-election Lease (default: %(default)s)",
    )
    p.add_argument(
        "--lease-name",
        default="placewise-serve",
        metavar="NAME",
        help="the Lease replicas elect a leader with, or with --lease-follow "
        "kube-scheduler's Lease to follow (default: %(default)s)",
    )
    p.add_argument("--identity", help="leader-election identity (default: host-pid)")
    for flag, default, why in (
        ("lease-duration", 15.0, "a follower waits on an unrenewed Lease"),
        ("renew-deadline", 10.0, "the leader keeps acting without a renewal"),
        ("retry-period", 2.0, "between acquire-or-renew rounds"),
    ):
        p.add_argument(
            f"--leader-elect-{flag}",
            type=float,
            default=default,
            metavar="SECONDS",
            help=f"seconds {why}, as kube-scheduler's flag (default: %(default)s)",
        )
    p.add_argument(
        "--policy",
        metavar="FILE",
        help="YAML objective policy of every re-solve, as 'placewise solve "
        "--policy' (lost-work and reversal prices, reservations; every mode "
        "solves with it); its moves: section lets kueue mode move running "
        "Workloads",
    )
    p.add_argument(
        "--moves",
        type=non_negative_int,
        default=None,
        metavar="K",
        help="kueue mode: at most K moves per plan (running Workloads labelled "
        'placewise.io/movable: "true", or movable by the policy, are evicted '
        "and admitted again elsewhere to let blocked gangs in); overrides the "
        "policy's moves.budget.count (default: the policy's, else no moves)",
    )
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one JSON object per log line, for log pipelines "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--demo",
        nargs="+",
        metavar="FILE",
        help="seed the embedded emulator from these instance files",
    )
    p.add_argument(
        "--kubeconfig-out",
        metavar="FILE",
        help="embedded emulator: write a kubeconfig for kubectl here",
    )
    p.set_defaults(run=run)


def tls_files(args: argparse.Namespace) -> None:
    """The TLS flags go together and their files load; else exit 2, naming
    the flag and file (a typo must not start a plaintext extender)."""
    cert, key, ca = args.tls_cert_file, args.tls_private_key_file, args.client_ca_file

    def bad(flag: str, path: str, why: str) -> InstanceError:
        return InstanceError([Problem(Location(file=path, field=flag), why)])

    if bool(cert) != bool(key):
        flag = "--tls-private-key-file" if cert else "--tls-cert-file"
        raise bad(flag, "", "--tls-cert-file and --tls-private-key-file go together")
    if ca and not cert:
        raise bad("--client-ca-file", ca, "needs --tls-cert-file as well")
    if not cert:
        return
    try:
        tls_context(cert, key, None)
    except (OSError, ssl.SSLError) as exc:
        raise bad("--tls-cert-file/--tls-private-key-file", cert, str(exc)) from None
    if ca:
        try:
            tls_context(cert, key, ca)
        except (OSError, ssl.SSLError) as exc:
            raise bad("--client-ca-file", ca, str(exc)) from None


def config_from(args: argparse.Namespace, listen: tuple[str, int]) -> ServeConfig:
    extra: JSON = {}
    if args.identity:
        extra["identity"] = args.identity
    for flag in ("max_body_bytes", "max_connections"):
        if getattr(args, flag) < 1:
            raise InstanceError(
                [Problem(Location(field="--" + flag.replace("_", "-")), "must be >= 1")]
            )
    lease = (
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
        args.leader_elect_retry_period,
    )
    if not 0 < lease[2] < lease[1] < lease[0]:
        # The deadline must end before anyone may take over, or two act at once.
        raise InstanceError(
            [
                Problem(
                    Location(field="--leader-elect-renew-deadline"),
                    "need 0 < retry period < renew deadline < lease duration",
                )
            ]
        )
    if getattr(args, "kueue_config", None):
        extra["kueue_config"] = read_kueue_config(args.kueue_config)
    policy = read_policy(args.policy, args.moves)
    if policy.moves.enabled and args.mode != "kueue":
        log.warning("moves are carried out in --mode kueue only; ignored")
    return ServeConfig(
        mode=args.mode,
        listen=listen,
        metrics_listen=args.metrics_listen,
        enable_debug=args.enable_debug,
        tls_cert_file=args.tls_cert_file or "",
        tls_key_file=args.tls_private_key_file or "",
        client_ca_file=args.client_ca_file or "",
        limits=Limits(
            max_body=args.max_body_bytes,
            read_timeout=args.read_timeout,
            max_connections=args.max_connections,
        ),
        prefix=args.prefix,
        solver=args.solver,
        time_limit=args.time_limit,
        workers=args.workers,
        debounce=args.debounce,
        scheduler_names=tuple(args.scheduler_name or ("default-scheduler",)),
        gate=args.gate,
        managed_resources=tuple(args.managed_resource or ()),
        default_topology=tuple(x for x in args.topology_levels.split(",") if x),
        leader_elect=not args.no_leader_elect,
        lease_follow=args.lease_follow,
        lease_namespace=args.lease_namespace,
        lease_name=args.lease_name,
        lease_duration=lease[0],
        renew_deadline=lease[1],
        retry_period=lease[2],
        policy=policy,
        **extra,
    )


def read_kueue_config(path: str) -> FairSharing:
    """``--kueue-config FILE``; unreadable or bad is exit 2 (InstanceError)."""
    problems: list[Problem] = []
    text = read_text(path, problems, "Configuration")
    if text is None:
        raise InstanceError(problems)
    fair, warnings = kueue_fair_sharing(text, path)
    for w in warnings:
        log.warning("%s", w)
    return fair


def demo_objects(paths: list[str] | None, mode: str, gate: str) -> list[JSON]:
    """The demo cluster; pods get the binder gate in binder mode, and are left
    out in kueue mode (Kueue would own them)."""
    if paths:
        objects = load_objects(paths)
    else:
        folder = resources.files("placewise.adapters") / "data"
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for item in sorted(folder.iterdir(), key=lambda x: x.name):
                if item.name.startswith("serve-demo-") and item.name.endswith(".yaml"):
                    target = Path(tmp) / item.name
                    target.write_text(item.read_text())
                    files.append(str(target))
            objects = load_objects(files)
    out = []
    for obj in objects:
        if obj.get("kind") == "Pod" and not (obj.get("spec") or {}).get("nodeName"):
            if mode == "kueue":
                continue
            if mode == "binder":
                obj = copy.deepcopy(obj)
                obj["spec"].setdefault("schedulingGates", []).append({"name": gate})
        out.append(obj)
    return out


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, thread, message."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S")
            + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "thread": record.threadName,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


TEXT_FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def log_formatter(kind: str) -> logging.Formatter:
    """serve runs for days and its lines are read next to the API server's
    and Kueue's: each says when, in text as in JSON (the one-shot commands'
    ``-v`` lines do without)."""
    if kind == "json":
        return JsonFormatter()
    return logging.Formatter(TEXT_FORMAT, TIME_FORMAT)


def listen_error(address: tuple[str, int]) -> str | None:
    """Why the extender's address cannot be bound, or None.

    Checked before anything starts (the embedded emulator, informers, the
    Lease), so a taken port is a usage error (exit 2), not a traceback
    after half the process is up.  Same options as the HTTP server's bind.
    """
    if address[1] == 0:
        return None
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def run(args: argparse.Namespace) -> int:
    for log_handler in logging.getLogger().handlers:
        log_handler.setFormatter(log_formatter(args.log_format))
    if args.mode == "multikueue":
        return multikueue_cli.main(args)
    why = listen_error(args.listen)
    if why is not None:
        host, port = args.listen
        print(
            f"placewise serve: cannot listen on {host}:{port}: {why}", file=sys.stderr
        )
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    tls_files(args)
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    emulator: Any = None
    standin: Any = None
    kubeconfig_out: Path | None = None
    try:
        cfg = config_from(args, args.listen)  # a bad --kueue-config: exit 2 now
        if args.in_cluster:
            kube = Kube.in_cluster()
        elif args.kubeconfig:
            kube = Kube.from_kubeconfig(args.kubeconfig, args.context)
        else:
            from placewise.adapters.emulator import Emulator, KueueControllers

            # The stand-in's small client pool warns on every burst: noise here.
            logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
            emulator = Emulator(
                demo_objects(args.demo, args.mode, args.gate),
                # Kueue mode: evicted Workloads release their quota, as with Kueue.
                kueue_controllers=KueueControllers() if args.mode == "kueue" else None,
            ).start()
            kube = Kube(emulator.api_client())
            kubeconfig_out = Path(
                args.kubeconfig_out
                or Path(tempfile.gettempdir()) / "placewise-serve-demo.kubeconfig"
            )
            emulator.kubeconfig(kubeconfig_out)
            print(
                f"embedded API server (demo): {emulator.url}  "
                f"kubeconfig: {kubeconfig_out} (removed on exit)",
                file=sys.stderr,
            )
        sidecar = Sidecar(cfg, kube).start()
        print(
            banner(
                args.mode,
                sidecar.url,
                args.prefix,
                args.enable_debug,
                sidecar.metrics_url,
            ),
            file=sys.stderr,
        )
        if emulator is not None and args.mode in ("extender", "binder"):
            standin = _standin(emulator, sidecar, args)
        while not stop.wait(0.5):
            pass
        sidecar.stop(release=True)
        return 0
    finally:
        if standin is not None:
            standin.stop()
        if emulator is not None:
            emulator.stop()
        if kubeconfig_out is not None:
            # It names a server that is gone: a later kubectl would only hang.
            kubeconfig_out.unlink(missing_ok=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def banner(mode: str, url: str, prefix: str, debug: bool, metrics_url: str) -> str:
    """The start line: the extender's verbs only in extender mode (in the
    other modes kube-scheduler is not configured to call them)."""
    paths = "/healthz /readyz" + (" /debug/plan" if debug else "")
    if mode == "extender":
        where = f"listening on {url}{prefix}/{{filter,prioritize,preempt,bind}}; "
    else:
        where = f"listening on {url}: "
    return f"placewise serve ({mode}) {where}{paths}; metrics on {metrics_url}/metrics"


def _standin(emulator: Any, sidecar: Sidecar, args: argparse.Namespace) -> Any:
    """kube-scheduler's stand-in: calls our extender, or binds pinned pods."""
    from placewise.adapters.emulator import ExtenderConfig, SchedulerStandin

    extenders = []
    if args.mode == "extender":
        tls = {"enableHTTPS": True} if sidecar.url.startswith("https:") else {}
        extenders.append(ExtenderConfig.placewise(sidecar.url + args.prefix, **tls))
    print("kube-scheduler stand-in started (embedded demo only)", file=sys.stderr)
    return SchedulerStandin(emulator, extenders).start()
