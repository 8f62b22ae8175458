"""Trace loading and the Kubernetes object mapping of a pod."""

from __future__ import annotations

import numpy as np

from placewise.benchmarks.fgd.trace import (
    Trace,
    node_resource_slice,
    pod_manifest,
    resource_claim,
)


def test_openb_sizes(trace: Trace) -> None:
    assert trace.n_nodes == 1213 and int(trace.node_gpus.sum()) == 6212
    assert trace.n_pods == 8152
    assert sum(trace.pod_gpu_milli(p) for p in range(trace.n_pods)) == 6_086_800


def test_sharing_pod_as_annotations_and_dra_claim(trace: Trace) -> None:
    p = int(np.flatnonzero((trace.pod_num == 1) & (trace.pod_milli == 470))[0])
    ann = pod_manifest(trace, p)["metadata"]["annotations"]
    assert ann["alibabacloud.com/gpu-milli"] == "470"
    assert ann["alibabacloud.com/gpu-count"] == "1"
    claim = resource_claim(trace, p)
    assert claim is not None
    exact = claim["spec"]["devices"]["requests"][0]["exactly"]
    assert exact["count"] == 1 and exact["capacity"]["requests"]["milli"] == "470"


def test_whole_and_cpu_only_pods(trace: Trace) -> None:
    whole = int(np.flatnonzero(trace.pod_num == 8)[0])
    exact = resource_claim(trace, whole)["spec"]["devices"]["requests"][0]["exactly"]
    assert exact["count"] == 8 and exact["capacity"]["requests"]["milli"] == "1000"
    cpu_only = int(np.flatnonzero(trace.pod_num == 0)[0])
    assert resource_claim(trace, cpu_only) is None
    assert pod_manifest(trace, cpu_only)["metadata"]["annotations"] == {}


def test_node_cards_are_devices(trace: Trace) -> None:
    n = int(np.flatnonzero(trace.node_gpus == 8)[0])
    devices = node_resource_slice(trace, n)["spec"]["devices"]
    assert len(devices) == 8
    assert all(d["capacity"]["milli"]["value"] == "1000" for d in devices)
