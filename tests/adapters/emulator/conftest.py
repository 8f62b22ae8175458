"""Fixtures: a fresh emulator per test, reached only through the official client."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from placewise.adapters.emulator import Emulator
from tests.helpers import node_object

NODE_ALLOC = {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}


def node(name: str, **labels: str) -> dict[str, Any]:
    return node_object(name, NODE_ALLOC, **labels)


def pod(
    name: str,
    namespace: str = "ml",
    labels: dict[str, str] | None = None,
    cpu: str = "1",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
            **spec,
        },
    }


BASE_OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml"}},
    node("n1", zone="a"),
    node("n2", zone="a"),
    node("n3", zone="b"),
]


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(BASE_OBJECTS, bookmark_interval=0.2) as emu:
        yield emu


@pytest.fixture
def api(emulator: Emulator) -> Iterator[client.ApiClient]:
    api_client = emulator.api_client()
    yield api_client
    api_client.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)
