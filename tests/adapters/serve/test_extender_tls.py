"""The extender over TLS and mutual TLS, with real certificates made by openssl.

kube-scheduler's side is the emulator's extender client, set up from the same
``enableHTTPS``/``tlsConfig`` keys (and defaults) as kube-scheduler's
``makeTransport``.
"""

from __future__ import annotations

import base64
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from placewise.adapters.emulator import ExtenderConfig, gojson
from placewise.adapters.emulator.extender import ExtenderError, post
from placewise.cli import main
from tests.adapters.serve.conftest import (
    assert_sound,
    kueue_group,
    metric,
    namespace,
    node,
    wait_for,
)

pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command"
)


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _ca(d: Path, name: str) -> None:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
        "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.crt", "-days", "1",
        "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        cwd=d,
    )  # fmt: skip


def _leaf(d: Path, name: str, ca: str, usage: str) -> None:
    (d / f"{name}.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:placewise.local\n"
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
        f"extendedKeyUsage={usage}\nauthorityKeyIdentifier=keyid\n"
        "subjectKeyIdentifier=hash\n"
    )
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}",
        cwd=d,
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey",
        f"{ca}.key", "-CAcreateserial", "-out", f"{name}.crt", "-days", "1",
        "-extfile", f"{name}.ext",
        cwd=d,
    )  # fmt: skip


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """server-ca signs the sidecar's certificate; client-ca signs the
    scheduler's; rogue-ca signs a client the sidecar must not accept."""
    d = tmp_path_factory.mktemp("tls")
    for ca in ("server-ca", "client-ca", "rogue-ca"):
        _ca(d, ca)
    _leaf(d, "server", "server-ca", "serverAuth")
    _leaf(d, "scheduler", "client-ca", "clientAuth")
    _leaf(d, "rogue", "rogue-ca", "clientAuth")
    return {p.name: str(p) for p in d.iterdir()}


def _tls_sidecar(h: Any, certs: dict[str, str], mutual: bool, **kw: Any) -> Any:
    return h.sidecar(
        tls_cert_file=certs["server.crt"],
        tls_key_file=certs["server.key"],
        client_ca_file=certs["client-ca.crt"] if mutual else "",
        **kw,
    )


def _b64(path: str) -> str:
    return base64.b64encode(Path(path).read_bytes()).decode()


def test_mutual_tls_extender_drives_a_gang_end_to_end(harness_factory, certs):
    """kube-scheduler's extender entry with enableHTTPS, the server CA, its
    client certificate and serverName: filter and bind go over mutual TLS and
    the gang lands whole."""
    h = harness_factory([namespace("ml"), node("n1"), node("n2"), node("n3")])
    sc = _tls_sidecar(h, certs, mutual=True)
    assert sc.url.startswith("https://127.0.0.1:")
    gang = kueue_group("g", 2, gpus=4)
    h.create(*gang)
    wait_for(lambda: sc.loop.state and sc.loop.state.gang_of("ml/g-0"), what="plan")
    h.standin(
        sc,
        enableHTTPS=True,
        tlsConfig={
            "serverName": "placewise.local",
            "caFile": certs["server-ca.crt"],
            "certFile": certs["scheduler.crt"],
            "keyFile": certs["scheduler.key"],
        },
    )
    placed = wait_for(
        lambda: all((p := h.placement("ml")).values()) and p, what="gang bound"
    )
    assert len(set(placed.values())) == 2
    assert_sound(h, {"g": ["g-0", "g-1"]})
    assert metric(sc, "placewise_bind_total") >= 1


def test_mutual_tls_refuses_clients_without_a_trusted_certificate(
    harness_factory, certs
):
    h = harness_factory([namespace("ml"), node("n1")])
    sc = _tls_sidecar(h, certs, mutual=True)
    pod = kueue_group("g", 1)[0]
    pod["metadata"]["uid"] = "u"
    body = gojson.extender_args(pod, [node("n1")], True)
    base = {"urlPrefix": sc.url + "/scheduler", "filterVerb": "filter"}
    trusted = {"caData": _b64(certs["server-ca.crt"]), "serverName": "placewise.local"}

    def call(**tls: Any) -> Any:
        ext = ExtenderConfig.from_config({**base, "enableHTTPS": True, **tls})
        return post(ext, "filter", body)

    # The *Data forms (base64 PEM, as in the YAML) for the good client.
    good = call(
        tlsConfig={
            **trusted,
            "certData": _b64(certs["scheduler.crt"]),
            "keyData": _b64(certs["scheduler.key"]),
        }
    )
    assert good["Error"] == ""
    refused = [
        {"tlsConfig": trusted},  # no client certificate
        {
            "tlsConfig": {
                **trusted,
                "certFile": certs["rogue.crt"],
                "keyFile": certs["rogue.key"],
            }
        },
    ]
    for tls in refused:
        with pytest.raises(ExtenderError):
            call(**tls)
    # The sidecar's certificate is checked too: another CA is not trusted,
    # and plain HTTP gets nowhere.
    with pytest.raises(ExtenderError, match="CERTIFICATE_VERIFY_FAILED"):
        call(
            tlsConfig={
                "caFile": certs["rogue-ca.crt"],
                "certFile": certs["scheduler.crt"],
                "keyFile": certs["scheduler.key"],
            }
        )
    plain = ExtenderConfig.from_config(
        {**base, "urlPrefix": sc.url.replace("https:", "http:") + "/scheduler"}
    )
    with pytest.raises(ExtenderError):
        post(plain, "filter", body)
    assert metric(sc, "placewise_http_rejected_total", reason="tls") >= 3


def test_enable_https_without_a_ca_skips_verification_as_kube_scheduler_does(
    harness_factory, certs
):
    """TLS without client certificates: kube-scheduler with ``enableHTTPS``
    and no CA connects without verifying (its documented default)."""
    h = harness_factory([namespace("ml"), node("n1")])
    sc = _tls_sidecar(h, certs, mutual=False)
    ext = ExtenderConfig.placewise(sc.url + "/scheduler", enableHTTPS=True)
    pod = kueue_group("g", 1)[0]
    reply = post(ext, "filter", gojson.extender_args(pod, [node("n1")], True))
    assert reply["Error"] == ""


def test_tls_handshake_has_a_whole_deadline(harness_factory, certs):
    """A client that opens a TLS connection and trickles its ClientHello is
    cut at the read timeout; other clients are served meanwhile."""
    from placewise.adapters.serve.server import Limits

    h = harness_factory([namespace("ml"), node("n1")])
    sc = _tls_sidecar(h, certs, mutual=False, limits=Limits(read_timeout=1.0))
    ext = ExtenderConfig.placewise(sc.url + "/scheduler", enableHTTPS=True)
    body = gojson.extender_args(kueue_group("g", 1)[0], [node("n1")], True)
    started = time.monotonic()
    with socket.create_connection(sc.http.address, timeout=5) as s:
        # A well-formed record header announcing a 512-byte ClientHello record,
        # whose bytes then come one at a time: nothing invalid to reject, only
        # the deadline can end it.
        s.sendall(b"\x16\x03\x01\x02\x00")
        closed = None
        for _ in range(40):
            try:
                s.sendall(b"\x01")
            except OSError:
                closed = time.monotonic() - started
                break
            assert post(ext, "filter", body)["Error"] == ""
            time.sleep(0.1)
    assert closed is not None and 0.9 < closed < 2.5, closed


def test_bad_tls_flags_exit_2_naming_flag_and_file(tmp_path, certs, capsys):
    missing = str(tmp_path / "missing.crt")
    cases = [
        (["--tls-cert-file", missing, "--tls-private-key-file", missing], missing),
        (["--tls-cert-file", certs["server.crt"]], "go together"),
        (["--client-ca-file", certs["client-ca.crt"]], "needs --tls-cert-file"),
        (
            [
                "--tls-cert-file",
                certs["server.crt"],
                "--tls-private-key-file",
                certs["rogue.key"],  # not the certificate's key
            ],
            "--tls-cert-file",
        ),
        (
            [
                "--tls-cert-file",
                certs["server.crt"],
                "--tls-private-key-file",
                certs["server.key"],
                "--client-ca-file",
                missing,
            ],
            "--client-ca-file",
        ),
    ]
    for flags, expect in cases:
        assert main(["serve", *flags]) == 2, flags
        err = capsys.readouterr().err
        assert expect in err and "Traceback" not in err, err
