"""Server-side printing: the columns and cells a real apiserver puts in a Table.

``kubectl get`` shows whatever columns the server sends, so these follow
``pkg/printers/internalversion`` for the built-in kinds (always the wide set:
the server prints everything and kubectl hides priority-1 columns unless
``-o wide``) and the CRDs' ``additionalPrinterColumns`` for the custom kinds
(Kueue's, the coscheduling PodGroup's), evaluated like the apiextensions
table convertor (``crd_columns``). Cells are computed from the stored form
of an object (core/v1 for Events).
"""

from __future__ import annotations

import calendar
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JSON = dict[str, Any]
Cell = str | int | float | bool | None

NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, "
    "although some resources may allow a client to request the generation of an "
    "appropriate name automatically."
)
AGE_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this "
    "object was created."
)


@dataclass(frozen=True)
class Column:
    name: str
    type: str = "string"
    description: str = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> JSON:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


NAME = Column("Name", format="name", description=NAME_DOC)
AGE = Column("Age", description=AGE_DOC)

# -- time --------------------------------------------------------------------------


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 timestamp (micro or not), else None."""
    if not isinstance(value, str) or not value:
        return None
    m = re.match(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", value)
    if m is None:
        return None
    try:
        base = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None
    frac = float(m.group(2)) if m.group(2) else 0.0
    offset = 0
    if m.group(3) != "Z":
        sign = 1 if m.group(3)[0] == "+" else -1
        offset = sign * (int(m.group(3)[1:3]) * 3600 + int(m.group(3)[4:6]) * 60)
    return base + frac - offset


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: two or three significant figures of an age."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: float) -> str:
    """``translateTimestampSince``: ``<unknown>`` for a missing time."""
    at = parse_time(value)
    return "<unknown>" if at is None else human_duration(now - at)


# -- built-in printers ---------------------------------------------------------------


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _sub(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def name_of(obj: JSON) -> str:
    return str(_meta(obj).get("name") or "")


def _age(obj: JSON, now: float) -> str:
    return since(_meta(obj).get("creationTimestamp"), now)


def _restartable(container: Any) -> bool:
    return isinstance(container, dict) and container.get("restartPolicy") == "Always"


def _condition_true(conditions: Any, ctype: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True"
        for c in _list(conditions)
    )


def _terminated_reason(term: JSON, prefix: str) -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _pod_cells(pod: JSON, now: float) -> list[Cell]:
    """``printPod``: READY, the aggregate STATUS reason, RESTARTS, and the wide set."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    conditions = _list(status.get("conditions"))
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for cond in conditions:
        if (
            isinstance(cond, dict)
            and cond.get("type") == "PodScheduled"
            and cond.get("reason") == "SchedulingGated"
        ):
            reason = "SchedulingGated"
    init_specs = {str(c.get("name")): c for c in _list(spec.get("initContainers")) if c}
    total = len(_list(spec.get("containers"))) + sum(
        1 for c in init_specs.values() if _restartable(c)
    )
    ready = restarts = sidecar_restarts = 0
    last_restart = sidecar_last = 0.0
    initializing = False
    init_statuses = [s for s in _list(status.get("initContainerStatuses")) if s]
    for i, cs in enumerate(init_statuses):
        count = int(cs.get("restartCount") or 0)
        finished = parse_time(_sub(cs, "lastState", "terminated", "finishedAt")) or 0.0
        restarts += count
        last_restart = max(last_restart, finished)
        sidecar = _restartable(init_specs.get(str(cs.get("name"))))
        if sidecar:
            sidecar_restarts += count
            sidecar_last = max(sidecar_last, finished)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(term, dict) and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if isinstance(term, dict):
            reason = _terminated_reason(term, "Init:")
        elif (
            isinstance(waiting, dict)
            and waiting.get("reason")
            and waiting["reason"] != "PodInitializing"
        ):
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing or _condition_true(conditions, "Initialized"):
        restarts, last_restart = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed([s for s in _list(status.get("containerStatuses")) if s]):
            restarts += int(cs.get("restartCount") or 0)
            ended = parse_time(_sub(cs, "lastState", "terminated", "finishedAt"))
            last_restart = max(last_restart, ended or 0.0)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if isinstance(waiting, dict) and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif isinstance(term, dict):
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and isinstance(state.get("running"), dict):
                running = True
                ready += 1
        if reason == "Completed" and running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"
    deleting = bool(_meta(pod).get("deletionTimestamp"))
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_cell = str(restarts)
    if restarts and last_restart:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"
    ips = _list(status.get("podIPs"))
    ip = str((ips[0] or {}).get("ip") or "") if ips and isinstance(ips[0], dict) else ""
    gates = [g for g in _list(spec.get("readinessGates")) if isinstance(g, dict)]
    gates_cell = "<none>"
    if gates:
        met = 0
        for gate in gates:
            for cond in conditions:
                if isinstance(cond, dict) and cond.get("type") == gate.get(
                    "conditionType"
                ):
                    met += cond.get("status") == "True"
                    break
        gates_cell = f"{met}/{len(gates)}"
    return [
        name_of(pod),
        f"{ready}/{total}",
        reason,
        restarts_cell,
        _age(pod, now),
        ip or "<none>",
        str(spec.get("nodeName") or "") or "<none>",
        str(status.get("nominatedNodeName") or "") or "<none>",
        gates_cell,
    ]


def _node_cells(node: JSON, now: float) -> list[Cell]:
    """``printNode``: Ready/NotReady/Unknown, SchedulingDisabled, roles from labels."""
    conditions = {
        c.get("type"): c for c in _list(_sub(node, "status", "conditions")) if c
    }
    ready = conditions.get("Ready")
    state = ["Unknown"]
    if isinstance(ready, dict):
        state = ["Ready" if ready.get("status") == "True" else "NotReady"]
    if _sub(node, "spec", "unschedulable"):
        state.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (_meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and len(key) > 24:
            roles.add(key[24:])
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = _sub(node, "status", "nodeInfo") or {}

    def address(kind: str) -> str:
        for addr in _list(_sub(node, "status", "addresses")):
            if isinstance(addr, dict) and addr.get("type") == kind:
                return str(addr.get("address") or "")
        return "<none>"

    return [
        name_of(node),
        ",".join(state),
        ",".join(sorted(roles)) or "<none>",
        _age(node, now),
        str(info.get("kubeletVersion") or ""),
        address("InternalIP"),
        address("ExternalIP"),
        str(info.get("osImage") or "") or "<unknown>",
        str(info.get("kernelVersion") or "") or "<unknown>",
        str(info.get("containerRuntimeVersion") or "") or "<unknown>",
    ]


def _event_cells(event: JSON, now: float) -> list[Cell]:
    """``printEvent`` on the core form: series and eventTime stand in when set."""
    first = since(event.get("firstTimestamp"), now)
    if parse_time(event.get("firstTimestamp")) is None:
        first = since(event.get("eventTime"), now)
    last = since(event.get("lastTimestamp"), now)
    if parse_time(event.get("lastTimestamp")) is None:
        last = first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    regarding = event.get("involvedObject") or {}
    kind = str(regarding.get("kind") or "").lower()
    target = f"{kind}/{regarding['name']}" if regarding.get("name") else kind
    source = event.get("source") or {}
    component = str(source.get("component") or event.get("reportingComponent") or "")
    host = str(source.get("host") or event.get("reportingInstance") or "")
    return [
        last,
        str(event.get("type") or ""),
        str(event.get("reason") or ""),
        target,
        str(regarding.get("fieldPath") or ""),
        f"{component}, {host}" if host else component,
        str(event.get("message") or "").strip(),
        first,
        count,
        name_of(event),
    ]


def _name_cell(obj: JSON, now: float) -> str:
    return name_of(obj)


def _simple(
    *cells: Callable[[JSON, float], Cell],
) -> Callable[[JSON, float], list[Cell]]:
    def render(obj: JSON, now: float) -> list[Cell]:
        return [cell(obj, now) for cell in cells]

    return render


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


@dataclass(frozen=True)
class Printer:
    columns: tuple[Column, ...]
    cells: Callable[[JSON, float], list[Cell]]


_POD = Printer(
    (
        NAME,
        Column("Ready", description="The aggregate readiness state of this pod."),
        Column("Status", description="The aggregate status of the containers."),
        Column("Restarts", description="Container restarts and the last one's age."),
        AGE,
        Column("IP", priority=1, description="IP address allocated to the pod."),
        Column("Node", priority=1, description="The node the pod is bound to."),
        Column(
            "Nominated Node", priority=1, description="Node nominated by preemption."
        ),
        Column("Readiness Gates", priority=1, description="Readiness gates met."),
    ),
    _pod_cells,
)
_NODE = Printer(
    (
        NAME,
        Column("Status", description="The status of the node"),
        Column("Roles", description="The roles of the node"),
        AGE,
        Column("Version", description="Kubelet Version reported by the node."),
        Column("Internal-IP", priority=1, description="The node's internal address."),
        Column("External-IP", priority=1, description="The node's external address."),
        Column("OS-Image", priority=1, description="OS image reported by the node."),
        Column("Kernel-Version", priority=1, description="Kernel version reported."),
        Column("Container-Runtime", priority=1, description="Container runtime."),
    ),
    _node_cells,
)
_EVENT = Printer(
    (
        Column("Last Seen", description="The time of the most recent occurrence."),
        Column("Type", description="Type of this event (Normal, Warning)."),
        Column("Reason", description="Why the action was taken."),
        Column("Object", description="The object this event is about."),
        Column("Subobject", priority=1, description="The object's field path."),
        Column("Source", priority=1, description="The component reporting the event."),
        Column("Message", description="A human-readable description."),
        Column("First Seen", priority=1, description="The first occurrence."),
        Column("Count", priority=1, description="The number of occurrences."),
        Column("Name", priority=1, format="name", description=NAME_DOC),
    ),
    _event_cells,
)
_NAMESPACE = Printer(
    (NAME, Column("Status", description="The status of the namespace"), AGE),
    _simple(_name_cell, lambda o, n: str(_sub(o, "status", "phase") or ""), _age),
)
_PRIORITY_CLASS = Printer(
    (
        NAME,
        Column("Value", "integer", "The priority value."),
        Column("Global-Default", "boolean", "Whether this is the default class."),
        AGE,
        Column("PreemptionPolicy", description="The preemption policy."),
    ),
    _simple(
        _name_cell,
        lambda o, n: int(o.get("value") or 0),
        lambda o, n: bool(o.get("globalDefault")),
        _age,
        lambda o, n: str(o.get("preemptionPolicy") or ""),
    ),
)
_PDB = Printer(
    (
        NAME,
        Column("Min Available", description="Pods that must be available."),
        Column("Max Unavailable", description="Pods that may be unavailable."),
        Column("Allowed Disruptions", "integer", "Pods that may be disrupted now."),
        AGE,
    ),
    _simple(
        _name_cell,
        lambda o, n: _int_or_string(_sub(o, "spec", "minAvailable")),
        lambda o, n: _int_or_string(_sub(o, "spec", "maxUnavailable")),
        lambda o, n: int(_sub(o, "status", "disruptionsAllowed") or 0),
        _age,
    ),
)
_LEASE = Printer(
    (NAME, Column("Holder", description="The holder of the lease."), AGE),
    _simple(
        _name_cell, lambda o, n: str(_sub(o, "spec", "holderIdentity") or ""), _age
    ),
)
_CONFIG_MAP = Printer(
    (NAME, Column("Data", description="Number of data entries."), AGE),
    _simple(
        _name_cell,
        lambda o, n: len(o.get("data") or {}) + len(o.get("binaryData") or {}),
        _age,
    ),
)

BUILTIN: dict[tuple[str, str], Printer] = {
    ("", "Pod"): _POD,
    ("", "Node"): _NODE,
    ("", "Namespace"): _NAMESPACE,
    ("", "Event"): _EVENT,
    ("events.k8s.io", "Event"): _EVENT,
    ("scheduling.k8s.io", "PriorityClass"): _PRIORITY_CLASS,
    ("policy", "PodDisruptionBudget"): _PDB,
    ("coordination.k8s.io", "Lease"): _LEASE,
    ("", "ConfigMap"): _CONFIG_MAP,
}
