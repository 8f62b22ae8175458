"""The sidecar's HTTP listeners, built to survive a hostile client.

Two listeners, so that what must be reachable from outside the pod (kubelet
probes, Prometheus) never exposes what must not (the extender verbs, which can
make placewise bind and evict; ``/debug/plan``, which lists the cluster's
gangs): the extender listener (loopback by default, optionally TLS with
client certificates) and the metrics listener.

What one client can do to it, and what stops it:

* Hold threads: at most ``max_connections`` connections are served at once
  (a thread each); the next one is answered ``503`` and closed at once (over
  TLS it is only closed: answering would need a handshake on the accept
  thread).
* Trickle bytes (slowloris): the TLS handshake, and every request from its
  first byte to its last, must complete within ``read_timeout`` in total,
  not per read; a keep-alive connection idle for ``idle_timeout`` is closed;
  a response the client does not take within ``read_timeout`` drops it.
* Send a huge body: a ``Content-Length`` over ``max_body`` is answered ``413``
  before a byte of the body is read; a missing one ``411``; a malformed or
  repeated one, or any ``Transfer-Encoding``, ``400`` (kube-scheduler's Go
  client always sends a length), each followed by closing the connection.
* Fill the log: a bad request, a reset or a timeout is one line, never a
  traceback; only a bug in a handler logs one (and answers 500).

The HTTP parsing is the standard library's (``http.server``); this module
only adds the admission, deadlines, size rules and TLS around it.  A third-
party server would not remove that code: waitress has no TLS, cheroot does
its TLS handshakes on the accepting thread and applies timeouts per read,
and none enforces a whole-request deadline.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

log = logging.getLogger("placewise.serve.http")
Reply = tuple[int, bytes, str]
"""status, body, Content-Type"""
JSON_TYPE = "application/json"
TEXT_TYPE = "text/plain; charset=utf-8"
PROMETHEUS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_DIGITS = re.compile(r"[0-9]{1,19}")
_LINGER, _LINGER_BYTES = 1.0, 1 << 20
"""How long, and how much, a refused client may keep sending (what it had in
flight before it saw the answer) before we close on it."""
_BUSY_BODY = b"placewise: too many connections\n"
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    b"Retry-After: 1\r\nConnection: close\r\n"
    + f"Content-Length: {len(_BUSY_BODY)}\r\n\r\n".encode()
    + _BUSY_BODY
)
Observe = Callable[[str, str], None]
"""(listener, reason) of every refused or dropped request, for metrics."""


@dataclass(frozen=True)
class Limits:
    """How much of the sidecar one client may take; defaults fit kube-scheduler."""

    max_body: int = 32 << 20
    """Largest request body: a filter call with 5,000 full Node objects (no
    ``nodeCacheCapable``) is well under it; names-only calls are kilobytes."""
    read_timeout: float = 10.0
    """TLS handshake, or one request from first byte to last, at most this;
    kube-scheduler's whole call (``httpTimeout``) defaults to 5 s."""
    idle_timeout: float = 90.0
    """A keep-alive connection with no request for this long is closed (Go's
    client keeps idle connections 90 s)."""
    max_connections: int = 64
    """Connections served at once; kube-scheduler needs a handful."""


@dataclass
class Routes:
    """What one listener answers: exact paths to handlers."""

    get: dict[str, Callable[[], Reply]] = field(default_factory=dict)
    post: dict[str, Callable[[bytes], Reply]] = field(default_factory=dict)


def tls_context(cert_file: str, key_file: str, client_ca: str | None) -> ssl.SSLContext:
    """A server context as kube-scheduler's ``tlsConfig`` expects to meet:
    TLS 1.2+, our certificate, and with ``client_ca`` a required, verified
    client certificate (its ``certFile``/``keyFile``).  Raises OSError or
    ssl.SSLError for unreadable or mismatched files."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    if client_ca:
        ctx.load_verify_locations(cafile=client_ca)
        ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


class _Deadline(io.RawIOBase):
    """Socket reads under one deadline for the whole request: each read may
    wait only for what is left of it, so trickling bytes does not extend it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deadline = float("inf")

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("read deadline passed")
        self.sock.settimeout(left)
        return self.sock.recv_into(buf)


class _Writer(io.BufferedIOBase):
    """Socket writes under a deadline (a client that never reads the reply
    cannot block the thread for longer than ``read_timeout``)."""

    def __init__(self, sock: socket.socket, seconds: float) -> None:
        self.sock, self.seconds = sock, seconds

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        deadline = time.monotonic() + self.seconds
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("write deadline passed")
            self.sock.settimeout(left)
            sent = self.sock.send(view[: 1 << 16])
            view = view[sent:]
        return len(data)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.1"  # no HTTP/0.9 bare answers
    server: _Server

    def setup(self) -> None:
        self.connection = self.request
        with contextlib.suppress(OSError):  # headers and body go out unbatched
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = _Deadline(self.connection)
        self.buffered = io.BufferedReader(self.reader, 1 << 16)
        self.rfile = self.buffered
        self.wfile = _Writer(self.connection, self.server.limits.read_timeout)

    def finish(self) -> None:
        self.rfile.close()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def log_error(self, format: str, *args: Any) -> None:
        log.info("%s %s: " + format, self.server.name, self.address_string(), *args)

    def reject(self, code: int, why: str, reason: str = "malformed") -> None:
        """Count it, log one line, answer in JSON, then drain what the client
        is still sending (closing on unread data would reset the connection
        and could destroy the answer before the client reads it)."""
        self.server.observe(self.server.name, reason)
        log.info("%s %s: %d %s", self.server.name, self.address_string(), code, why)
        self.close_connection = True
        self.send(code, json.dumps({"error": why}).encode(), JSON_TYPE)
        self.reader.deadline = time.monotonic() + _LINGER
        drained = 0
        try:
            while drained < _LINGER_BYTES:
                chunk = self.rfile.read1(1 << 16)
                if not chunk:
                    break
                drained += len(chunk)
        except (TimeoutError, OSError, ValueError):
            pass

    def send_error(
        self, code: int, message: str | None = None, explain: str | None = None
    ) -> None:
        self.reject(code, message or self.responses.get(code, ("error", ""))[0])

    def send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def handle_one_request(self) -> None:
        """http.server's loop step with two deadlines: up to ``idle_timeout``
        for a request to start, then ``read_timeout`` for all of it."""
        limits = self.server.limits
        self.reader.deadline = time.monotonic() + limits.idle_timeout
        try:
            started = self.buffered.peek(1)
        except (TimeoutError, OSError):
            started = b""
        if not started or not self.server.begin(self.connection):
            self.close_connection = True
            return
        self.reader.deadline = time.monotonic() + limits.read_timeout
        try:
            self._one_request(limits)
        finally:
            self.server.end(self.connection)

    def _one_request(self, limits: Limits) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414, "request line too long")
                return
            if not self.parse_request():
                return
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                self.send_error(501, f"unsupported method {self.command[:20]!r}")
                return
            method()
        except TimeoutError:
            self.server.observe(self.server.name, "timeout")
            log.info(
                "%s %s: request not received within %gs",
                self.server.name,
                self.address_string(),
                limits.read_timeout,
            )
            self.close_connection = True

    def handle_expect_100(self) -> bool:
        """A body we would refuse is refused before the client sends it."""
        if self.command == "POST" and self.body_length() is None:
            return False
        return super().handle_expect_100()

    def body_length(self) -> int | None:
        """The request's body length, or None after answering why not."""
        if self.headers.get_all("Transfer-Encoding"):
            self.reject(400, "Transfer-Encoding is not accepted; send Content-Length")
            return None
        values = self.headers.get_all("Content-Length") or []
        if not values:
            self.reject(411, "Content-Length required", "length")
            return None
        if len(set(values)) > 1 or not _DIGITS.fullmatch(values[0].strip()):
            self.reject(400, f"bad Content-Length {', '.join(values)[:40]!r}")
            return None
        length = int(values[0])
        limit = self.server.limits.max_body
        if length > limit:
            self.reject(413, f"body of {length} bytes over {limit}", "too_large")
            return None
        return length

    def route_path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def do_POST(self) -> None:
        length = self.body_length()
        if length is None:
            return
        route = self.server.routes.post.get(self.route_path())
        try:
            body = self.rfile.read(length)
        except TimeoutError:
            limit = self.server.limits.read_timeout
            self.reject(408, f"request not received within {limit:g}s", "timeout")
            return
        if len(body) != length:
            self.reject(400, f"body ended after {len(body)} of {length} bytes")
            return
        if route is None:
            self.send(404, b'{"error":"not found"}', JSON_TYPE)
            return
        self.answer(lambda: route(body))

    def do_GET(self) -> None:
        if self.headers.get_all("Transfer-Encoding") or self.headers.get(
            "Content-Length", "0"
        ).strip() not in ("", "0"):
            self.close_connection = True  # a body we will not read
        route = self.server.routes.get.get(self.route_path())
        if route is None:
            self.send(404, b"not found\n", TEXT_TYPE)
            return
        self.answer(route)

    def answer(self, route: Callable[[], Reply]) -> None:
        try:
            code, body, ctype = route()
        except Exception:
            log.exception("%s %s %s failed", self.server.name, self.command, self.path)
            self.close_connection = True
            code, body, ctype = 500, b'{"error":"internal error"}', JSON_TYPE
        self.send(code, body, ctype)


class _Server(HTTPServer):
    """Bounded thread-per-connection server; TLS is negotiated on the
    connection's own thread, under the read deadline."""

    allow_reuse_address = True
    request_queue_size = 128  # accept backlog for a burst of new connections

    def __init__(
        self,
        address: tuple[str, int],
        name: str,
        routes: Routes,
        limits: Limits,
        tls: ssl.SSLContext | None,
        observe: Observe,
    ) -> None:
        host = address[0].strip("[]")  # [::1] as written in a URL
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, address[1]), _Handler)
        self.name, self.routes, self.limits, self.tls = name, routes, limits, tls
        self.observe = observe
        self.slots = threading.BoundedSemaphore(limits.max_connections)
        self.open: set[socket.socket] = set()
        self.busy: set[socket.socket] = set()
        self.stopping = False
        self.guard = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.slots.acquire(blocking=False):
            self.observe(self.name, "busy")
            log.info(
                "%s: %d connections open, turning %s away",
                self.name,
                self.limits.max_connections,
                client_address[0],
            )
            if self.tls is None:
                with contextlib.suppress(OSError):
                    request.setblocking(False)
                    request.send(_BUSY)
            self.shutdown_request(request)
            return
        with self.guard:
            self.open.add(request)
        threading.Thread(
            target=self._serve,
            args=(request, client_address),
            name=f"{self.name}-conn",
            daemon=True,
        ).start()

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        conn: socket.socket = request
        try:
            if self.tls is not None:
                conn = self._handshake(request)
            self.finish_request(conn, client_address)
        except ssl.SSLError as exc:
            self.observe(self.name, "tls")
            log.info("%s %s: TLS: %s", self.name, client_address[0], exc)
        except TimeoutError as exc:
            self.observe(self.name, "timeout")
            log.info("%s %s: %s", self.name, client_address[0], exc)
        except (OSError, ValueError) as exc:
            log.info("%s %s: connection dropped: %s", self.name, client_address[0], exc)
        except Exception:
            log.exception("%s %s: handler failed", self.name, client_address[0])
        finally:
            with self.guard:
                self.open.discard(request)
                self.open.discard(conn)
            self.shutdown_request(conn)
            self.slots.release()

    def _handshake(self, raw: socket.socket) -> ssl.SSLSocket:
        """The handshake in non-blocking steps, so its deadline is total."""
        assert self.tls is not None
        raw.setblocking(False)
        with self.guard:
            self.open.discard(raw)
            conn = self.tls.wrap_socket(
                raw, server_side=True, do_handshake_on_connect=False
            )
            self.open.add(conn)
        deadline = time.monotonic() + self.limits.read_timeout
        try:
            while True:
                try:
                    conn.do_handshake()
                    return conn
                except ssl.SSLWantReadError:
                    wait: tuple[list[Any], list[Any]] = ([conn], [])
                except ssl.SSLWantWriteError:
                    wait = ([], [conn])
                left = deadline - time.monotonic()
                if left <= 0 or not any(select.select(*wait, [], left)):
                    raise TimeoutError("TLS handshake not finished in time")
        except BaseException:
            with self.guard:
                self.open.discard(conn)
            conn.close()  # it owns the descriptor now, not ``raw``
            raise

    def begin(self, conn: socket.socket) -> bool:
        """A request started on ``conn``; False once the server is stopping."""
        with self.guard:
            if self.stopping:
                return False
            self.busy.add(conn)
            return True

    def end(self, conn: socket.socket) -> None:
        with self.guard:
            self.busy.discard(conn)

    def close_all(self) -> None:
        """Cut every connection not in the middle of a request (stop must not
        wait out idle clients); those in one finish it and then close."""
        with self.guard:
            self.stopping = True
            conns = [c for c in self.open if c not in self.busy]
        for conn in conns:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(conn, socket.SHUT_RDWR)


class HttpServer:
    def __init__(
        self,
        host: str,
        port: int,
        routes: Routes,
        limits: Limits | None = None,
        tls: ssl.SSLContext | None = None,
        name: str = "http",
        observe: Observe | None = None,
    ) -> None:
        self._server = _Server(
            (host, port),
            name,
            routes,
            limits or Limits(),
            tls,
            observe or (lambda listener, reason: None),
        )
        self._thread: threading.Thread | None = None
        self.scheme = "https" if tls is not None else "http"

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{port}"

    def start(self) -> HttpServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._server.name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
