"""Kubeconfig files pointing at an emulator, for any kubeconfig-driven tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CONTEXT = "placewise-emulator"


def kubeconfig_dict(server: str, namespace: str = "default") -> dict[str, Any]:
    """A single-context config: plain http, no credentials (the emulator has none)."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {
                    "cluster": CONTEXT,
                    "user": CONTEXT,
                    "namespace": namespace,
                },
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, server: str, namespace: str = "default") -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        yaml.safe_dump(kubeconfig_dict(server, namespace), sort_keys=False),
        encoding="utf-8",
    )
    return out


def multi_kubeconfig_dict(servers: dict[str, str], current: str) -> dict[str, Any]:
    """One config, a context (and cluster and user) per emulated cluster,
    named as the cluster: ``kubectl --context east get nodes``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in servers.items()],
        "users": [{"name": n, "user": {}} for n in servers],
        "contexts": [
            {"name": n, "context": {"cluster": n, "user": n, "namespace": "default"}}
            for n in servers
        ],
        "current-context": current,
        "preferences": {},
    }


def write_multi_kubeconfig(
    path: str | Path, servers: dict[str, str], current: str
) -> Path:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        yaml.safe_dump(multi_kubeconfig_dict(servers, current), sort_keys=False),
        encoding="utf-8",
    )
    return out
