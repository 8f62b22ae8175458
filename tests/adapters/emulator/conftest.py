"""Fixtures: a fresh emulator per test, reached only through the official client."""

from __future__ import annotations

import json
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


def raw(
    api: client.ApiClient,
    method: str,
    path: str,
    query: dict[str, str] | None = None,
    headers: dict[str, str] | None = None,
    body: Any = None,
) -> tuple[int, dict[str, str], Any]:
    """One request through the official client's transport, with chosen headers.

    For what the typed API methods cannot ask: other ``Accept`` types, query
    parameters such as ``fieldValidation``, the response's headers. Returns the
    status, the headers and the decoded JSON body (lines for a watch).
    """
    method, url, hdrs, data, _ = api.param_serialize(
        method,
        path,
        query_params=list((query or {}).items()),
        header_params={"Content-Type": "application/json", **(headers or {})},
        body=body,
    )
    resp = api.call_api(method, url, header_params=hdrs, body=data)
    resp.read()
    text = (resp.data or b"").decode()
    if query and query.get("watch") == "true" and resp.status == 200:
        decoded: Any = [json.loads(line) for line in text.splitlines() if line]
    else:
        decoded = json.loads(text) if text else None
    return resp.status, dict(resp.getheaders()), decoded
