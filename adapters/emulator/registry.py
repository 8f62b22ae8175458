"""REST semantics over the store: get, list, create, update, patch, delete.

This is the generic registry of the apiserver in miniature: optimistic
concurrency on ``metadata.resourceVersion``, AlreadyExists / NotFound /
Conflict with upstream wording, namespace lifecycle admission, finalizers and
graceful pod deletion, consistent paginated lists with continue tokens that
expire with compaction, and the inline controllers that react to writes.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from placewise.adapters.emulator import (
    controllers,
    errors,
    listing,
    patch,
    seed,
    strategies,
    views,
)
from placewise.adapters.emulator.resources import ResourceTable, ResourceType
from placewise.adapters.emulator.store import Store

JSON = dict[str, Any]
NAMESPACES = ("", "namespaces")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class DeleteOptions:
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False

    @classmethod
    def parse(cls, query: dict[str, str], body: Any) -> DeleteOptions:
        opts = cls(dry_run=query.get("dryRun") == "All")
        if query.get("gracePeriodSeconds"):
            opts.grace_period = int(query["gracePeriodSeconds"])
        if isinstance(body, dict):
            if body.get("gracePeriodSeconds") is not None:
                opts.grace_period = int(body["gracePeriodSeconds"])
            pre = body.get("preconditions") or {}
            opts.uid = pre.get("uid") or None
            opts.resource_version = pre.get("resourceVersion") or None
            opts.dry_run = opts.dry_run or "All" in (body.get("dryRun") or [])
        return opts


class Registry:
    """All object operations; each holds the store lock for its whole duration."""

    def __init__(
        self, store: Store, table: ResourceTable, kubelet: bool = True
    ) -> None:
        self.store = store
        self.table = table
        self.kubelet = kubelet

    # -- helpers -----------------------------------------------------------------------

    def present(self, rt: ResourceType, obj: JSON, in_list: bool = False) -> JSON:
        """Serve a stored object as ``rt``'s version; typed list items carry no kind."""
        obj = views.to_served(rt, obj)
        if in_list and rt.builtin:
            return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
        if obj.get("apiVersion") == rt.api_version and obj.get("kind") == rt.kind:
            return obj
        return {
            "apiVersion": rt.api_version,
            "kind": rt.kind,
            **{k: v for k, v in obj.items() if k not in ("kind", "apiVersion")},
        }

    def require(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        obj = self.store.get(rt.storage, namespace, name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    def _namespace_admission(self, rt: ResourceType, namespace: str, name: str) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if (ns.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.forbidden(
                rt.plural,
                rt.group,
                name,
                (
                    f"unable to create new content in namespace {namespace} because it "
                    "is being terminated"
                ),
            )

    def after_write(
        self, rt: ResourceType, obj: JSON | None, namespace: str
    ) -> JSON | None:
        """Run the emulated controllers a write wakes; return the latest state."""
        if obj is not None:
            meta = obj.get("metadata") or {}
            grace = meta.get("deletionGracePeriodSeconds")
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                if not grace or (self.kubelet and rt.storage == controllers.PODS):
                    self.store.remove(rt.storage, namespace, str(meta.get("name")))
                    obj = None
            elif self.kubelet and rt.storage == controllers.PODS:
                obj = controllers.kubelet_start(self.store, obj)
        if namespace and rt.storage in (controllers.PODS, controllers.PDBS):
            controllers.sync_pdbs(self.store, namespace)
        return obj

    # -- reads -------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        return self.present(rt, self.require(rt, namespace, name))

    def list_objects(
        self, rt: ResourceType, namespace: str | None, query: dict[str, str]
    ) -> JSON:
        return listing.list_objects(self.store, rt, namespace, query, self.present)

    # -- writes ------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str, body: Any, dry_run: bool = False
    ) -> JSON:
        obj = _check_body(rt, body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.unknown(
                500, "resourceVersion should not be set on objects to be created"
            )
        with self.store.lock:
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = self._generate_name(
                    rt, namespace, str(meta["generateName"])
                )
            name = str(meta.get("name") or "")
            strategies.validate_name(rt, name)
            self._namespace_admission(rt, namespace, name)
            if self.store.get(rt.storage, namespace, name) is not None:
                raise errors.already_exists(rt.plural, rt.group, name)
            obj = strategies.prepare_create(rt, obj, self.store, from_api=True)
            obj = views.to_stored(rt, obj)
            if dry_run:
                return self.present(rt, obj)
            stored = self.store.put(rt.storage, obj)
            self.after_write(rt, stored, namespace)
        return self.present(rt, stored)

    def _generate_name(self, rt: ResourceType, namespace: str, prefix: str) -> str:
        base = prefix[: 63 - 5]
        for _ in range(8):
            name = base + "".join(random.choice(_NAME_CHARS) for _ in range(5))
            if self.store.get(rt.storage, namespace, name) is None:
                return name
        raise errors.ApiError(500, "AlreadyExists", "could not generate a unique name")

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> JSON:
        new = _check_body(rt, body)
        meta = new.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on "
                f"the URL ({name})"
            )
        if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace "
                "sent on the request"
            )
        with self.store.lock:
            old = self.require(rt, namespace, name)
            old_meta = old.get("metadata") or {}
            rv = str(meta.get("resourceVersion") or "")
            if not rv and not rt.builtin:
                raise errors.invalid(
                    rt.kind_qualified,
                    name,
                    [
                        (
                            "metadata.resourceVersion",
                            "FieldValueInvalid",
                            "Invalid value: 0x0: must be specified for an update",
                        )
                    ],
                )
            if rv and rv != old_meta.get("resourceVersion"):
                raise errors.stale(rt.plural, rt.group, name)
            if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
                raise errors.conflict(
                    rt.plural,
                    rt.group,
                    name,
                    (
                        "Precondition failed: UID in precondition: "
                        f"{old_meta.get('uid')}, UID in object meta: {meta['uid']}"
                    ),
                )
            return self._commit_update(rt, namespace, old, new, subresource, dry_run)

    def _commit_update(
        self,
        rt: ResourceType,
        namespace: str,
        old: JSON,
        new: JSON,
        subresource: str | None,
        dry_run: bool,
    ) -> JSON:
        new = views.to_stored(rt, strategies.prepare_update(rt, old, new, subresource))
        strategies.validate_update(rt, old, new)
        if _same_content(old, new):
            return self.present(rt, old)
        if dry_run:
            return self.present(rt, new)
        stored = self.store.put(rt.storage, new)
        latest = self.after_write(rt, stored, namespace)
        return self.present(rt, latest if latest is not None else stored)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        body: Any,
        subresource: str | None = None,
        dry_run: bool = False,
        inspect: Callable[[JSON], None] | None = None,
    ) -> JSON:
        """Apply a patch; ``inspect`` sees the patched object before it is stored."""
        ctype = content_type.split(";")[0].strip().lower()
        accepted = patch.accepted_patch_types(rt.builtin)
        if ctype not in accepted:
            raise errors.unsupported_media(accepted)
        with self.store.lock:
            old = self.require(rt, namespace, name)
            current = self.present(rt, old)
            if ctype == "application/json-patch+json":
                new = patch.apply_json_patch(current, body)
            elif ctype == "application/merge-patch+json":
                if not isinstance(body, dict):
                    raise errors.bad_request(
                        "json: cannot unmarshal array into Go value of type "
                        "map[string]interface {}"
                    )
                new = patch.apply_merge_patch(copy.deepcopy(current), body)
            else:
                new = patch.apply_strategic_merge_patch(current, body, rt.kind)
            meta = new.get("metadata") or {}
            old_meta = old.get("metadata") or {}
            if meta.get("resourceVersion") and meta["resourceVersion"] != old_meta.get(
                "resourceVersion"
            ):
                raise errors.stale(rt.plural, rt.group, name)
            if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
                raise errors.conflict(
                    rt.plural,
                    rt.group,
                    name,
                    (
                        "Precondition failed: UID in precondition: "
                        f"{old_meta.get('uid')}, UID in object meta: {meta['uid']}"
                    ),
                )
            if meta.get("name") != name:
                raise errors.bad_request(
                    f"the name of the object ({meta.get('name')}) does not match the "
                    f"name on the URL ({name})"
                )
            if inspect is not None:
                inspect(new)
            return self._commit_update(rt, namespace, old, new, subresource, dry_run)

    def delete(
        self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions
    ) -> JSON:
        with self.store.lock:
            old = self.require(rt, namespace, name)
            meta = old.get("metadata") or {}
            if opts.uid and opts.uid != meta.get("uid"):
                raise errors.conflict(
                    rt.plural,
                    rt.group,
                    name,
                    (
                        f"Precondition failed: UID in precondition: {opts.uid}, UID in "
                        f"object meta: {meta.get('uid')}"
                    ),
                )
            if opts.resource_version and opts.resource_version != meta.get(
                "resourceVersion"
            ):
                raise errors.conflict(
                    rt.plural,
                    rt.group,
                    name,
                    (
                        "Precondition failed: ResourceVersion in precondition: "
                        f"{opts.resource_version}, ResourceVersion in object meta: "
                        f"{meta.get('resourceVersion')}"
                    ),
                )
            if opts.dry_run:
                return self.present(rt, old)
            if rt.storage == NAMESPACES:
                return self._delete_namespace(rt, old)
            grace = self._grace(rt, old, opts)
            if grace == 0 and not meta.get("finalizers"):
                gone = self.store.remove(rt.storage, namespace, name) or old
                self.after_write(rt, None, namespace)
                if rt.returns_object_on_delete:
                    return self.present(rt, gone)
                return _deleted_status(rt, name, str(meta.get("uid", "")))
            if meta.get("deletionTimestamp"):
                return self.present(rt, old)
            new_meta = {
                **meta,
                "deletionTimestamp": strategies.rfc3339(time.time() + grace),
                "deletionGracePeriodSeconds": grace,
            }
            stored = self.store.put(rt.storage, {**old, "metadata": new_meta})
            self.after_write(rt, stored, namespace)
            return self.present(rt, stored)

    def _grace(self, rt: ResourceType, pod: JSON, opts: DeleteOptions) -> int:
        """Bound, running pods terminate gracefully; everything else goes at once."""
        if rt.storage != controllers.PODS:
            return 0
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            return 0
        if opts.grace_period is not None:
            return max(0, opts.grace_period)
        return int(spec.get("terminationGracePeriodSeconds", 30) or 0)

    def _delete_namespace(self, rt: ResourceType, ns_obj: JSON) -> JSON:
        """Namespace deletion plus the namespace controller's cleanup, all at once."""
        name = str((ns_obj.get("metadata") or {}).get("name"))
        terminating = {
            **ns_obj,
            "metadata": {
                **ns_obj["metadata"],
                "deletionTimestamp": strategies.rfc3339(),
                "deletionGracePeriodSeconds": 0,
            },
            "status": {**(ns_obj.get("status") or {}), "phase": "Terminating"},
        }
        terminating = self.store.put(NAMESPACES, terminating)
        for sk in sorted(self.table.storages()):
            for obj in self.store.items(sk, name):
                self.store.remove(
                    sk, name, str((obj.get("metadata") or {}).get("name"))
                )
        self.store.remove(NAMESPACES, "", name)
        return self.present(rt, terminating)

    def load(self, objects: list[JSON]) -> None:
        """Seed instance-file objects (see ``seed``)."""
        seed.seed(self, objects)

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        query: dict[str, str],
        opts: DeleteOptions,
    ) -> JSON:
        listed = self.list_objects(
            rt,
            namespace,
            {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")},
        )
        items = []
        for item in listed["items"]:
            meta = item.get("metadata") or {}
            try:
                items.append(
                    self.delete(
                        rt,
                        str(meta.get("namespace") or ""),
                        str(meta.get("name")),
                        opts,
                    )
                )
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version,
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": items,
        }

    # -- loading -----------------------------------------------------------------------


def _check_body(rt: ResourceType, body: Any) -> JSON:
    if not isinstance(body, dict):
        raise errors.bad_request(f"Object '{rt.kind}' is missing in request body")
    kind = body.get("kind")
    if kind and kind != rt.kind:
        raise errors.bad_request(
            f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f'no kind "{kind}" is registered for version "{rt.api_version}"'
        )
    api_version = body.get("apiVersion")
    if api_version and api_version != rt.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected "
            f"API version ({rt.api_version})"
        )
    return copy.deepcopy(body)


def _same_content(old: JSON, new: JSON) -> bool:
    """No-op writes do not bump resourceVersion, as with the real storage layer."""
    strip = {"resourceVersion", "managedFields"}
    om = {k: v for k, v in (old.get("metadata") or {}).items() if k not in strip}
    nm = {k: v for k, v in (new.get("metadata") or {}).items() if k not in strip}
    rest_old = {k: v for k, v in old.items() if k != "metadata"}
    rest_new = {k: v for k, v in new.items() if k != "metadata"}
    return om == nm and rest_old == rest_new


def _deleted_status(rt: ResourceType, name: str, uid: str) -> JSON:
    details: JSON = {"name": name}
    if rt.group:
        details["group"] = rt.group
    details.update({"kind": rt.plural, "uid": uid})
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
