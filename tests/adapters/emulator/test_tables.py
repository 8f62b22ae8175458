"""Server-side printing: the Table and PartialObjectMetadata answers kubectl reads."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator, crd_columns, printers, tables
from placewise.adapters.emulator.resources import ResourceTable
from tests.adapters.emulator.conftest import BASE_OBJECTS, pod, raw

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = (
    f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
NOW = 1_800_000_000.0


def ts(ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(NOW - ago))


# -- printers, no server -------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (121, "2m1s"),
        (599, "9m59s"),
        (600, "10m"),
        (179 * 60 + 59, "179m"),
        (3 * 3600, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (48 * 3600, "2d"),
        (49 * 3600, "2d1h"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400, "2y"),
        (731 * 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_human_duration_matches_apimachinery(seconds: float, text: str) -> None:
    assert printers.human_duration(seconds) == text


def _pod_cells(**fields: Any) -> list[Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "p", "creationTimestamp": ts(30)},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Running"},
    }
    for key, value in fields.items():
        obj[key] = {**obj.get(key, {}), **value}
    return printers.BUILTIN[("", "Pod")].cells(obj, NOW)


def _running(name: str, ready: bool = True, restarts: int = 0) -> dict[str, Any]:
    return {
        "name": name,
        "ready": ready,
        "restartCount": restarts,
        "state": {"running": {"startedAt": ts(10)}},
    }


def test_pod_row_ready_count_node_and_none_markers() -> None:
    cells = _pod_cells(
        spec={"nodeName": "n1"},
        status={
            "containerStatuses": [_running("a"), _running("b", ready=False)],
            "podIPs": [{"ip": "10.0.0.7"}],
        },
    )
    assert cells == [
        "p",
        "1/2",
        "Running",
        "0",
        "30s",
        "10.0.0.7",
        "n1",
        "<none>",
        "<none>",
    ]


def test_pod_status_reasons_follow_print_pod() -> None:
    gated = _pod_cells(
        status={
            "phase": "Pending",
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
            ],
        }
    )
    assert gated[2] == "SchedulingGated"
    deleting = _pod_cells(metadata={"name": "p", "deletionTimestamp": ts(0)})
    assert deleting[2] == "Terminating"
    crash = _pod_cells(
        status={
            "containerStatuses": [
                {
                    "name": "a",
                    "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": ts(300)}},
                }
            ]
        }
    )
    assert crash[2:4] == ["CrashLoopBackOff", "3 (5m ago)"]
    init = _pod_cells(
        spec={"initContainers": [{"name": "i"}]},
        status={
            "phase": "Pending",
            "initContainerStatuses": [
                {"name": "i", "state": {"waiting": {"reason": "PodInitializing"}}}
            ],
        },
    )
    assert init[2] == "Init:0/1"
    done = _pod_cells(
        status={
            "phase": "Succeeded",
            "containerStatuses": [
                {"name": "a", "state": {"terminated": {"reason": "Completed"}}}
            ],
        }
    )
    assert done[2] == "Completed"


def test_readiness_gates_count_true_conditions() -> None:
    cells = _pod_cells(
        spec={"readinessGates": [{"conditionType": "x"}, {"conditionType": "y"}]},
        status={"conditions": [{"type": "x", "status": "True"}]},
    )
    assert cells[-1] == "1/2"


def test_node_row_status_roles_and_addresses() -> None:
    node = {
        "metadata": {
            "name": "n1",
            "creationTimestamp": ts(7200),
            "labels": {
                "node-role.kubernetes.io/worker": "",
                "kubernetes.io/role": "control-plane",
            },
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [{"type": "Ready", "status": "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.1.1.1"}],
            "nodeInfo": {"kubeletVersion": "v1.35.0"},
        },
    }
    cells = printers.BUILTIN[("", "Node")].cells(node, NOW)
    assert cells[:6] == [
        "n1",
        "NotReady,SchedulingDisabled",
        "control-plane,worker",
        "120m",
        "v1.35.0",
        "10.1.1.1",
    ]
    assert cells[6:] == ["<none>", "<unknown>", "<unknown>", "<unknown>"]


def test_event_row_uses_series_and_event_time() -> None:
    event = {
        "metadata": {"name": "e"},
        "eventTime": "2027-01-15T08:00:00.000000Z",
        "series": {"count": 4, "lastObservedTime": ts(60).replace("Z", ".000000Z")},
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Preempted",
        "type": "Warning",
        "message": " moved \n",
        "reportingComponent": "placewise",
        "reportingInstance": "placewise-0",
    }
    cells = printers.BUILTIN[("", "Event")].cells(event, NOW)
    assert cells[:4] == ["60s", "Warning", "Preempted", "pod/p"]
    assert cells[5:7] == ["placewise, placewise-0", "moved"]
    assert cells[8:] == [4, "e"]


def test_crd_json_path_and_typed_cells() -> None:
    wl = {
        "spec": {"queueName": "main"},
        "status": {
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "False"},
            ],
            "count": True,
        },
        "metadata": {"creationTimestamp": ts(90)},
    }
    path = ".status.conditions[?(@.type=='Admitted')].status"
    assert crd_columns.json_path(wl, path) == ["False"]
    assert crd_columns.json_path(wl, ".status.conditions[1].type") == ["Admitted"]
    assert crd_columns.json_path(wl, ".spec.missing") == []
    col = ("X", "integer", ".status.count", "", 0)
    assert crd_columns.crd_cell(col, wl, NOW) is None  # a boolean is no integer
    age = ("Age", "date", ".metadata.creationTimestamp", "", 0)
    assert crd_columns.crd_cell(age, wl, NOW) == "90s"
    with pytest.raises(ValueError, match="unsupported JSONPath"):
        crd_columns.json_path(wl, ".a[*]")


def test_negotiation_order_and_406() -> None:
    assert tables.negotiate(KUBECTL_ACCEPT, "list") == tables.Target("Table", "v1")
    assert tables.negotiate("application/json", "list") is None
    assert tables.negotiate(None, "get") is None
    meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
    assert tables.negotiate(meta, "list") == tables.Target(
        "PartialObjectMetadataList", "v1"
    )
    with pytest.raises(Exception, match="only the following media types"):
        tables.negotiate(meta, "get")  # a single object is no list
    with pytest.raises(Exception, match="only the following media types"):
        tables.negotiate("application/json;as=Table;v=v2;g=meta.k8s.io", "list")


def test_every_served_kind_has_a_printer() -> None:
    for rt in ResourceTable().snapshot():
        p = tables.printer_for(rt)
        assert p.columns[0].name in ("Name", "Last Seen")
        cells = p.cells({"metadata": {"name": "x"}}, NOW)
        assert len(cells) == len(p.columns), rt


# -- through HTTP --------------------------------------------------------------------


def _columns(table: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table["columnDefinitions"]]


def test_pod_list_as_table_with_wide_columns(
    api: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("ml", pod("bound", nodeName="n2"))
    core.create_namespaced_pod("ml", pod("waiting"))
    code, _, table = raw(
        api, "GET", "/api/v1/namespaces/ml/pods", headers={"Accept": KUBECTL_ACCEPT}
    )
    assert code == 200
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert _columns(table) == [
        ("Name", 0),
        ("Ready", 0),
        ("Status", 0),
        ("Restarts", 0),
        ("Age", 0),
        ("IP", 1),
        ("Node", 1),
        ("Nominated Node", 1),
        ("Readiness Gates", 1),
    ]
    rows = {r["cells"][0]: r for r in table["rows"]}
    assert rows["bound"]["cells"][1:3] == ["1/1", "Running"]
    assert rows["bound"]["cells"][6] == "n2"
    assert rows["waiting"]["cells"][2] == "Pending"
    assert rows["waiting"]["cells"][6] == "<none>"
    obj = rows["bound"]["object"]
    assert obj["kind"] == "PartialObjectMetadata"
    assert obj["metadata"]["namespace"] == "ml"
    assert table["metadata"]["resourceVersion"]


def test_include_object_options(api: client.ApiClient, core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("ml", pod("a"))
    path, accept = "/api/v1/namespaces/ml/pods", {"Accept": TABLE}
    _, _, full = raw(api, "GET", path, {"includeObject": "Object"}, accept)
    assert full["rows"][0]["object"]["kind"] == "Pod"
    assert full["rows"][0]["object"]["spec"]["containers"][0]["name"] == "main"
    _, _, none = raw(api, "GET", path, {"includeObject": "None"}, accept)
    assert none["rows"][0]["object"] is None
    code, _, err = raw(api, "GET", path, {"includeObject": "All"}, accept)
    assert code == 400 and "unrecognized includeObject" in err["message"]


def test_get_one_as_table_and_partial_metadata(
    api: client.ApiClient,
) -> None:
    code, _, table = raw(api, "GET", "/api/v1/nodes/n3", headers={"Accept": TABLE})
    assert code == 200 and [r["cells"][0] for r in table["rows"]] == ["n3"]
    assert table["rows"][0]["cells"][1] == "Ready"
    accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
    _, _, partial = raw(api, "GET", "/api/v1/nodes/n3", headers={"Accept": accept})
    assert partial["kind"] == "PartialObjectMetadata"
    assert partial["metadata"]["labels"]["zone"] == "b"
    lst = accept.replace("PartialObjectMetadata", "PartialObjectMetadataList")
    _, _, listed = raw(api, "GET", "/api/v1/nodes", {"limit": "2"}, {"Accept": lst})
    assert [i["metadata"]["name"] for i in listed["items"]] == ["n1", "n2"]
    assert listed["metadata"]["continue"]
    code, _, err = raw(api, "GET", "/api/v1/nodes", headers={"Accept": accept})
    assert code == 406 and err["reason"] == "NotAcceptable"


def test_plain_json_still_served(api: client.ApiClient) -> None:
    accept = "application/json,application/json;as=Table;v=v1;g=meta.k8s.io"
    _, _, listed = raw(api, "GET", "/api/v1/nodes", headers={"Accept": accept})
    assert listed["kind"] == "NodeList"


def test_table_watch_sends_headers_once(
    api: client.ApiClient, core: client.CoreV1Api
) -> None:
    core.create_namespaced_pod("ml", pod("a"))
    core.create_namespaced_pod("ml", pod("b"))
    query = {"watch": "true", "timeoutSeconds": "1"}
    code, _, events = raw(
        api, "GET", "/api/v1/namespaces/ml/pods", query, {"Accept": TABLE}
    )
    assert code == 200
    assert [e["type"] for e in events] == ["ADDED", "ADDED"]
    first, second = (e["object"] for e in events)
    assert first["kind"] == second["kind"] == "Table"
    assert first["columnDefinitions"][0]["name"] == "Name"
    assert second["columnDefinitions"] is None
    assert [first["rows"][0]["cells"][0], second["rows"][0]["cells"][0]] == ["a", "b"]


KUEUE_OBJECTS: list[dict[str, Any]] = [
    *BASE_OBJECTS,
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"cohortName": "all", "queueingStrategy": "BestEffortFIFO"},
        "status": {"pendingWorkloads": 2, "admittedWorkloads": 1},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": "old"},
        "spec": {"cohort": "legacy"},
    },
    {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ml"},
        "spec": {"queueName": "lq"},
        "status": {
            "admission": {"clusterQueue": "cq"},
            "conditions": [{"type": "Admitted", "status": "True"}],
        },
    },
]


def test_kueue_printer_columns() -> None:
    with Emulator(KUEUE_OBJECTS) as emu:
        api = emu.api_client()
        base = "/apis/kueue.x-k8s.io"
        _, _, wl = raw(
            api, "GET", f"{base}/v1beta2/workloads", headers={"Accept": TABLE}
        )
        assert [c["name"] for c in wl["columnDefinitions"]] == [
            "Name",
            "Queue",
            "Reserved in",
            "Admitted",
            "Finished",
            "Age",
        ]
        assert wl["rows"][0]["cells"][:5] == ["w", "lq", "cq", "True", None]
        _, _, cq = raw(
            api, "GET", f"{base}/v1beta2/clusterqueues", headers={"Accept": TABLE}
        )
        assert _columns(cq) == [
            ("Name", 0),
            ("Cohort", 0),
            ("Strategy", 1),
            ("Pending Workloads", 0),
            ("Admitted Workloads", 1),
        ]
        cells = {r["cells"][0]: r["cells"] for r in cq["rows"]}
        assert cells["cq"] == ["cq", "all", "BestEffortFIFO", 2, 1]
        _, _, old = raw(
            api, "GET", f"{base}/v1beta1/clusterqueues/old", headers={"Accept": TABLE}
        )
        assert old["rows"][0]["cells"][1] == "legacy"  # v1beta1 prints spec.cohort
        _, _, topo = raw(
            api, "GET", f"{base}/v1beta2/topologies", headers={"Accept": TABLE}
        )
        assert [c["name"] for c in topo["columnDefinitions"]] == ["Name", "Age"]
        api.close()
