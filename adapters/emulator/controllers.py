"""Stand-ins for the two controllers whose effects clients depend on.

A real cluster runs a kubelet (bound pods start, graceful deletions finish)
and the disruption controller (PDB status, which the eviction subresource
reads). Without them an emulated cluster would leave every bound pod Pending
and answer every eviction with "still being processed". Both react inline to
the write that triggers them, each change being its own revision, so watchers
see the same event sequence a fast real cluster produces.
"""

from __future__ import annotations

from typing import Any

from placewise.adapters.emulator.selectors import (
    from_label_selector_object,
    labels_match,
)
from placewise.adapters.emulator.store import Store
from placewise.adapters.emulator.strategies import rfc3339

JSON = dict[str, Any]

PODS = ("", "pods")
PDBS = ("policy", "poddisruptionbudgets")


def is_ready(pod: JSON) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def set_condition(conditions: list[JSON], cond: JSON) -> list[JSON]:
    """Replace or append by type; keep lastTransitionTime if status is unchanged."""
    out = []
    found = False
    for cur in conditions:
        if cur.get("type") == cond["type"]:
            found = True
            if cur.get("status") == cond.get("status") and cur.get(
                "lastTransitionTime"
            ):
                cond = {**cond, "lastTransitionTime": cur["lastTransitionTime"]}
            out.append(cond)
        else:
            out.append(cur)
    if not found:
        out.append(cond)
    return out


def kubelet_start(store: Store, pod: JSON) -> JSON:
    """Start a freshly bound pod: Running, Ready, containers running."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    status = dict(pod.get("status") or {})
    if (
        not spec.get("nodeName")
        or meta.get("deletionTimestamp")
        or status.get("phase", "Pending") != "Pending"
    ):
        return pod
    now = rfc3339()
    conditions = list(status.get("conditions") or [])
    for ctype in (
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ):
        conditions = set_condition(
            conditions,
            {
                "type": ctype,
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": now,
            },
        )
    status.update(
        {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": "127.0.0.1",
            "startTime": now,
            "containerStatuses": [
                {
                    "name": c.get("name"),
                    "state": {"running": {"startedAt": now}},
                    "ready": True,
                    "restartCount": 0,
                    "image": c.get("image", ""),
                    "imageID": "",
                    "started": True,
                }
                for c in spec.get("containers") or []
            ],
        }
    )
    return store.put(PODS, {**pod, "status": status})


def kubelet_finish_deletion(store: Store, pod: JSON) -> None:
    """Confirm a graceful deletion as soon as nothing (finalizers) holds the pod."""
    meta = pod.get("metadata") or {}
    if meta.get("deletionTimestamp") and not meta.get("finalizers"):
        store.remove(PODS, str(meta.get("namespace", "")), str(meta.get("name", "")))


def _scaled(value: Any, total: int, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        whole, rem = divmod(pct * total, 100)
        return whole + (1 if round_up and rem else 0)
    return int(value)


def pdb_status(pdb: JSON, pods: list[JSON]) -> JSON:
    """The status the disruption controller would write for ``pdb`` over ``pods``.

    Deviation: percentages and maxUnavailable scale against the number of
    matching pods, not the owning controllers' replica counts.
    """
    spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
    selector = from_label_selector_object(spec.get("selector"))
    matched = (
        []
        if selector is None
        else [
            p
            for p in pods
            if labels_match(selector, (p.get("metadata") or {}).get("labels"))
        ]
    )
    alive = {
        str((p.get("metadata") or {}).get("name")): p
        for p in matched
        if not (p.get("metadata") or {}).get("deletionTimestamp")
    }
    disrupted = {
        name: ts
        for name, ts in (old.get("disruptedPods") or {}).items()
        if name in alive
    }
    healthy = sum(
        1 for name, p in alive.items() if name not in disrupted and is_ready(p)
    )
    expected = len(matched)
    if spec.get("maxUnavailable") is not None:
        desired = expected - _scaled(spec["maxUnavailable"], expected, True)
    elif spec.get("minAvailable") is not None:
        desired = _scaled(spec["minAvailable"], expected, True)
    else:
        desired = expected
    allowed = max(0, healthy - desired)
    generation = int((pdb.get("metadata") or {}).get("generation") or 1)
    cond = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "observedGeneration": generation,
        "lastTransitionTime": rfc3339(),
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
    }
    status: JSON = {"observedGeneration": generation}
    if disrupted:
        status["disruptedPods"] = disrupted
    status.update(
        {
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "conditions": set_condition(list(old.get("conditions") or []), cond),
        }
    )
    return status


def sync_pdbs(store: Store, namespace: str) -> None:
    """Recompute every PDB in ``namespace``; write only those whose status changed."""
    pdbs = store.items(PDBS, namespace)
    if not pdbs:
        return
    pods = store.items(PODS, namespace)
    for pdb in pdbs:
        status = pdb_status(pdb, pods)
        if status != pdb.get("status"):
            store.put(PDBS, {**pdb, "status": status})
