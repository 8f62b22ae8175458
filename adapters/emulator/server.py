"""HTTP/1.1 front end: the Kubernetes REST paths, discovery, and chunked watch streams.

Paths follow the apiserver exactly (``/api/v1/namespaces/{ns}/pods/{name}/binding``,
``/apis/{group}/{version}/...``), so the official client, its ``Watch`` helper
and ``DynamicClient`` work unmodified. Keep-alive connections are tracked so
``stop()`` can cut them, as a real server restart would.
"""

from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import yaml

from placewise.adapters.emulator import (
    discovery,
    errors,
    fieldcheck,
    subresources,
    tables,
)
from placewise.adapters.emulator.faults import Faults
from placewise.adapters.emulator.openapi import OpenApi
from placewise.adapters.emulator.registry import DeleteOptions, Registry
from placewise.adapters.emulator.resources import ResourceType
from placewise.adapters.emulator.watch import WatchDropped, plan_watch, stream

JSON = dict[str, Any]
log = logging.getLogger("placewise.emulator")

VERSION_INFO: JSON = {
    "major": "1",
    "minor": "35",
    "gitVersion": "v1.35.0+placewise-emulator",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


@dataclass
class Route:
    rt: ResourceType
    namespace: str | None
    name: str | None
    sub: str | None


class Response:
    """A finished (non-streaming) answer."""

    def __init__(
        self, code: int, body: JSON | str, headers: dict[str, str] | None = None
    ) -> None:
        self.code, self.body, self.headers = code, body, headers or {}


def _dump(body: JSON) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def _alive(sock: socket.socket) -> bool:
    """False once the peer closed its end (readable with nothing to read)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return not readable or bool(sock.recv(1, socket.MSG_PEEK))
    except OSError:
        return False


class ApiServer:
    """Routes one request to discovery, the registry, a subresource or a watch."""

    def __init__(
        self,
        registry: Registry,
        faults: Faults,
        bookmark_interval: float,
        watch_timeout: float,
    ) -> None:
        self.registry = registry
        self.table = registry.table
        self.faults = faults
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.address = ""
        self.openapi = OpenApi(registry.table)

    # -- routing -----------------------------------------------------------------------

    def _discovery(self, parts: list[str]) -> JSON | str | None:
        if parts == ["version"]:
            return VERSION_INFO
        if parts in (["healthz"], ["readyz"], ["livez"]):
            return "ok"
        if parts == ["api"]:
            return discovery.api_versions(self.address)
        if parts == ["openapi", "v3"]:
            return self.openapi.index()
        if parts[:2] == ["openapi", "v3"]:
            return self.openapi.document("/".join(parts[2:]))
        if parts == ["api", "v1"]:
            return discovery.resource_list(self.table, "", "v1")
        if parts == ["apis"]:
            return discovery.api_group_list(self.table)
        if len(parts) == 2 and parts[0] == "apis":
            return discovery.api_group(self.table, parts[1])
        if len(parts) == 3 and parts[0] == "apis":
            return discovery.resource_list(self.table, parts[1], parts[2])
        return None

    def route(self, parts: list[str]) -> Route:
        if len(parts) >= 3 and parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 4 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise errors.resource_missing()
        namespace: str | None = None
        if (
            rest[0] == "namespaces"
            and len(rest) >= 3
            and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
        ):
            namespace, rest = rest[1], rest[2:]
        if len(rest) > 3:
            raise errors.resource_missing()
        rt = self.table.by_path(group, version, rest[0])
        if rt is None:
            raise errors.resource_missing()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if rt.namespaced and namespace is None and name is not None:
            raise errors.resource_missing()
        if not rt.namespaced and namespace is not None:
            raise errors.resource_missing()
        if sub is not None and sub not in rt.subresources:
            raise errors.resource_missing()
        return Route(rt, namespace, name, sub)

    # -- dispatch ----------------------------------------------------------------------

    def dispatch(
        self,
        method: str,
        route: Route,
        query: dict[str, str],
        body: Any,
        content_type: str,
    ) -> Response:
        reg, rt, ns = self.registry, route.rt, route.namespace or ""
        dry_run = query.get("dryRun") == "All"
        validation = fieldcheck.directive(query) if method != "GET" else "Ignore"
        if method != "GET":
            target = route.name or str(
                ((body or {}) if isinstance(body, dict) else {})
                .get("metadata", {})
                .get("name", "")
            )
            conflict = self.faults.on_write(rt.plural, rt.group, target)
            if conflict is not None:
                raise conflict
        if route.name is None:
            if method == "GET":
                return Response(200, reg.list_objects(rt, route.namespace, query))
            if method == "POST" and (route.namespace is not None or not rt.namespaced):
                warn = fieldcheck.check_body(self.openapi, rt, body, validation)
                return Response(201, reg.create(rt, ns, body, dry_run), warn)
            if method == "DELETE":
                opts = DeleteOptions.parse(query, body)
                return Response(
                    200, reg.delete_collection(rt, route.namespace, query, opts)
                )
            raise errors.method_not_allowed()
        if route.sub == "binding" and method == "POST":
            return Response(201, subresources.bind(reg, rt, ns, route.name, body))
        if route.sub == "eviction" and method == "POST":
            return Response(
                201, subresources.evict(reg, rt, ns, route.name, body, dry_run)
            )
        if route.sub in ("binding", "eviction"):
            raise errors.method_not_allowed()
        if method == "GET":
            return Response(200, reg.get(rt, ns, route.name))
        if method == "PUT":
            warn = fieldcheck.check_body(self.openapi, rt, body, validation)
            updated = reg.update(rt, ns, route.name, body, route.sub, dry_run)
            return Response(200, updated, warn)
        if method == "PATCH":
            headers: dict[str, str] = {}

            def inspect(patched: JSON) -> None:
                headers.update(
                    fieldcheck.check_patched(
                        self.openapi, rt, body, patched, validation
                    )
                )

            patched = reg.patch(
                rt, ns, route.name, content_type, body, route.sub, dry_run, inspect
            )
            return Response(200, patched, headers)
        if method == "DELETE" and route.sub is None:
            return Response(
                200, reg.delete(rt, ns, route.name, DeleteOptions.parse(query, body))
            )
        raise errors.method_not_allowed()

    # -- HTTP --------------------------------------------------------------------------

    def handle(self, h: _Handler) -> None:
        method = h.command
        url = urlsplit(h.path)
        query = {k: v for k, v in parse_qsl(url.query, keep_blank_values=True)}
        parts = [unquote(p) for p in url.path.split("/") if p]
        raw = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        content_type = h.headers.get("Content-Type") or "application/json"
        try:
            route: Route | None = None
            doc = self._discovery(parts) if method == "GET" else None
            if doc is None:
                route = self.route(parts)
            delay, hold, failure = self.faults.before_request(
                method,
                h.path,
                route.rt.plural if route else None,
                h.headers.get("User-Agent") or "",
            )
            if delay:
                time.sleep(delay)
            if failure is not None:
                raise failure
            if route is None:
                assert doc is not None
                self._write(h, Response(200, doc))
                return
            body = _parse_body(raw, content_type)
            watching = route.name is None and query.get("watch", "").lower() in (
                "true",
                "1",
            )
            target = None
            if method == "GET" and route.sub is None:
                mode = "watch" if watching else "get" if route.name else "list"
                target = tables.negotiate(h.headers.get("Accept"), mode)
            if method == "GET" and watching:
                self._watch(h, route, query, target)
                return
            if target is not None:
                self._write(h, Response(200, self._convert(route, query, target)))
                return
            resp = self.dispatch(method, route, query, body, content_type)
            if hold:
                time.sleep(hold)  # applied; the client has not heard so yet
            self._write(h, resp)
        except errors.ApiError as exc:
            self._write(h, Response(exc.code, exc.status(), exc.headers))
        except (OSError, WatchDropped):
            raise
        except Exception as exc:
            # An emulator bug must still answer like an apiserver: a 500 Status.
            log.exception("internal error serving %s %s", method, h.path)
            failure = errors.internal(f"{type(exc).__name__}: {exc}")
            self._write(h, Response(500, failure.status()))

    def _write(self, h: _Handler, resp: Response) -> None:
        if isinstance(resp.body, str):
            data, ctype = resp.body.encode(), "text/plain; charset=utf-8"
        else:
            data, ctype = _dump(resp.body), "application/json"
        h.send_response(resp.code)
        h.send_header("Content-Type", ctype)
        h.send_header("Cache-Control", "no-cache, private")
        h.send_header("Content-Length", str(len(data)))
        for key, value in resp.headers.items():
            h.send_header(key, value)
        h.end_headers()
        h.wfile.write(data)

    def _convert(
        self, route: Route, query: dict[str, str], target: tables.Target
    ) -> JSON:
        """A GET answered as a Table or PartialObjectMetadata(List)."""
        if route.name is None:
            return tables.render_list(
                self.registry, route.rt, route.namespace, query, target
            )
        return tables.render_get(
            self.registry, route.rt, route.namespace or "", route.name, query, target
        )

    def _watch(
        self,
        h: _Handler,
        route: Route,
        query: dict[str, str],
        target: tables.Target | None = None,
    ) -> None:
        render = None
        if target is not None:
            render = tables.Renderer(self.registry, route.rt, target, query).watch_event
        plan = plan_watch(
            self.registry,
            route.rt,
            route.namespace,
            query,
            self.faults,
            self.watch_timeout,
        )
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Cache-Control", "no-cache, private")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.flush()
        try:
            for line in stream(
                self.registry,
                plan,
                self.faults,
                lambda: _alive(h.connection),
                self.bookmark_interval,
                render,
            ):
                h.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
            h.wfile.flush()
        except OSError:
            h.close_connection = True
        except Exception as exc:
            # Headers are out: the only way to fail a stream is to cut it.
            if not isinstance(exc, WatchDropped):
                log.exception("watch stream failed")
            h.close_connection = True
            with contextlib.suppress(OSError):
                h.connection.shutdown(socket.SHUT_RDWR)


def _parse_body(raw: bytes, content_type: str) -> Any:
    if not raw:
        return None
    try:
        if "yaml" in content_type:
            return yaml.safe_load(raw)
        return json.loads(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(
            f"couldn't get version/kind; json parse error: {exc}"
        ) from exc


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HttpServer

    def _serve(self) -> None:
        try:
            self.server.app.handle(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class HttpServer(ThreadingHTTPServer):
    """Threaded server that remembers open connections so it can cut them on stop."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: ApiServer) -> None:
        self.app = app
        self.connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Peers resetting keep-alive connections (or our own stop) are not errors."""
        log.debug("connection from %s ended abruptly", client_address, exc_info=True)

    def cut_connections(self) -> None:
        with self._conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
