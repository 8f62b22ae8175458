"""The pods/binding and pods/eviction subresources, with upstream checks and texts.

Binding is how a scheduler (or our adapter) places a pod; eviction is how it
removes one politely, subject to PodDisruptionBudgets. Both return a
``Status`` with code 201 on success, which is why the Python client needs
``_preload_content=False`` for binding (it tries to read a V1Binding back).
"""

from __future__ import annotations

import copy
from typing import Any

from placewise.adapters.emulator import controllers, errors
from placewise.adapters.emulator.registry import DeleteOptions, Registry
from placewise.adapters.emulator.resources import ResourceType
from placewise.adapters.emulator.selectors import (
    from_label_selector_object,
    labels_match,
)
from placewise.adapters.emulator.strategies import rfc3339

JSON = dict[str, Any]

CREATED: JSON = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Success",
    "code": 201,
}
EVICTION_DENIED = "Cannot evict pod as it would violate the pod's disruption budget."


def _pod_preconditions(pod: JSON, name: str, uid: str | None, rv: str | None) -> None:
    meta = pod.get("metadata") or {}
    if uid and uid != meta.get("uid"):
        raise errors.conflict(
            "pods",
            "",
            name,
            (
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{meta.get('uid')}"
            ),
        )
    if rv and rv != meta.get("resourceVersion"):
        raise errors.conflict(
            "pods",
            "",
            name,
            (
                f"Precondition failed: ResourceVersion in precondition: {rv}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}"
            ),
        )


def bind(
    reg: Registry, pods: ResourceType, namespace: str, name: str, body: Any
) -> JSON:
    """POST pods/{name}/binding: set spec.nodeName once; never for gated/dying pods."""
    if not isinstance(body, dict):
        raise errors.bad_request("Object 'Binding' is missing in request body")
    meta = body.get("metadata") or {}
    if meta.get("name") != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    target = body.get("target") or {}
    if target.get("kind") not in (None, "", "Node"):
        raise errors.unknown(
            500,
            f'target.kind: Unsupported value: "{target.get("kind")}": '
            'supported values: "Node", "<empty>"',
        )
    node = str(target.get("name") or "")
    if not node:
        raise errors.unknown(500, "target.name: Required value")
    with reg.store.lock:
        pod = reg.require(pods, namespace, name)
        _pod_preconditions(pod, name, meta.get("uid"), meta.get("resourceVersion"))
        spec = pod.get("spec") or {}
        why = None
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            why = f"pod {name} is being deleted, cannot be assigned to a host"
        elif spec.get("nodeName"):
            why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        elif spec.get("schedulingGates"):
            why = f"pod {name} has non-empty .spec.schedulingGates"
        if why:
            raise errors.conflict("pods/binding", "", name, why)
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = node
        if meta.get("annotations"):
            new["metadata"].setdefault("annotations", {}).update(meta["annotations"])
        status = new.setdefault("status", {})
        status.pop("nominatedNodeName", None)
        status["conditions"] = controllers.set_condition(
            list(status.get("conditions") or []),
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": rfc3339(),
            },
        )
        stored = reg.store.put(pods.storage, new)
        reg.after_write(pods, stored, namespace)
    return dict(CREATED)


def _matching_pdbs(reg: Registry, pod: JSON, namespace: str) -> list[JSON]:
    labels = (pod.get("metadata") or {}).get("labels")
    out = []
    for pdb in reg.store.items(controllers.PDBS, namespace):
        try:
            selector = from_label_selector_object(
                (pdb.get("spec") or {}).get("selector")
            )
        except ValueError:
            continue
        if selector is not None and labels_match(selector, labels):
            out.append(pdb)
    return out


def _can_ignore_pdb(pod: JSON) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    dying = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    return phase in ("Succeeded", "Failed", "Pending") or dying


def _too_many(message: str, retry_after: int) -> errors.ApiError:
    return errors.too_many_requests(
        EVICTION_DENIED,
        [{"reason": "DisruptionBudget", "message": message}],
        retry_after,
    )


def _check_and_decrement(
    reg: Registry, pdb: JSON, pod_name: str, dry_run: bool
) -> None:
    meta, status = pdb.get("metadata") or {}, pdb.get("status") or {}
    name = str(meta.get("name"))
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        raise _too_many(
            f"The disruption budget {name} is still being processed by the server.", 10
        )
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden(
            "poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative"
        )
    if allowed == 0:
        raise _too_many(
            f"The disruption budget {name} needs "
            f"{int(status.get('desiredHealthy') or 0)} healthy pods and has "
            f"{int(status.get('currentHealthy') or 0)} currently",
            0,
        )
    if dry_run:
        return
    new_status = {
        **status,
        "disruptionsAllowed": allowed - 1,
        "disruptedPods": {**(status.get("disruptedPods") or {}), pod_name: rfc3339()},
    }
    if allowed - 1 == 0:
        new_status["conditions"] = controllers.set_condition(
            list(status.get("conditions") or []),
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "message": "",
                "observedGeneration": int(meta.get("generation") or 1),
                "lastTransitionTime": rfc3339(),
            },
        )
    reg.store.put(controllers.PDBS, {**pdb, "status": new_status})


def evict(
    reg: Registry,
    pods: ResourceType,
    namespace: str,
    name: str,
    body: Any,
    dry_run: bool = False,
) -> JSON:
    """POST pods/{name}/eviction: delete unless the pod's PDB has no disruption left."""
    if not isinstance(body, dict):
        raise errors.bad_request("Object 'Eviction' is missing in request body")
    if (body.get("metadata") or {}).get("name") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    opts = DeleteOptions.parse(
        {"dryRun": "All"} if dry_run else {}, body.get("deleteOptions")
    )
    with reg.store.lock:
        pod = reg.require(pods, namespace, name)
        meta = pod.get("metadata") or {}
        if opts.uid and opts.uid != meta.get("uid"):
            raise errors.conflict(
                "Pod",
                "",
                name,
                (
                    f"the UID in the precondition ({opts.uid}) does not match the UID "
                    f"in record ({meta.get('uid')}). The object might have been "
                    "deleted and then recreated"
                ),
            )
        if opts.resource_version and opts.resource_version != meta.get(
            "resourceVersion"
        ):
            raise errors.conflict(
                "Pod",
                "",
                name,
                (
                    "the ResourceVersion in the precondition "
                    f"({opts.resource_version}) does not match the ResourceVersion in "
                    f"record ({meta.get('resourceVersion')}). The object might have "
                    "been modified"
                ),
            )
        if not _can_ignore_pdb(pod):
            controllers.sync_pdbs(reg.store, namespace)
            pdbs = _matching_pdbs(reg, pod, namespace)
            if len(pdbs) > 1:
                raise errors.unknown(
                    500,
                    "This pod has more than one PodDisruptionBudget, which the "
                    "eviction subresource does not support.",
                )
            if pdbs and not _unhealthy_may_go(pod, pdbs[0]):
                _check_and_decrement(reg, pdbs[0], name, opts.dry_run)
        if opts.dry_run:
            return dict(CREATED)
        _mark_disruption_target(reg, pods, pod)
        opts.uid = opts.resource_version = None
        reg.delete(pods, namespace, name, opts)
    return dict(CREATED)


def _unhealthy_may_go(pod: JSON, pdb: JSON) -> bool:
    """An unready pod may leave without spending budget (unhealthyPodEvictionPolicy)."""
    if controllers.is_ready(pod):
        return False
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return desired > 0 and int(status.get("currentHealthy") or 0) >= desired


def _mark_disruption_target(reg: Registry, pods: ResourceType, pod: JSON) -> None:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return
    new = copy.deepcopy(pod)
    status = new.setdefault("status", {})
    status["conditions"] = controllers.set_condition(
        list(status.get("conditions") or []),
        {
            "type": "DisruptionTarget",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": rfc3339(),
            "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting",
        },
    )
    reg.store.put(pods.storage, new)
