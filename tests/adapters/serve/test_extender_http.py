"""The extender's HTTP surface against a hostile client, over real sockets.

One sidecar with small limits (1 MiB body, 1 s read deadline, 1.5 s idle,
6 connections) serves the whole module; every test ends by checking that a
well-formed filter call is still answered correctly and quickly, and that
nothing the client did put a traceback in the log.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time
from collections.abc import Iterator
from http.client import HTTPConnection, HTTPResponse
from typing import Any

import pytest

from placewise.adapters.emulator import Emulator, gojson
from placewise.adapters.serve import ServeConfig, Sidecar
from placewise.adapters.serve.server import Limits
from placewise.cli import build_parser
from tests.adapters.serve.conftest import (
    Harness,
    debug,
    http,
    kueue_group,
    metric,
    namespace,
    node,
    wait_for,
)

LIMITS = Limits(max_body=1 << 20, read_timeout=1.0, idle_timeout=1.5, max_connections=6)


@pytest.fixture(scope="module")
def guarded() -> Iterator[tuple[Sidecar, bytes, str]]:
    """A sidecar with small limits and no --enable-debug; a planned gang and a
    well-formed filter body for one of its pods, with the expected node."""
    emu = Emulator(
        [namespace("ml"), node("n1"), node("n2"), node("n3")], bookmark_interval=0.2
    ).start()
    h = Harness(emu)
    try:
        sc = h.sidecar(limits=LIMITS, enable_debug=False)
        h.create(*kueue_group("job", 2, gpus=4))

        def planned() -> dict[str, str] | None:
            state = sc.loop.state
            gp = state.gangs.get("ml/job") if state is not None else None
            return gp.nodes if gp is not None and gp.admitted else None

        nodes = wait_for(planned, what="plan")
        pod = next(p for p in h.pods("ml") if p["metadata"]["name"] == "job-0")
        body = gojson.extender_args(pod, [node("n1"), node("n2"), node("n3")], True)
        yield sc, body, nodes["job-0"]
    finally:
        h.close()
        emu.stop()


def still_serves(guarded: tuple[Sidecar, bytes, str]) -> None:
    """A well-formed filter call is answered, correctly and at once."""
    sc, body, planned = guarded
    started = time.monotonic()
    status, reply = http(sc.url + "/scheduler/filter", body)
    assert status == 200, reply
    assert json.loads(reply)["NodeNames"] == [planned]
    assert time.monotonic() - started < 1.0


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    bad = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert not bad, [r.getMessage() for r in bad]


def connect(sc: Sidecar) -> socket.socket:
    assert sc.http is not None
    return socket.create_connection(sc.http.address, timeout=5)


def exchange(sc: Sidecar, data: bytes, half_close: bool = False) -> tuple[int, Any]:
    """Send raw bytes, read one response: (status, decoded JSON body)."""
    with connect(sc) as s:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        resp = HTTPResponse(s)
        resp.begin()
        body = resp.read()
        assert resp.getheader("Connection") == "close"
        return resp.status, json.loads(body)


def request(path: str, body: bytes, *headers: str) -> bytes:
    head = "".join(h + "\r\n" for h in headers)
    return f"POST {path} HTTP/1.1\r\nHost: x\r\n{head}\r\n".encode() + body


def pod_json(**meta: Any) -> dict[str, Any]:
    return {"metadata": {"name": "job-0", "namespace": "ml", **meta}}


GOOD_POD = pod_json()


@pytest.mark.parametrize(
    ("verb", "doc", "status", "message"),
    [
        ("filter", {"Pod": "str"}, 200, "Pod: expected object, got string"),
        ("filter", {"Pod": None}, 200, "Pod: required"),
        ("filter", {"Pod": {"metadata": "x"}}, 200, "Pod.metadata: expected object"),
        ("filter", {"Pod": pod_json(name=7)}, 200, "Pod.metadata.name: expected"),
        (
            "filter",
            {"Pod": GOOD_POD, "NodeNames": "n1"},
            200,
            "NodeNames: expected array, got string",
        ),
        ("filter", {"Pod": GOOD_POD, "NodeNames": [1]}, 200, "NodeNames[0]: expected"),
        (
            "filter",
            {"Pod": GOOD_POD, "Nodes": {"items": ["n1"]}},
            200,
            "Nodes.items[0]: expected a Node",
        ),
        ("filter", [], 200, "expected a JSON object, got array"),
        ("filter", None, 200, "expected a JSON object, got null"),
        ("prioritize", {"Pod": []}, 400, "Pod: expected object, got array"),
        ("prioritize", {"Pod": GOOD_POD, "NodeNames": {}}, 400, "NodeNames: expected"),
        (
            "preempt",
            {"Pod": GOOD_POD, "NodeNameToMetaVictims": {"n1": "x"}},
            400,
            "NodeNameToMetaVictims.n1: expected object",
        ),
        ("preempt", {"Pod": GOOD_POD, "NodeNameToVictims": []}, 400, "expected object"),
        ("bind", {"PodName": 5}, 200, "PodName: expected string, got number"),
        ("bind", {"PodName": "job-0"}, 200, "PodNamespace: required"),
        (
            "bind",
            {"PodName": "job-0", "PodNamespace": "ml", "Node": ["n1"]},
            200,
            "Node: expected string, got array",
        ),
    ],
)
def test_type_confused_bodies_are_refused_with_the_field(
    guarded, caplog, verb, doc, status, message
):
    """Go's decoder would reject these; the sidecar says which field, in the
    reply's Error where the reply type has one (kube-scheduler shows it in the
    pod's events), else with a 400, and acts on nothing."""
    sc, _, _ = guarded
    code, reply = http(f"{sc.url}/scheduler/{verb}", json.dumps(doc).encode())
    assert code == status, reply
    text = json.loads(reply)["Error" if status == 200 else "error"]
    assert text.startswith(f"placewise: bad {verb} request: ")
    assert message in text
    if verb == "filter":
        assert json.loads(reply)["NodeNames"] == []
    no_tracebacks(caplog)
    still_serves(guarded)


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"Pod":' + b'{"a":' * 150 + b"1" + b"}" * 150 + b"}",
        b"\xff\xfe{}",
        b"{not json",
    ],
    ids=["unclosed-100k-deep", "valid-150-deep", "not-utf8", "syntax"],
)
def test_deep_or_broken_json_is_refused(guarded, caplog, body):
    sc, _, _ = guarded
    for verb in ("filter", "prioritize"):
        code, reply = http(f"{sc.url}/scheduler/{verb}", body)
        text = json.loads(reply)["Error" if verb == "filter" else "error"]
        assert code == (200 if verb == "filter" else 400)
        assert "nested deeper than 100" in text or "not JSON" in text, text
    no_tracebacks(caplog)
    still_serves(guarded)


@pytest.mark.parametrize(
    ("data", "status", "message"),
    [
        (request("/scheduler/filter", b"{}", "Content-Length: abc"), 400, "bad Con"),
        (request("/scheduler/filter", b"{}", "Content-Length: -2"), 400, "bad Con"),
        (
            request(
                "/scheduler/filter", b"{}", "Content-Length: 2", "Content-Length: 9"
            ),
            400,
            "bad Content-Length",
        ),
        (request("/scheduler/filter", b"{}"), 411, "Content-Length required"),
        (
            request(
                "/scheduler/filter",
                b"2\r\n{}\r\n0\r\n\r\n",
                "Transfer-Encoding: chunked",
            ),
            400,
            "Transfer-Encoding",
        ),
        (b"GARBAGE\r\n\r\n", 400, "Bad"),
        (b"PUT /scheduler/filter HTTP/1.1\r\n\r\n", 501, "unsupported method"),
        (
            b"POST /scheduler/filter HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
            431,
            "Line too long",
        ),
    ],
    ids=[
        "nan",
        "negative",
        "conflicting",
        "missing",
        "chunked",
        "garbage",
        "put",
        "431",
    ],
)
def test_bad_framing_gets_a_status_and_a_closed_connection(
    guarded, caplog, data, status, message
):
    sc, _, _ = guarded
    before = metric(sc, "placewise_http_rejected_total", listener="extender")
    code, reply = exchange(sc, data)
    assert code == status
    assert message in reply["error"]
    assert metric(sc, "placewise_http_rejected_total", listener="extender") > before
    no_tracebacks(caplog)
    still_serves(guarded)


def test_body_shorter_than_its_length_is_refused(guarded, caplog):
    sc, _, _ = guarded
    data = request("/scheduler/bind", b'{"Po', "Content-Length: 40")
    code, reply = exchange(sc, data, half_close=True)
    assert code == 400 and reply["error"] == "body ended after 4 of 40 bytes"
    no_tracebacks(caplog)
    still_serves(guarded)


def test_oversized_body_is_refused_before_it_is_read(guarded, caplog):
    """A 150 MB Content-Length is answered 413 from the headers alone, and the
    connection is closed while the client is still sending: the sidecar reads
    at most its short linger's worth, never the body."""
    sc, _, _ = guarded
    before = metric(sc, "placewise_http_rejected_total", reason="too_large")
    head = request("/scheduler/filter", b"", f"Content-Length: {150_000_000}")
    started = time.monotonic()
    code, reply = exchange(sc, head)
    assert code == 413 and "150000000 bytes over 1048576" in reply["error"]
    assert time.monotonic() - started < 1.0
    # Streaming the body: the answer comes, and the sidecar hangs up long
    # before 150 MB went out.
    chunk = b"x" * (1 << 16)
    sent = 4 * len(chunk)
    with connect(sc) as s:
        s.sendall(head + chunk * 4)
        resp = HTTPResponse(s)
        resp.begin()
        assert resp.status == 413
        with pytest.raises(OSError):  # reset / broken pipe once it closed
            while sent < 150_000_000:
                s.sendall(chunk)
                sent += len(chunk)
    assert sent < 64 << 20, sent
    # Expect: 100-continue never gets a 100 for a body that is refused.
    code, reply = exchange(
        sc,
        request(
            "/scheduler/filter", b"", "Content-Length: 9999999", "Expect: 100-continue"
        ),
    )
    assert code == 413
    assert metric(sc, "placewise_http_rejected_total", reason="too_large") >= before + 3
    no_tracebacks(caplog)
    still_serves(guarded)


def _trickle(
    sc: Sidecar, head: bytes, data: bytes, gap: float, out: dict[str, Any]
) -> None:
    """Send ``head``, then one byte of ``data`` every ``gap`` seconds until
    the server hangs up."""
    started = time.monotonic()
    with connect(sc) as s:
        try:
            s.sendall(head)
            for i in range(len(data)):
                if select.select([s], [], [], 0)[0]:
                    break  # the server answered (or hung up)
                s.sendall(data[i : i + 1])
                time.sleep(gap)
            out["reply"] = s.recv(65536)
        except OSError as exc:
            out["error"] = exc
    out["after"] = time.monotonic() - started


def test_slow_clients_are_dropped_within_the_read_timeout(guarded, caplog):
    """A client trickling its headers is cut at the 1 s deadline (not reset by
    each byte), one trickling its body gets 408; meanwhile other clients are
    served without delay."""
    sc, _, _ = guarded
    before = metric(sc, "placewise_http_rejected_total", reason="timeout")
    results: list[dict[str, Any]] = [{}, {}]
    headers = b"POST /scheduler/filter HTTP/1.1\r\n" + b"X-Slow: 1\r\n" * 60
    head = request("/scheduler/filter", b"", "Content-Length: 100")
    threads = [
        threading.Thread(target=_trickle, args=(sc, b"", headers, 0.1, results[0])),
        threading.Thread(target=_trickle, args=(sc, head, b"{" * 100, 0.1, results[1])),
    ]
    for t in threads:
        t.start()
    time.sleep(0.3)
    for _ in range(5):
        still_serves(guarded)
    for t in threads:
        t.join(10)
    header_phase, body_phase = results
    assert 0.9 < header_phase["after"] < 2.0, header_phase
    assert header_phase.get("reply", b"") == b""  # dropped, nothing to say
    assert 0.9 < body_phase["after"] < 2.0, body_phase
    assert body_phase["reply"].startswith(b"HTTP/1.1 408 "), body_phase
    assert metric(sc, "placewise_http_rejected_total", reason="timeout") >= before + 2
    no_tracebacks(caplog)


def test_idle_keep_alive_connection_is_closed(guarded):
    sc, body, planned = guarded
    conn = HTTPConnection(*sc.http.address, timeout=5)  # type: ignore[union-attr]
    conn.request("POST", "/scheduler/filter", body)
    resp = conn.getresponse()
    assert json.loads(resp.read())["NodeNames"] == [planned]
    assert resp.getheader("Connection") is None  # kept alive
    started = time.monotonic()
    assert conn.sock is not None
    conn.sock.settimeout(5)
    assert conn.sock.recv(1) == b""  # the server hung up
    assert 1.2 < time.monotonic() - started < 3.0
    conn.close()


def test_connections_over_the_bound_get_503_at_once(guarded, caplog):
    sc, _, _ = guarded
    still_serves(guarded)
    held = [connect(sc) for _ in range(LIMITS.max_connections)]
    try:
        time.sleep(0.2)  # accepted and waiting for a request
        started = time.monotonic()
        with connect(sc) as extra:
            extra.settimeout(2)
            reply = extra.recv(4096)
        assert reply.startswith(b"HTTP/1.1 503 "), reply
        assert time.monotonic() - started < 0.5
    finally:
        for s in held:
            s.close()
    wait_for(lambda: http(guarded[0].url + "/healthz")[0] == 200, what="slots released")
    assert metric(sc, "placewise_http_rejected_total", reason="busy") >= 1
    no_tracebacks(caplog)
    still_serves(guarded)


def test_debug_is_off_by_default_and_metrics_have_their_own_port(guarded):
    sc, _, _ = guarded
    assert sc.metrics_url != sc.url
    assert http(sc.url + "/debug/plan")[0] == 404
    assert http(sc.metrics_url + "/debug/plan")[0] == 404
    assert http(sc.url + "/metrics")[0] == 404
    status, text = http(sc.metrics_url + "/metrics")
    assert status == 200 and b"placewise_extender_request_duration_seconds" in text
    assert http(sc.metrics_url + "/scheduler/filter", guarded[1])[0] == 404
    for url in (sc.url, sc.metrics_url):
        assert http(url + "/healthz") == (200, b"ok\n")
        assert http(url + "/readyz") == (200, b"ok\n")
    # Defaults, in the config and on the command line: loopback, no debug.
    cfg = ServeConfig()
    assert cfg.listen == ("127.0.0.1", 8888) and cfg.metrics_listen[0] == "127.0.0.1"
    assert not cfg.enable_debug and not cfg.tls_cert_file
    args = build_parser().parse_args(["serve"])
    assert args.listen == ("127.0.0.1", 8888)
    assert args.metrics_listen == ("127.0.0.1", 8889)
    assert args.enable_debug is False


def test_enable_debug_serves_the_plan_on_the_extender_port(harness_factory):
    h = harness_factory([namespace("ml"), node("n1")])
    sc = h.sidecar(enable_debug=True)
    assert "identity" in debug(sc)
    assert http(sc.metrics_url + "/debug/plan")[0] == 404


def test_rejections_are_one_log_line(guarded, caplog):
    """A bad request is logged once, on one line, without a traceback."""
    sc, _, _ = guarded
    with caplog.at_level(logging.INFO, logger="placewise.serve"):
        exchange(sc, request("/scheduler/filter", b"{}", "Content-Length: zz"))
    lines = [
        r.getMessage() for r in caplog.records if "Content-Length" in r.getMessage()
    ]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    no_tracebacks(caplog)


def test_unknown_paths_and_a_kept_alive_connection(guarded):
    """A POST to an unknown path is read, answered 404, and the connection
    stays usable for the next (kube-scheduler reuses its connections)."""
    sc, body, planned = guarded
    conn = HTTPConnection(*sc.http.address, timeout=5)  # type: ignore[union-attr]
    conn.request("POST", "/scheduler/nope", b'{"x":1}')
    resp = conn.getresponse()
    assert resp.status == 404 and resp.read() == b'{"error":"not found"}'
    conn.request("POST", "/scheduler/filter/", body)  # trailing slash as Go may
    resp = conn.getresponse()
    assert json.loads(resp.read())["NodeNames"] == [planned]
    conn.close()


def test_ipv6_loopback_listener():
    from placewise.adapters.serve.server import HttpServer, Routes

    try:
        server = HttpServer(
            "[::1]", 0, Routes(get={"/x": lambda: (200, b"ok", "text/plain")})
        ).start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert server.url.startswith("http://[::1]:")
        assert http(server.url + "/x") == (200, b"ok")
    finally:
        server.stop()
