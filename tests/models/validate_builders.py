"""Small builders for the validator tests.

Clusters (flavors, queues, nodes) are hand-written YAML files under
``tests/data/validate/``; workloads and plans are built here from a few
keywords so that each test states only what matters to its rule.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml

from placewise.adapters.io.loader import load_snapshot
from placewise.models.plan import Plan, plan_from_dict
from placewise.models.snapshot import Snapshot
from placewise.models.validate import Violation, validate

DATA = Path(__file__).resolve().parents[1] / "data" / "validate"
KUEUE = "kueue.x-k8s.io/v1beta1"


def pod_set(
    name: str = "main",
    count: int = 1,
    requests: dict[str, str] | None = None,
    *,
    min_count: int | None = None,
    annotations: dict[str, str] | None = None,
    node_selector: dict[str, str] | None = None,
    tolerations: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """A pod set of ``count`` pods with one container's ``requests``."""
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "resources": {
                    "requests": requests if requests is not None else {"cpu": "1"}
                },
            }
        ],
    }
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    template: dict[str, Any] = {"spec": spec}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    out: dict[str, Any] = {"name": name, "count": count, "template": template}
    if min_count is not None:
        out["minCount"] = min_count
    return out


def psa(
    name: str = "main",
    flavors: dict[str, str] | None = None,
    usage: dict[str, str] | None = None,
    count: int = 1,
    domains: list[tuple[list[str], int]] | None = None,
    levels: list[str] | None = None,
) -> dict[str, Any]:
    """A podSetAssignment as it appears in a Plan or ``status.admission``."""
    out: dict[str, Any] = {
        "name": name,
        "flavors": flavors if flavors is not None else {"cpu": "f"},
        "resourceUsage": usage if usage is not None else {"cpu": str(count)},
        "count": count,
    }
    if domains is not None:
        out["topologyAssignment"] = {
            "levels": levels or ["kubernetes.io/hostname"],
            "domains": [{"values": v, "count": c} for v, c in domains],
        }
    return out


def workload(
    key: str,
    queue: str = "lq",
    pod_sets: list[dict[str, Any]] | None = None,
    *,
    priority: int = 0,
    created: str = "2026-01-01T00:00:00Z",
    running_in: str | None = None,
    assignments: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A v1beta1 Workload; ``running_in`` makes it hold quota there."""
    ns, name = key.split("/")
    obj: dict[str, Any] = {
        "apiVersion": KUEUE,
        "kind": "Workload",
        "metadata": {"namespace": ns, "name": name, "creationTimestamp": created},
        "spec": {
            "queueName": queue,
            "priority": priority,
            "podSets": pod_sets or [pod_set()],
        },
    }
    if running_in is not None:
        obj["status"] = {
            "admission": {
                "clusterQueue": running_in,
                "podSetAssignments": assignments or [psa()],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "Admitted",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
    return obj


def running(
    key: str,
    cq: str,
    cpu: int,
    *,
    flavor: str = "f",
    queue: str = "lq",
    priority: int = 0,
    created: str = "2025-12-01T00:00:00Z",
) -> dict[str, Any]:
    """A running single-pod workload holding ``cpu`` cores of ``flavor``."""
    return workload(
        key,
        queue,
        [pod_set(requests={"cpu": str(cpu)})],
        priority=priority,
        created=created,
        running_in=cq,
        assignments=[psa(flavors={"cpu": flavor}, usage={"cpu": str(cpu)})],
    )


def pending(
    key: str,
    cpu: int = 1,
    *,
    queue: str = "lq",
    priority: int = 0,
    created: str = "2026-01-01T00:00:00Z",
) -> dict[str, Any]:
    """A pending single-pod workload requesting ``cpu`` cores."""
    return workload(
        key,
        queue,
        [pod_set(requests={"cpu": str(cpu)})],
        priority=priority,
        created=created,
    )


def load(base: str, *objects: dict[str, Any]) -> Snapshot:
    """A data file plus extra objects, loaded as one instance."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = Path(tmp) / "extra.yaml"
        extra.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        return load_snapshot([DATA / base, extra])


def admission(key: str, cq: str, *psas: dict[str, Any]) -> dict[str, Any]:
    return {
        "workload": key,
        "clusterQueue": cq,
        "podSetAssignments": list(psas) or [psa()],
    }


def plan(
    admissions: list[dict[str, Any]] | None = None,
    pending: list[str] | None = None,
    preemptions: list[tuple[str, str, str]] | None = None,
) -> Plan:
    """A Plan read through the same parser the CLI uses."""
    return plan_from_dict(
        {
            "apiVersion": "placewise.io/v1alpha1",
            "kind": "Plan",
            "solver": {"name": "hand-made", "status": "FEASIBLE", "wallSeconds": 0},
            "admissions": admissions or [],
            "preemptions": [
                {"workload": v, "preemptor": p, "reason": r}
                for v, p, r in preemptions or []
            ],
            "pending": [{"workload": k, "reason": "waiting"} for k in pending or []],
        }
    )


def check(snap: Snapshot, p: Plan) -> list[Violation]:
    return validate(snap, p)


def rules(violations: list[Violation]) -> list[str]:
    return sorted(v.rule for v in violations)


def policy_rules(violations: list[Violation]) -> list[str]:
    """Rule ids without ``preemption.unneeded``.

    The policy tests evict a victim in a cohort with quota to spare so that
    one policy rule decides; Kueue's fill-back would keep such a victim, and
    that rule has tests of its own (``test_validate_needed.py``).
    """
    return [r for r in rules(violations) if r != "preemption.unneeded"]
