"""The scheduler-extender client side: configuration and the HTTP call.

kube-scheduler POSTs ``<urlPrefix>/<verb>`` with ``Content-Type:
application/json`` and treats any status but 200, a transport error or a
timeout (``httpTimeout``, default 5 s) as a failed call.  An ``https://``
prefix is called over TLS set up as kube-scheduler's ``makeTransport`` does
from ``enableHTTPS`` and ``tlsConfig``: the ``*Data`` fields (base64 PEM) win
over the ``*File`` fields, a client certificate is presented when given, and
``enableHTTPS`` without any CA skips verification (``insecure``).
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]


def _duration(text: Any) -> float:
    """``5s`` / ``500ms`` / ``1m`` (Go durations) or a number of seconds."""
    if isinstance(text, int | float):
        return float(text)
    s = str(text).strip()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if s.endswith(suffix):
            return float(s[: -len(suffix)]) * scale
    return float(s)


@dataclass(frozen=True)
class TlsConfig:
    """An extender entry's ``tlsConfig``."""

    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    cert_data: str = ""
    key_data: str = ""
    ca_data: str = ""

    @classmethod
    def from_config(cls, entry: JSON | None) -> TlsConfig:
        e = entry or {}
        return cls(
            insecure=bool(e.get("insecure")),
            **{
                name: str(e.get(key) or "")
                for name, key in (
                    ("server_name", "serverName"),
                    ("cert_file", "certFile"),
                    ("key_file", "keyFile"),
                    ("ca_file", "caFile"),
                    ("cert_data", "certData"),
                    ("key_data", "keyData"),
                    ("ca_data", "caData"),
                )
            },
        )


@dataclass(frozen=True)
class ExtenderConfig:
    """One ``extenders[]`` entry of a KubeSchedulerConfiguration."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    preempt_verb: str = ""
    bind_verb: str = ""
    weight: int = 1
    node_cache_capable: bool = False
    http_timeout: float = 5.0
    ignorable: bool = False
    managed_resources: tuple[str, ...] = ()
    enable_https: bool = False
    tls: TlsConfig = field(default_factory=TlsConfig)

    @classmethod
    def from_config(cls, entry: JSON) -> ExtenderConfig:
        """Build from config keys (``urlPrefix``, ``filterVerb``, ``httpTimeout``)."""
        return cls(
            url_prefix=str(entry["urlPrefix"]),
            filter_verb=str(entry.get("filterVerb") or ""),
            prioritize_verb=str(entry.get("prioritizeVerb") or ""),
            preempt_verb=str(entry.get("preemptVerb") or ""),
            bind_verb=str(entry.get("bindVerb") or ""),
            weight=int(entry.get("weight") or 1),
            node_cache_capable=bool(entry.get("nodeCacheCapable")),
            http_timeout=_duration(entry.get("httpTimeout") or 5.0) or 5.0,
            ignorable=bool(entry.get("ignorable")),
            managed_resources=tuple(
                str(m["name"]) for m in entry.get("managedResources") or []
            ),
            enable_https=bool(entry.get("enableHTTPS")),
            tls=TlsConfig.from_config(entry.get("tlsConfig")),
        )

    @classmethod
    def placewise(cls, url_prefix: str, **overrides: Any) -> ExtenderConfig:
        """The entry ``deploy/`` wires for the placewise sidecar: every verb,
        node-cache capable; ``overrides`` are further config keys."""
        return cls.from_config(
            {
                "urlPrefix": url_prefix,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "preemptVerb": "preempt",
                "bindVerb": "bind",
                "nodeCacheCapable": True,
                "weight": 1,
                "httpTimeout": "30s",
                **overrides,
            }
        )

    def url(self, verb: str) -> str:
        return self.url_prefix.rstrip("/") + "/" + verb

    def interested(self, pod: JSON) -> bool:
        """``IsInterested``: no managedResources, or a container asks for one."""
        if not self.managed_resources:
            return True
        spec = pod.get("spec") or {}
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            res = c.get("resources") or {}
            names = set(res.get("requests") or {}) | set(res.get("limits") or {})
            if names & set(self.managed_resources):
                return True
        return False


class ExtenderError(Exception):
    """Transport failure, non-200 status, or a non-empty ``Error`` in the reply."""


def tls_context(ext: ExtenderConfig) -> ssl.SSLContext:
    """The client side of ``makeTransport``: verify against the CA when one
    is given (else the system's), skip verification when ``insecure`` or
    when ``enableHTTPS`` names no CA, present the client certificate."""
    t = ext.tls
    ctx = ssl.create_default_context()
    if t.insecure or (ext.enable_https and not (t.ca_file or t.ca_data)):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif t.ca_data:
        ctx.load_verify_locations(cadata=base64.b64decode(t.ca_data).decode())
    elif t.ca_file:
        ctx.load_verify_locations(cafile=t.ca_file)
    if t.cert_data and t.key_data:
        with tempfile.TemporaryDirectory() as tmp:
            cert, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert, t.cert_data), (key, t.key_data)):
                with open(path, "wb") as f:
                    f.write(base64.b64decode(data))
            ctx.load_cert_chain(cert, key)
    elif t.cert_file and t.key_file:
        ctx.load_cert_chain(t.cert_file, t.key_file)
    return ctx


class _TlsConnection(http.client.HTTPSConnection):
    """HTTPS with ``tlsConfig.serverName`` as the name sent and verified."""

    def __init__(
        self,
        host: str,
        port: int | None,
        ctx: ssl.SSLContext,
        name: str,
        timeout: float,
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=ctx)
        self._ctx, self._name = ctx, name or host

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._ctx.wrap_socket(self.sock, server_hostname=self._name)


def post(ext: ExtenderConfig, verb: str, body: bytes) -> Any:
    """POST ``body`` to ``verb``; decode the JSON reply."""
    url = ext.url(verb)
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    try:
        conn: http.client.HTTPConnection
        if parts.scheme == "https":
            conn = _TlsConnection(
                host,
                parts.port,
                tls_context(ext),
                ext.tls.server_name,
                ext.http_timeout,
            )
        else:
            conn = http.client.HTTPConnection(
                host, parts.port, timeout=ext.http_timeout
            )
        try:
            conn.request(
                "POST",
                parts.path or "/",
                body=body,
                headers={
                    "Content-Type": "application/json",
                    "User-Agent": "Go-http-client/1.1",
                },
            )
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
    except (OSError, http.client.HTTPException) as exc:
        raise ExtenderError(f"extender {url}: {exc}") from exc
    if resp.status != 200:
        raise ExtenderError(f"extender {url} returned {resp.status}")
    try:
        return json.loads(data or b"null")
    except ValueError as exc:
        raise ExtenderError(f"extender {url}: {exc}") from exc
