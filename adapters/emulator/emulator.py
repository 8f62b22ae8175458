"""The programmatic entry point: an emulated API server in a background thread."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from kubernetes import client

from placewise.adapters.emulator.faults import Faults
from placewise.adapters.emulator.kubeconfig import write_kubeconfig
from placewise.adapters.emulator.kueue_standin import KueueControllers
from placewise.adapters.emulator.registry import Registry
from placewise.adapters.emulator.resources import ResourceTable
from placewise.adapters.emulator.server import ApiServer, HttpServer
from placewise.adapters.emulator.store import Store

JSON = dict[str, Any]


class Emulator:
    """A loopback Kubernetes API server seeded with ``objects``.

    ``history_limit`` is the per-resource event window (older watch and
    continue resourceVersions get 410); ``bookmark_interval`` is how often
    watches that ask for bookmarks get one; ``kubelet=False`` leaves bound pods
    Pending and graceful deletions unconfirmed, as with dead nodes.
    ``kueue_controllers`` (off by default) stands in for what Kueue's
    controllers do after a decision: evicted Workloads release their
    reservation (:mod:`placewise.adapters.emulator.kueue_standin`).
    """

    def __init__(
        self,
        objects: list[JSON] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        history_limit: int = 5000,
        bookmark_interval: float = 1.0,
        watch_timeout: float = 1800.0,
        kubelet: bool = True,
        kueue_controllers: KueueControllers | None = None,
    ) -> None:
        self.store = Store(history_limit)
        self.table = ResourceTable()
        self.registry = Registry(self.store, self.table, kubelet=kubelet)
        self.registry.load(objects or [])
        self.faults = Faults()
        self.faults.wake = self.store.wake
        self._app = ApiServer(
            self.registry, self.faults, bookmark_interval, watch_timeout
        )
        self.kueue_controllers = kueue_controllers
        self._host, self._port = host, port
        self._http: HttpServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("emulator not started")
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    def start(self) -> Emulator:
        """Bind and serve in a daemon thread; returns self for chaining."""
        if self._http is not None:
            return self
        self._http = HttpServer((self._host, self._port), self._app)
        self._app.address = f"{self._host}:{self.port}"
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="placewise-emulator",
            daemon=True,
        )
        self._thread.start()
        if self.kueue_controllers is not None:
            self.kueue_controllers.start(self.store)
        return self

    def stop(self) -> None:
        """Close watches, stop accepting, cut keep-alive connections."""
        if self.kueue_controllers is not None:
            self.kueue_controllers.stop()
        self.store.close()
        if self._http is not None:
            self._http.shutdown()
            self._http.cut_connections()
            self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._http, self._thread = None, None

    def kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(path, self.url)

    def api_client(self) -> client.ApiClient:
        """An official-client ApiClient aimed at this emulator (plain http, no auth)."""
        config = client.Configuration(host=self.url)
        return client.ApiClient(configuration=config)

    def compact(self) -> int:
        """Drop all event history now; older resourceVersions then get 410 Expired."""
        return self.store.compact()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
