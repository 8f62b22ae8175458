"""What the watch cache treats as news: a re-solve for real changes only."""

from __future__ import annotations

import time

from tests.adapters.serve.conftest import debug, metric, namespace, node, pod, wait_for


def _solves(sc) -> float:
    return metric(sc, "placewise_solve_duration_seconds_count")


def test_kubelet_churn_does_not_resolve_but_a_label_does(harness_factory):
    """Node heartbeats and pod phase updates change nothing the plan depends
    on: no re-solve.  A node label (which selectors and topology read) does."""
    h = harness_factory([namespace("ml"), node("n1"), node("n2")])
    sc = h.sidecar()
    h.create(pod("waiting", gpus=64))  # never fits: stays pending, keeps solving
    wait_for(lambda: "ml/waiting" in debug(sc).get("gangs", {}), what="planned")
    time.sleep(0.3)
    before = _solves(sc)
    for i in range(5):
        h.core.patch_node_status(
            "n1",
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "lastHeartbeatTime": f"2026-01-01T00:00:0{i}Z",
                        }
                    ]
                }
            },
        )
        h.core.patch_namespaced_pod_status(
            "waiting",
            "ml",
            {
                "status": {
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": f"try {i}",
                        }
                    ]
                }
            },
        )
    time.sleep(0.6)
    assert _solves(sc) == before
    h.core.patch_node("n2", {"metadata": {"labels": {"rack": "r2"}}})
    wait_for(lambda: _solves(sc) > before, what="re-solve on a label change")
