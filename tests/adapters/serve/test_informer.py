"""What the watch cache treats as news: a re-solve for real changes only."""

from __future__ import annotations

import time

from placewise.adapters.serve.kube.informer import Cache
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


def _wl(rv: str, evicted: bool, uid: str = "u1") -> dict:
    return {
        "metadata": {"namespace": "ml", "name": "w", "uid": uid, "resourceVersion": rv},
        "status": {"conditions": [{"type": "Evicted", "status": str(evicted)}]},
    }


def test_a_late_event_does_not_undo_our_own_write():
    """The cache holds the sidecar's write at once; the watch event of the
    state before it, arriving later, must not bring that state back (a
    re-admitted Workload read as still evicted is what let a re-solve take
    it back with nothing changed)."""
    cache = Cache()
    cache.apply("Workload", "MODIFIED", _wl("15", evicted=False))  # our write
    gen = cache.generation
    cache.apply("Workload", "MODIFIED", _wl("10", evicted=True))  # the late event
    assert cache.get("Workload", "ml/w") == _wl("15", evicted=False)
    assert cache.generation == gen
    cache.replace("Workload", [_wl("11", evicted=True)])  # a list served before it
    assert cache.get("Workload", "ml/w") == _wl("15", evicted=False)
    cache.apply("Workload", "MODIFIED", _wl("16", evicted=True))  # news
    assert cache.get("Workload", "ml/w") == _wl("16", evicted=True)
    assert cache.generation > gen


def test_versions_of_other_objects_or_opaque_ones_are_applied():
    """A recreated object (new UID) is news whatever its version, a version
    that is not an integer is never compared, and the deletion of an older
    object of the same name leaves the newer one in place."""
    cache = Cache()
    cache.apply("Workload", "MODIFIED", _wl("15", evicted=False))
    cache.apply("Workload", "ADDED", _wl("3", evicted=True, uid="u2"))
    assert cache.get("Workload", "ml/w") == _wl("3", evicted=True, uid="u2")
    cache.apply("Workload", "DELETED", _wl("20", evicted=False))  # the old u1
    assert cache.get("Workload", "ml/w") == _wl("3", evicted=True, uid="u2")
    cache.apply("Workload", "MODIFIED", _wl("abc", evicted=False, uid="u2"))
    assert cache.get("Workload", "ml/w") == _wl("abc", evicted=False, uid="u2")
    cache.apply("Workload", "DELETED", _wl("21", evicted=False, uid="u2"))
    assert cache.get("Workload", "ml/w") is None
