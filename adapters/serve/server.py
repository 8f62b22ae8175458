"""The sidecar's HTTP endpoint: extender verbs, health, readiness, metrics.

A stdlib threading server speaking HTTP/1.1 with keep-alive (kube-scheduler
reuses connections; a reconnect per call would add to every pod's latency).
No scheduling logic lives here.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("placewise.serve.http")
Verb = Callable[[str, bytes], bytes]
VERBS = ("filter", "prioritize", "preempt", "bind")


class Endpoints:
    """What the server delegates to; set by the app."""

    def __init__(
        self,
        prefix: str,
        extender: Verb,
        healthy: Callable[[], tuple[bool, str]],
        ready: Callable[[], tuple[bool, str]],
        metrics: Callable[[], bytes],
        debug: Callable[[], Any],
    ) -> None:
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.extender, self.healthy, self.ready = extender, healthy, ready
        self.metrics, self.debug = metrics, debug


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    endpoints: Endpoints


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        ep = self.server.endpoints
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        verb = path.rsplit("/", 1)[-1]
        if path != f"{ep.prefix}/{verb}" or verb not in VERBS:
            self._send(404, b'{"error":"not found"}')
            return
        self._send(200, ep.extender(verb, body))

    def do_GET(self) -> None:
        ep = self.server.endpoints
        path = self.path.split("?", 1)[0]
        if path in ("/healthz", "/livez"):
            ok, why = ep.healthy()
            self._send(200 if ok else 503, why.encode(), "text/plain")
        elif path == "/readyz":
            ok, why = ep.ready()
            self._send(200 if ok else 503, why.encode(), "text/plain")
        elif path == "/metrics":
            self._send(200, ep.metrics(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/debug/plan":
            self._send(200, json.dumps(ep.debug(), indent=1, default=str).encode())
        else:
            self._send(404, b"not found\n", "text/plain")


class HttpServer:
    def __init__(self, host: str, port: int, endpoints: Endpoints) -> None:
        self._server = _Server((host, port), _Handler)
        self._server.endpoints = endpoints
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> HttpServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
