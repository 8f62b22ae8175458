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
