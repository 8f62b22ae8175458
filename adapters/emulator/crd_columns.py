"""Custom resources' printer columns, as their CRDs declare them.

The apiextensions table convertor puts NAME first, then each
``additionalPrinterColumns`` entry evaluated by JSONPath and typed by the
column (``cellForJSONValue``); a CRD without columns prints NAME and AGE. The
columns below are Kueue's and the coscheduling PodGroup's, checked against
their CRD manifests (Kueue v1beta1 names the cohort ``spec.cohort``, v1beta2
``spec.cohortName``).
"""

from __future__ import annotations

import re
from typing import Any

from placewise.adapters.emulator.printers import (
    AGE_DOC,
    NAME,
    Cell,
    Column,
    Printer,
    name_of,
    parse_time,
    since,
)
from placewise.adapters.emulator.resources import ResourceType
from placewise.models.cluster import KUEUE_GROUP

JSON = dict[str, Any]


# (name, type, jsonPath, description, priority) as in the CRDs' yaml.
CrdColumn = tuple[str, str, str, str, int]
_AGE_CRD: CrdColumn = (
    "Age",
    "date",
    ".metadata.creationTimestamp",
    "Time this workload was created",
    0,
)
_WORKLOAD: tuple[CrdColumn, ...] = (
    ("Queue", "string", ".spec.queueName", "Name of the queue this workload was "
     "submitted to", 0),
    ("Reserved in", "string", ".status.admission.clusterQueue", "Name of the "
     "ClusterQueue where the workload is reserving quota", 0),
    ("Admitted", "string", ".status.conditions[?(@.type=='Admitted')].status",
     "Admission status", 0),
    ("Finished", "string", ".status.conditions[?(@.type=='Finished')].status",
     "Workload finished", 0),
    _AGE_CRD,
)  # fmt: skip


def _cluster_queue(cohort_path: str) -> tuple[CrdColumn, ...]:
    return (
        ("Cohort", "string", cohort_path, "Cohort that this ClusterQueue belongs "
         "to", 0),
        ("Strategy", "string", ".spec.queueingStrategy", "The queueing strategy "
         "used to prioritize workloads", 1),
        ("Pending Workloads", "integer", ".status.pendingWorkloads", "Number of "
         "pending workloads", 0),
        ("Admitted Workloads", "integer", ".status.admittedWorkloads", "Number of "
         "admitted workloads that haven't finished yet", 1),
    )  # fmt: skip


_LOCAL_QUEUE: tuple[CrdColumn, ...] = (
    ("ClusterQueue", "string", ".spec.clusterQueue", "Backing ClusterQueue", 0),
    ("Pending Workloads", "integer", ".status.pendingWorkloads", "Number of pending "
     "workloads", 0),
    ("Admitted Workloads", "integer", ".status.admittedWorkloads", "Number of "
     "admitted workloads that haven't finished yet.", 0),
)  # fmt: skip
_COSCHEDULING_POD_GROUP: tuple[CrdColumn, ...] = (
    ("Phase", "string", ".status.phase", "Current phase of PodGroup.", 0),
    ("MinMember", "integer", ".spec.minMember", "MinMember defines the minimal "
     "number of members/tasks to run the pod group.", 0),
    ("Running", "string", ".status.running", "The number of actively running "
     "pods.", 0),
    ("Succeeded", "string", ".status.succeeded", "The number of pods which reached "
     "phase Succeeded.", 0),
    ("Failed", "string", ".status.failed", "The number of pods which reached phase "
     "Failed.", 0),
    ("Age", "date", ".metadata.creationTimestamp", "Age is the time PodGroup was "
     "created.", 0),
)  # fmt: skip

_MULTIKUEUE_CLUSTER: tuple[CrdColumn, ...] = (
    ("Connected", "string", ".status.conditions[?(@.type=='Active')].status",
     "MultiKueueCluster is connected", 0),
    ("Age", "date", ".metadata.creationTimestamp", "Time this workload was created",
     0),
)  # fmt: skip

# (group, version, kind) -> columns; checked against the upstream CRD manifests.
CRD_COLUMNS: dict[tuple[str, str, str], tuple[CrdColumn, ...]] = {
    (KUEUE_GROUP, "v1beta2", "Workload"): _WORKLOAD,
    (KUEUE_GROUP, "v1beta1", "Workload"): _WORKLOAD,
    (KUEUE_GROUP, "v1beta2", "ClusterQueue"): _cluster_queue(".spec.cohortName"),
    (KUEUE_GROUP, "v1beta1", "ClusterQueue"): _cluster_queue(".spec.cohort"),
    (KUEUE_GROUP, "v1beta2", "LocalQueue"): _LOCAL_QUEUE,
    (KUEUE_GROUP, "v1beta1", "LocalQueue"): _LOCAL_QUEUE,
    (KUEUE_GROUP, "v1beta2", "WorkloadPriorityClass"): (
        ("Value", "integer", ".value", "Value of workloadPriorityClass's Priority", 0),
    ),
    (KUEUE_GROUP, "v1beta1", "WorkloadPriorityClass"): (
        ("Value", "integer", ".value", "Value of workloadPriorityClass's Priority", 0),
    ),
    ("scheduling.x-k8s.io", "v1alpha1", "PodGroup"): _COSCHEDULING_POD_GROUP,
    (KUEUE_GROUP, "v1beta2", "MultiKueueCluster"): _MULTIKUEUE_CLUSTER,
    (KUEUE_GROUP, "v1beta1", "MultiKueueCluster"): _MULTIKUEUE_CLUSTER,
}
DEFAULT_CRD_COLUMNS: tuple[CrdColumn, ...] = (
    ("Age", "date", ".metadata.creationTimestamp", AGE_DOC, 0),
)

_STEP = re.compile(
    r"\.([A-Za-z0-9_-]+)|\[(\d+)\]|\[\?\(@\.([A-Za-z0-9_]+)=='([^']*)'\)\]"
)


def json_path(obj: Any, path: str) -> list[Any]:
    """The values at a printer-column JSONPath: fields, ``[n]`` and ``[?(@.k=='v')]``.

    Only the forms CRD printer columns use here; a filter fans out over a list.
    """
    found: list[Any] = [obj]
    pos = 0
    while pos < len(path):
        m = _STEP.match(path, pos)
        if m is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {pos}")
        pos = m.end()
        nxt: list[Any] = []
        for cur in found:
            if m.group(1) is not None and isinstance(cur, dict) and m.group(1) in cur:
                nxt.append(cur[m.group(1)])
            elif m.group(2) is not None and isinstance(cur, list):
                if int(m.group(2)) < len(cur):
                    nxt.append(cur[int(m.group(2))])
            elif m.group(3) is not None and isinstance(cur, list):
                nxt += [
                    e
                    for e in cur
                    if isinstance(e, dict) and str(e.get(m.group(3))) == m.group(4)
                ]
        found = nxt
    return found


def crd_cell(column: CrdColumn, obj: JSON, now: float) -> Cell:
    """``cellForJSONValue``: the first value, typed by the column; None if absent."""
    _, ctype, path, _, _ = column
    values = json_path(obj, path)
    if not values or values[0] is None:
        return None
    value = values[0]
    if isinstance(value, bool) and ctype in ("integer", "number"):
        return None
    if ctype == "integer":
        return (
            int(value)
            if isinstance(value, int | float) and value == int(value)
            else None
        )
    if ctype == "number":
        return float(value) if isinstance(value, int | float) else None
    if ctype == "boolean":
        return value if isinstance(value, bool) else None
    if ctype == "date":
        return "<invalid>" if parse_time(value) is None else since(value, now)
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def printer(rt: ResourceType) -> Printer:
    """NAME and the CRD's columns (or NAME and AGE)."""
    columns = CRD_COLUMNS.get((rt.group, rt.version, rt.kind), DEFAULT_CRD_COLUMNS)

    def cells(obj: JSON, now: float) -> list[Cell]:
        return [name_of(obj), *(crd_cell(c, obj, now) for c in columns)]

    defs = (Column(name, ctype, doc, prio) for name, ctype, _, doc, prio in columns)
    return Printer((NAME, *defs), cells)
