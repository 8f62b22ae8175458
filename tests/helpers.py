"""Small builders shared by tests."""

from __future__ import annotations

from typing import Any

from placewise.adapters.io.loader import snapshot_from_text
from placewise.models.snapshot import Snapshot

NS = """apiVersion: v1
kind: Namespace
metadata: {name: default}
"""


def cq_yaml(
    name: str,
    cohort: str | None = None,
    flavor: str = "f",
    quotas: dict[str, tuple[str, str | None, str | None]] | None = None,
    extra: str = "",
) -> str:
    """A v1beta2 ClusterQueue; quotas: resource -> (nominal, borrowing, lending)."""
    quotas = quotas or {"cpu": ("10", None, None)}
    lines = [
        "apiVersion: kueue.x-k8s.io/v1beta2",
        "kind: ClusterQueue",
        f"metadata: {{name: {name}}}",
        "spec:",
        "  namespaceSelector: {}",
    ]
    if cohort:
        lines.append(f"  cohortName: {cohort}")
    lines += [
        "  resourceGroups:",
        f"  - coveredResources: [{', '.join(quotas)}]",
        "    flavors:",
        f"    - name: {flavor}",
        "      resources:",
    ]
    for r, (nominal, borrow, lend) in quotas.items():
        lines.append(f"      - name: {r}")
        lines.append(f"        nominalQuota: '{nominal}'")
        if borrow is not None:
            lines.append(f"        borrowingLimit: '{borrow}'")
        if lend is not None:
            lines.append(f"        lendingLimit: '{lend}'")
    return "\n".join(lines) + "\n" + extra


def flavor_yaml(name: str = "f") -> str:
    return (
        f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
        f"metadata: {{name: {name}}}\nspec: {{}}\n"
    )


def snapshot(*docs: str) -> Snapshot:
    return snapshot_from_text("---\n".join(docs))


def node_object(name: str, alloc: dict[str, str], **labels: str) -> dict[str, Any]:
    """A Ready core/v1 Node as the API server returns it (capacity = allocatable)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **labels},
        },
        "status": {
            "allocatable": dict(alloc),
            "capacity": dict(alloc),
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
