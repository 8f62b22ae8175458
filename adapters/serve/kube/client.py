"""Every call the sidecar makes to the API server, through the official client.

Payloads stay plain JSON dicts (``_preload_content=False``): pydantic models
of 10k pods would cost more than the solver, and v37's binding reply does not
even deserialize (cluster-protocols §2.6).  Failures of any kind become one
:class:`ApiError` with the HTTP status (0 for transport errors), so callers
decide on retry, re-read or give-up by status alone.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.watch.watch import iter_resp_lines

JSON = dict[str, Any]
log = logging.getLogger("placewise.serve.kube")


class ApiError(Exception):
    """An API call failed; ``status`` is the HTTP code, 0 for transport errors."""

    def __init__(self, status: int, reason: str = "", message: str = "") -> None:
        super().__init__(f"{status} {reason}: {message}".strip())
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def transient(self) -> bool:
        """Worth retrying as is: transport, throttling, server errors."""
        return self.status in (0, 429, 500, 502, 503, 504)


@dataclass(frozen=True)
class Resource:
    """One listable kind at the version the cluster serves."""

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool
    cache_key: str = ""
    """The cache's name for it when the kind is ambiguous (two ``PodGroup`` APIs)."""

    @property
    def cache_kind(self) -> str:
        return self.cache_key or self.kind

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _error(exc: Exception) -> ApiError:
    if isinstance(exc, client.ApiException):
        reason, message = str(exc.reason or ""), ""
        try:
            body = json.loads(exc.body or "{}")
            reason = str(body.get("reason") or reason)
            message = str(body.get("message") or "")
        except (ValueError, TypeError, AttributeError):
            message = str(exc.body or "")
        return ApiError(int(exc.status or 0), reason, message)
    return ApiError(0, type(exc).__name__, str(exc))


_FAILURES = (client.ApiException, urllib3.exceptions.HTTPError, OSError, ValueError)


def _json(resp: Any) -> Any:
    return json.loads(resp.data or b"null")


class Kube:
    """A thin, dict-in dict-out wrapper over the typed and custom-object APIs."""

    def __init__(self, api: client.ApiClient, request_timeout: float = 30.0) -> None:
        # Our own client on the same configuration, with a pool that fits one
        # watch per resource plus concurrent writes.
        cfg = copy.deepcopy(api.configuration)
        cfg.connection_pool_maxsize = 64
        cfg.retries = 1  # our callers retry with meaning; urllib3 need not
        self.api = client.ApiClient(configuration=cfg)
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.timeout = (5.0, request_timeout)

    @classmethod
    def from_kubeconfig(
        cls, path: str, context: str | None = None, request_timeout: float = 30.0
    ) -> Kube:
        cfg = client.Configuration()
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, context=context, client_configuration=cfg
        )
        return cls(client.ApiClient(configuration=cfg), request_timeout)

    @classmethod
    def in_cluster(cls, request_timeout: float = 30.0) -> Kube:
        """The pod's service account (token and CA mounted by the kubelet)."""
        cfg = client.Configuration()
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        return cls(client.ApiClient(configuration=cfg), request_timeout)

    def close(self) -> None:
        self.api.close()  # type: ignore[no-untyped-call]

    def identify(self, agent: str) -> None:
        """Send ``agent`` as the User-Agent: the API server's audit log (and
        the emulator's request log) then says which replica wrote what."""
        for api in (self.api, self.core.api_client, self.custom.api_client):
            api.user_agent = agent

    # -- discovery ----------------------------------------------------------

    def served_versions(self) -> dict[str, list[str]]:
        """API group -> served versions (preferred first)."""
        try:
            doc = _json(
                client.ApisApi(self.api).get_api_versions(
                    _preload_content=False, _request_timeout=self.timeout
                )
            )
        except _FAILURES as exc:
            raise _error(exc) from None
        return {
            str(g["name"]): [str(v["version"]) for v in g.get("versions") or []]
            for g in doc.get("groups") or []
        }

    def served_plurals(self, group: str, version: str) -> set[str]:
        try:
            doc = _json(
                self.custom.get_api_resources(
                    group,
                    version,
                    _preload_content=False,
                    _request_timeout=self.timeout,
                )
            )
        except _FAILURES as exc:
            err = _error(exc)
            if err.status == 404:
                return set()
            raise err from None
        return {str(r["name"]) for r in doc.get("resources") or []}

    # -- list / watch ---------------------------------------------------------

    def _list_call(self, res: Resource, **kw: Any) -> Any:
        kw.setdefault("_request_timeout", self.timeout)
        if res.group == "":
            fn: Any = {
                "nodes": self.core.list_node,
                "pods": self.core.list_pod_for_all_namespaces,
                "namespaces": self.core.list_namespace,
            }[res.plural]
            return fn(_preload_content=False, **kw)
        return self.custom.list_cluster_custom_object(
            res.group, res.version, res.plural, _preload_content=False, **kw
        )

    def list_all(self, res: Resource, page: int = 500) -> tuple[list[JSON], str]:
        """Every object (paginated, one consistent snapshot) and the list RV."""
        items: list[JSON] = []
        token: str | None = None
        while True:
            kw: dict[str, Any] = {"limit": page}
            if token:
                kw["_continue"] = token
            try:
                doc = _json(self._list_call(res, **kw))
            except _FAILURES as exc:
                raise _error(exc) from None
            for item in doc.get("items") or []:
                # Built-in list items come without kind/apiVersion.
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            meta = doc.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return items, str(meta.get("resourceVersion") or "")

    def open_watch(
        self, res: Resource, resource_version: str, timeout_seconds: int
    ) -> WatchStream:
        """A watch from ``resource_version`` on, with bookmarks; 410 comes back
        either as the HTTP status or as an ERROR event (callers check both)."""
        try:
            resp = self._list_call(
                res,
                watch=True,
                resource_version=resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_seconds,
                _request_timeout=(5.0, timeout_seconds + 30.0),
            )
        except _FAILURES as exc:
            raise _error(exc) from None
        return WatchStream(resp)

    # -- reads ----------------------------------------------------------------

    def get(self, res: Resource, namespace: str, name: str) -> JSON | None:
        try:
            if res.group == "" and res.plural == "pods":
                return dict(
                    _json(
                        self.core.read_namespaced_pod(
                            name,
                            namespace,
                            _preload_content=False,
                            _request_timeout=self.timeout,
                        )
                    )
                )
            if res.namespaced:
                return dict(
                    _json(
                        self.custom.get_namespaced_custom_object(
                            res.group,
                            res.version,
                            namespace,
                            res.plural,
                            name,
                            _preload_content=False,
                            _request_timeout=self.timeout,
                        )
                    )
                )
            return dict(
                _json(
                    self.custom.get_cluster_custom_object(
                        res.group,
                        res.version,
                        res.plural,
                        name,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            err = _error(exc)
            if err.status == 404:
                return None
            raise err from None

    def get_config_map(self, namespace: str, name: str) -> JSON | None:
        """A ConfigMap, or None when there is none (Kueue's manager config)."""
        try:
            return dict(
                _json(
                    self.core.read_namespaced_config_map(
                        name,
                        namespace,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            err = _error(exc)
            if err.status == 404:
                return None
            raise err from None

    # -- pod writes -------------------------------------------------------------

    def bind(
        self,
        namespace: str,
        name: str,
        uid: str,
        node: str,
        annotations: dict[str, str],
    ) -> None:
        """POST pods/binding with the pod's uid as precondition."""
        body: Any = {  # raw JSON: the client serializes dicts as they are
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": uid,
                "annotations": annotations,
            },
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        try:
            self.core.create_namespaced_pod_binding(
                name,
                namespace,
                body,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def evict(self, namespace: str, name: str, uid: str) -> None:
        """POST pods/eviction (PodDisruptionBudgets apply: 429 when refused)."""
        body: Any = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": {"preconditions": {"uid": uid}},
        }
        try:
            self.core.create_namespaced_pod_eviction(
                name,
                namespace,
                body,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def delete_pod(self, namespace: str, name: str, uid: str) -> None:
        try:
            options: Any = {"preconditions": {"uid": uid}}
            self.core.delete_namespaced_pod(
                name,
                namespace,
                body=options,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def patch_pod(self, namespace: str, name: str, ops: list[JSON]) -> JSON:
        """RFC 6902 JSON patch (a list body is sent as json-patch)."""
        try:
            return dict(
                _json(
                    self.core.patch_namespaced_pod(
                        name,
                        namespace,
                        ops,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def patch_pod_status(self, namespace: str, name: str, body: JSON) -> None:
        """Strategic merge on pods/status (conditions merge by type)."""
        try:
            self.core.patch_namespaced_pod_status(
                name,
                namespace,
                body,
                _preload_content=False,
                _request_timeout=self.timeout,
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    # -- custom objects -----------------------------------------------------------

    def patch_status(
        self, res: Resource, namespace: str, name: str, body: JSON
    ) -> JSON:
        """Merge patch on ``/status``; include metadata.resourceVersion to make
        it conditional (409 when someone wrote in between)."""
        try:
            return dict(
                _json(
                    self.custom.patch_namespaced_custom_object_status(
                        res.group,
                        res.version,
                        namespace,
                        res.plural,
                        name,
                        body,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def create(self, res: Resource, namespace: str, body: JSON) -> JSON:
        try:
            return dict(
                _json(
                    self.custom.create_namespaced_custom_object(
                        res.group,
                        res.version,
                        namespace,
                        res.plural,
                        body,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            raise _error(exc) from None

    def replace(self, res: Resource, namespace: str, name: str, body: JSON) -> JSON:
        """PUT with the body's resourceVersion: 409 if it is stale."""
        try:
            return dict(
                _json(
                    self.custom.replace_namespaced_custom_object(
                        res.group,
                        res.version,
                        namespace,
                        res.plural,
                        name,
                        body,
                        _preload_content=False,
                        _request_timeout=self.timeout,
                    )
                )
            )
        except _FAILURES as exc:
            raise _error(exc) from None


class WatchStream:
    """Iterates raw watch events; :meth:`close` unblocks a reader from any thread."""

    def __init__(self, resp: Any) -> None:
        self._resp = resp

    def __iter__(self) -> Iterator[JSON]:
        try:
            for line in iter_resp_lines(self._resp):  # type: ignore[no-untyped-call]
                if line:
                    yield json.loads(line)
        except _FAILURES as exc:
            raise _error(exc) from None
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self._resp.close()
            self._resp.release_conn()
        except _FAILURES:  # pragma: no cover - already torn down
            pass

    def close(self) -> None:
        """Shut the socket down so a blocked read returns now."""
        conn = getattr(self._resp, "connection", None)
        sock = getattr(conn, "sock", None) if conn is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


LEASES = Resource("Lease", "coordination.k8s.io", "v1", "leases", True)
EVENTS = Resource("Event", "events.k8s.io", "v1", "events", True)
PODS = Resource("Pod", "", "v1", "pods", True)
