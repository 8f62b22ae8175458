"""Stand-in for Kueue's MultiKueue controllers, driven through the official client.

What it does, per ``pkg/controller/admissionchecks/multikueue`` at the pinned
commit (``workload.go``: ``reconcileGroup``, ``cloneForCreate``; the
MultiKueueCluster reconciler), matched in behaviour, not copied:

* A manager Workload that holds a quota reservation and whose MultiKueue
  admission check is Pending is **copied to each nominated worker**
  (``status.nominatedClusterNames``; with no external dispatcher Kueue
  itself would nominate): same namespace, name, labels, annotations and
  spec, plus the ``kueue.x-k8s.io/multikueue-origin`` label.  A copy in a
  worker that is no longer nominated is deleted.
* When a worker **admits** its copy (QuotaReserved there), the manager
  Workload gets ``status.clusterName`` = that worker, its nominations are
  cleared and the check becomes Ready; every other copy is deleted.
* A worker that does not answer gets its MultiKueueCluster's ``Active``
  condition set False (``ClientConnectionFailed``), True again when it does.

It polls (every ``interval`` seconds) instead of watching: a test needs it
to be simple and correct, not fast.  Deviations: no job objects are copied
(only Workloads), no status sync back beyond the above, no garbage
collection of orphans of other managers.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any, cast

import urllib3
from kubernetes import client

JSON = dict[str, Any]
GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
_FAILURES = (client.ApiException, urllib3.exceptions.HTTPError, OSError)
log = logging.getLogger("placewise.emulator.multikueue")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _true(obj: JSON, kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def reserved(obj: JSON) -> bool:
    return bool((obj.get("status") or {}).get("admission")) and _true(
        obj, "QuotaReserved"
    )


class MultiKueueStandin:
    """MultiKueue's workload and cluster controllers, for tests and demos."""

    def __init__(
        self,
        manager: client.ApiClient,
        workers: dict[str, client.ApiClient],
        interval: float = 0.1,
        origin: str = "multikueue",
        timeout: float = 2.0,
    ) -> None:
        self.manager = client.CustomObjectsApi(manager)
        self.workers = {w: client.CustomObjectsApi(api) for w, api in workers.items()}
        self.interval, self.origin, self.timeout = interval, origin, timeout
        self.created: list[tuple[str, str]] = []
        """(worker, namespace/name) of every copy made, in order."""
        self.assigned: dict[str, str] = {}
        """manager Workload -> the worker that admitted it."""
        self._active: dict[str, bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="multikueue-standin", daemon=True
        )

    def start(self) -> MultiKueueStandin:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.reconcile()
            except _FAILURES as exc:  # the manager itself hiccupped
                log.info("multikueue stand-in: %s", exc)

    # -- one pass -------------------------------------------------------------------

    def reconcile(self) -> None:
        checks = {
            ac["metadata"]["name"]
            for ac in self._list(self.manager, "admissionchecks")
            if (ac.get("spec") or {}).get("controllerName") == MULTIKUEUE
        }
        workloads = self._list(self.manager, "workloads")
        reachable = {w: self._reachable(w) for w in self.workers}
        for wl in workloads:
            status = wl.get("status") or {}
            mk = [
                c
                for c in status.get("admissionChecks") or []
                if c.get("name") in checks
            ]
            if not mk or not reserved(wl) or _true(wl, "Finished"):
                continue
            assigned = status.get("clusterName")
            targets = (
                [assigned]
                if assigned
                else list(status.get("nominatedClusterNames") or [])
            )
            for worker in self.workers:
                if reachable[worker]:
                    assigned = self._sync(
                        wl, worker, worker in targets, assigned, mk[0]
                    )

    def _reachable(self, worker: str) -> bool:
        try:
            self.workers[worker].get_api_resources(
                GROUP, VERSION, _request_timeout=self.timeout
            )
            ok = True
        except _FAILURES:
            ok = False
        if self._active.get(worker) != ok:
            self._set_active(worker, ok)
        return ok

    def _set_active(self, worker: str, ok: bool) -> None:
        cond = {
            "type": "Active",
            "status": "True" if ok else "False",
            "reason": "Active" if ok else "ClientConnectionFailed",
            "message": "Connected" if ok else "the worker does not answer",
            "lastTransitionTime": _now(),
        }
        try:
            self.manager.patch_cluster_custom_object_status(
                GROUP,
                VERSION,
                "multikueueclusters",
                worker,
                {"status": {"conditions": [cond]}},
                _request_timeout=self.timeout,
            )
            self._active[worker] = ok
        except client.ApiException as exc:
            if exc.status == 404:
                self._active[worker] = ok  # no MultiKueueCluster object: nothing to say

    def _sync(
        self, wl: JSON, worker: str, wanted: bool, assigned: str | None, check: JSON
    ) -> str | None:
        meta = wl["metadata"]
        ns, name = meta["namespace"], meta["name"]
        api = self.workers[worker]
        remote: JSON | None
        try:
            remote = cast(
                JSON,
                api.get_namespaced_custom_object(
                    GROUP, VERSION, ns, "workloads", name, _request_timeout=self.timeout
                ),
            )
        except client.ApiException as exc:
            if exc.status != 404:
                return assigned
            remote = None
        except _FAILURES:
            return assigned
        try:
            if not wanted:
                if remote is not None:
                    api.delete_namespaced_custom_object(
                        GROUP,
                        VERSION,
                        ns,
                        "workloads",
                        name,
                        _request_timeout=self.timeout,
                    )
            elif remote is None and not assigned:
                api.create_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    ns,
                    "workloads",
                    self._clone(wl),
                    _request_timeout=self.timeout,
                )
                self.created.append((worker, f"{ns}/{name}"))
            elif remote is not None and reserved(remote) and not assigned:
                self._assign(wl, worker, check)
                return worker
        except _FAILURES as exc:
            log.info("multikueue stand-in: %s %s/%s: %s", worker, ns, name, exc)
        return assigned

    def _clone(self, wl: JSON) -> JSON:
        meta = wl["metadata"]
        labels = {**(meta.get("labels") or {}), ORIGIN_LABEL: self.origin}
        out_meta: JSON = {
            "name": meta["name"],
            "namespace": meta["namespace"],
            "labels": labels,
        }
        if meta.get("annotations"):
            out_meta["annotations"] = dict(meta["annotations"])
        return {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Workload",
            "metadata": out_meta,
            "spec": wl["spec"],
        }

    def _assign(self, wl: JSON, worker: str, check: JSON) -> None:
        """The worker admitted it: clusterName set, nominations cleared,
        the check Ready (one write, conditioned on the resourceVersion)."""
        meta = wl["metadata"]
        checks = [
            {
                **c,
                "state": "Ready",
                "message": f'The workload got reservation on "{worker}"',
                "lastTransitionTime": _now(),
            }
            if c.get("name") == check.get("name")
            else c
            for c in wl["status"].get("admissionChecks") or []
        ]
        body = {
            "metadata": {"resourceVersion": meta["resourceVersion"]},
            "status": {
                "clusterName": worker,
                "nominatedClusterNames": None,
                "admissionChecks": checks,
            },
        }
        self.manager.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            meta["namespace"],
            "workloads",
            meta["name"],
            body,
            _request_timeout=self.timeout,
        )
        self.assigned[f"{meta['namespace']}/{meta['name']}"] = worker

    def _list(self, api: client.CustomObjectsApi, plural: str) -> list[JSON]:
        doc = cast(
            JSON,
            api.list_cluster_custom_object(
                GROUP, VERSION, plural, _request_timeout=self.timeout
            ),
        )
        return list(doc.get("items") or [])
