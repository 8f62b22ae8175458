"""The scheduler-extender client side: configuration and the HTTP call.

kube-scheduler POSTs ``<urlPrefix>/<verb>`` with ``Content-Type:
application/json`` and treats any status but 200, a transport error or a
timeout (``httpTimeout``, default 5 s) as a failed call.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
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


def post(ext: ExtenderConfig, verb: str, body: bytes) -> Any:
    """POST ``body`` to ``verb``; decode the JSON reply."""
    req = urllib.request.Request(
        ext.url(verb),
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": "Go-http-client/1.1",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=ext.http_timeout) as resp:
            if resp.status != 200:
                raise ExtenderError(f"extender {ext.url(verb)} returned {resp.status}")
            return json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        raise ExtenderError(f"extender {ext.url(verb)} returned {exc.code}") from exc
    except (OSError, ValueError) as exc:
        raise ExtenderError(f"extender {ext.url(verb)}: {exc}") from exc
