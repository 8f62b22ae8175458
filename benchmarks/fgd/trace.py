"""The openb CSVs as typed numpy arrays, and how a row becomes Kubernetes objects.

Every policy, the feasibility checker and the bound read the same immutable
:class:`Trace`, so a unit or clipping mistake shows up everywhere at once
instead of hiding in one policy.

How a pod is expressed in Kubernetes
------------------------------------
The FGD simulator (and Alibaba's open-gpu-share scheduler it models) uses pod
annotations; :func:`pod_manifest` emits exactly those:

* ``alibabacloud.com/gpu-milli``: milli-GPU *per card*, clipped to 0..1000;
* ``alibabacloud.com/gpu-count``: number of cards;
* ``alibabacloud.com/gpu-card-model``: allowed models, ``|``-separated.

The same request as Dynamic Resource Allocation (``resource.k8s.io/v1``) is what
:func:`resource_claim` emits, and it is how placewise expects such pods to be
written on a current cluster: every card is a *device* in the node's
``ResourceSlice`` (the device level below the host that every policy here
models), with a ``model`` attribute and a consumable ``milli`` capacity of 1000
(KEP-5075 consumable capacity, ``allowMultipleAllocations: true``).

* a GPU-sharing pod (``gpu_milli < 1000``) requests ``count: 1`` device with
  ``capacity.requests.milli = gpu_milli``, so it must fit inside one card;
* a multi-GPU pod requests ``count: n`` whole devices (``milli = 1000`` each,
  i.e. exclusive cards);
* ``gpu_spec`` becomes a CEL selector on ``device.attributes[...].model``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CARD_MILLI",
    "MAX_CARDS",
    "Trace",
    "data_dir",
    "load_trace",
    "node_resource_slice",
    "pod_manifest",
    "resource_claim",
]

CARD_MILLI = 1000  # capacity of one GPU card in milli-GPU
MAX_CARDS = 8  # openb nodes carry 1..8 cards; arrays are padded to this width
_DEVICE_CLASS = "gpu.placewise.io"
_NODE_FILE = "openb_node_list_gpu_node.csv"

IntArray = NDArray[np.int64]


def data_dir(shared: Path | None = None) -> Path:
    """Where the openb CSVs live: ``../shared`` beside the checkout by default."""
    root = (
        shared if shared is not None else Path(__file__).resolve().parents[3] / "shared"
    )
    return root / "data" / "alibaba-gpu-v2023"


def trace_files(name: str = "default", shared: Path | None = None) -> list[Path]:
    """The files :func:`load_trace` reads: whoever runs a replay checks these
    first, so a missing folder is reported as such, not as a replay failure."""
    base = data_dir(shared)
    return [base / _NODE_FILE, base / f"openb_pod_list_{name}.csv"]


@dataclass(frozen=True)
class Trace:
    """Nodes and the original pod list of one openb workload file.

    Pods keep CSV meaning after the simulator's conversion: ``milli`` is the
    per-card request (0 for CPU-only pods, which carry no GPU annotation),
    ``num`` the card count (0 for CPU-only pods).  Nodes and pods are sorted
    by name, the order the simulator indexes them in.
    """

    name: str
    node_names: tuple[str, ...]
    node_cpu: IntArray
    node_mem: IntArray
    node_gpus: IntArray
    node_model: IntArray  # index into ``models``
    models: tuple[str, ...]
    pod_names: tuple[str, ...]
    pod_cpu: IntArray
    pod_mem: IntArray
    pod_num: IntArray
    pod_milli: IntArray
    pod_spec: tuple[str, ...]  # '' = any model, else 'A|B'
    pod_model_mask: IntArray  # bit m set = model m allowed; all bits when any

    @property
    def n_nodes(self) -> int:
        return len(self.node_names)

    @property
    def n_pods(self) -> int:
        return len(self.pod_names)

    @property
    def total_gpu_milli(self) -> int:
        return int(self.node_gpus.sum()) * CARD_MILLI

    def pod_gpu_milli(self, pod: int) -> int:
        """Total GPU milli one pod asks for (what counts toward 'arrived')."""
        return int(self.pod_num[pod] * self.pod_milli[pod])

    def is_sharing(self, pod: int) -> bool:
        """A sharing pod must fit inside one card; others take whole cards."""
        return 0 < int(self.pod_milli[pod]) < CARD_MILLI


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def load_trace(name: str = "default", shared: Path | None = None) -> Trace:
    """Load ``openb_pod_list_<name>.csv`` with the GPU-node list.

    Conversion follows the simulator's CSV-to-YAML step: GPU annotations only
    when ``num_gpu != 0``, milli clipped to 0..1000, empty ``gpu_spec`` = any.
    """
    base = data_dir(shared)
    nodes = sorted(_read_csv(base / _NODE_FILE), key=lambda r: r["sn"])
    pods = sorted(
        _read_csv(base / f"openb_pod_list_{name}.csv"), key=lambda r: r["name"]
    )
    models = tuple(sorted({r["model"] for r in nodes}))
    model_ix = {m: i for i, m in enumerate(models)}
    all_models = (1 << len(models)) - 1

    num = np.array([int(r["num_gpu"]) for r in pods], dtype=np.int64)
    raw_milli = np.array([int(r["gpu_milli"]) for r in pods], dtype=np.int64)
    milli = np.where(num != 0, np.clip(raw_milli, 0, CARD_MILLI), 0)
    num = np.where(milli > 0, num, 0)  # a zero-milli request asks for no card
    specs: list[str] = []
    masks: list[int] = []
    for r in pods:
        allowed = [m for m in r.get("gpu_spec", "").split("|") if m]
        specs.append("|".join(allowed))
        mask = 0
        for m in allowed:
            mask |= 1 << model_ix[m] if m in model_ix else 0
        masks.append(mask if allowed else all_models)
    return Trace(
        name=name,
        node_names=tuple(r["sn"] for r in nodes),
        node_cpu=np.array([int(r["cpu_milli"]) for r in nodes], dtype=np.int64),
        node_mem=np.array([int(r["memory_mib"]) for r in nodes], dtype=np.int64),
        node_gpus=np.array([int(r["gpu"]) for r in nodes], dtype=np.int64),
        node_model=np.array([model_ix[r["model"]] for r in nodes], dtype=np.int64),
        models=models,
        pod_names=tuple(r["name"] for r in pods),
        pod_cpu=np.array([int(r["cpu_milli"]) for r in pods], dtype=np.int64),
        pod_mem=np.array([int(r["memory_mib"]) for r in pods], dtype=np.int64),
        pod_num=num,
        pod_milli=milli,
        pod_spec=tuple(specs),
        pod_model_mask=np.array(masks, dtype=np.int64),
    )


def pod_manifest(trace: Trace, pod: int, name: str | None = None) -> dict[str, Any]:
    """The Pod the FGD simulator builds from one CSV row (annotation form)."""
    ann: dict[str, str] = {}
    if trace.pod_num[pod] > 0:
        ann["alibabacloud.com/gpu-milli"] = str(int(trace.pod_milli[pod]))
        ann["alibabacloud.com/gpu-count"] = str(int(trace.pod_num[pod]))
        if trace.pod_spec[pod]:
            ann["alibabacloud.com/gpu-card-model"] = trace.pod_spec[pod]
    req = {
        "cpu": f"{int(trace.pod_cpu[pod])}m",
        "memory": f"{int(trace.pod_mem[pod])}Mi",
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name or trace.pod_names[pod],
            "namespace": "paib-gpu",
            "annotations": ann,
        },
        "spec": {
            "containers": [
                {"name": "main", "resources": {"requests": req, "limits": dict(req)}}
            ]
        },
    }


def resource_claim(
    trace: Trace, pod: int, name: str | None = None
) -> dict[str, Any] | None:
    """The same GPU request as a DRA ResourceClaim (None for CPU-only pods)."""
    num = int(trace.pod_num[pod])
    if num == 0:
        return None
    milli = int(trace.pod_milli[pod])
    exact: dict[str, Any] = {"deviceClassName": _DEVICE_CLASS, "count": num}
    if trace.pod_spec[pod]:
        models = ", ".join(f'"{m}"' for m in trace.pod_spec[pod].split("|"))
        exact["selectors"] = [
            {
                "cel": {
                    "expression": (
                        f"device.attributes['{_DEVICE_CLASS}'].model in [{models}]"
                    )
                }
            }
        ]
    # Whole cards are requested as their full capacity, so no other claim can
    # share them; a sharing pod asks for a slice of one card's capacity.
    exact["capacity"] = {
        "requests": {"milli": str(milli if milli < CARD_MILLI else CARD_MILLI)}
    }
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{name or trace.pod_names[pod]}-gpu",
            "namespace": "paib-gpu",
        },
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exact}]}},
    }


def node_resource_slice(trace: Trace, node: int) -> dict[str, Any]:
    """The node's cards as DRA devices with a consumable 1000-milli capacity."""
    model = trace.models[int(trace.node_model[node])]
    devices = [
        {
            "name": f"gpu-{c}",
            "allowMultipleAllocations": True,
            "attributes": {"model": {"string": model}, "index": {"int": c}},
            "capacity": {"milli": {"value": str(CARD_MILLI)}},
        }
        for c in range(int(trace.node_gpus[node]))
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{trace.node_names[node]}-gpus"},
        "spec": {
            "nodeName": trace.node_names[node],
            "driver": _DEVICE_CLASS,
            "pool": {
                "name": trace.node_names[node],
                "generation": 1,
                "resourceSliceCount": 1,
            },
            "devices": devices,
        },
    }
