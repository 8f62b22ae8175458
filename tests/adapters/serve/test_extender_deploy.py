"""deploy/ keeps the extender private and the sidecar's rights narrow.

The manifests are read as kubectl would apply them; the sidecar's arguments
go through the real ``placewise serve`` parser, so a flag that does not exist
or a port that does not line up fails here, not in a cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from placewise.cli import build_parser

ROOT = Path(__file__).resolve().parents[3]
JSON = dict[str, Any]


def manifests() -> dict[tuple[str, str], JSON]:
    out = {}
    for path in sorted((ROOT / "deploy").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out[(doc["kind"], doc["metadata"]["name"])] = doc
    return out


def test_extender_stays_on_loopback_and_only_metrics_are_reachable():
    m = manifests()
    pod = m[("Deployment", "placewise-scheduler")]["spec"]["template"]["spec"]
    sidecar = next(c for c in pod["containers"] if c["name"] == "placewise")
    argv = [a.replace("$(POD_NAME)", "pod-0") for a in sidecar["command"][1:]]
    args = build_parser().parse_args(argv)
    assert args.listen[0] == "127.0.0.1"
    assert args.metrics_listen[0] == "0.0.0.0"
    assert not args.enable_debug
    assert sidecar["ports"] == [
        {"name": "metrics", "containerPort": args.metrics_listen[1]}
    ]
    for probe in ("readinessProbe", "livenessProbe"):
        assert sidecar[probe]["httpGet"]["port"] == "metrics"
    assert sidecar["securityContext"]["readOnlyRootFilesystem"] is True
    # kube-scheduler calls the extender on loopback, at the sidecar's port.
    (cm,) = [d for (k, _), d in m.items() if k == "ConfigMap"]
    (entry,) = yaml.safe_load(cm["data"]["config.yaml"])["extenders"]
    url = urlsplit(entry["urlPrefix"])
    assert (url.hostname, url.port) == args.listen
    assert url.path == args.prefix
    # The only Service and the only allowed ingress: the metrics port.
    services = [d for (k, _), d in m.items() if k == "Service"]
    assert [p["targetPort"] for s in services for p in s["spec"]["ports"]] == [
        "metrics"
    ]
    (policy,) = [d for (k, _), d in m.items() if k == "NetworkPolicy"]
    assert policy["spec"]["podSelector"]["matchLabels"] == {
        "app": "placewise-scheduler"
    }
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    (rule,) = policy["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": args.metrics_listen[1]}]
    assert rule["from"] == [
        {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": "monitoring"}
            }
        }
    ]


def test_rbac_is_narrow_per_mode():
    m = manifests()
    roles = {
        name: doc["rules"]
        for (kind, name), doc in m.items()
        if kind in ("ClusterRole", "Role")
    }
    for name, rules in roles.items():
        for rule in rules:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"], name
            assert "secrets" not in rule["resources"], name
    view = {v for r in roles["placewise-view"] for v in r["verbs"]}
    assert view == {"get", "list", "watch"}

    def grants(role: str) -> set[tuple[str, str]]:
        return {
            (res, verb)
            for r in roles[role]
            for res in r["resources"]
            for verb in r["verbs"]
        }

    extender = grants("placewise-extender")
    assert ("pods", "patch") not in extender  # only binder mode patches pods
    assert {("pods/binding", "create"), ("pods/eviction", "create")} <= extender
    assert grants("placewise-binder") - extender == {("pods", "patch")}
    assert grants("placewise-kueue") == {
        ("workloads/status", "patch"),
        ("events", "create"),
    }
    leases = roles["placewise-leases"]
    assert {"get", "update"} <= {
        v for r in leases if r.get("resourceNames") for v in r["verbs"]
    }
    bound = {
        d["roleRef"]["name"]
        for (k, _), d in m.items()
        if k in ("ClusterRoleBinding", "RoleBinding")
    }
    assert {"placewise-view", "placewise-extender", "placewise-leases"} <= bound
    assert not {"placewise-binder", "placewise-kueue"} & bound
