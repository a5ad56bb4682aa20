"""TLS: a server started with --tls-cert/--tls-key, reached with Connection(tls=True)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import cellar
from cellar_testserver import CALL_TIMEOUT, Server


def self_signed(tmp_path: Path) -> "tuple[Path, Path]":
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail(
            "the TLS test needs the openssl command (apt-get install openssl)", pytrace=False
        )
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


def test_tls_with_a_token(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    token = tmp_path / "token"
    token.write_text("tls-token")
    srv = Server(
        tmp_path / "db",
        ["--tls-cert", str(cert), "--tls-key", str(key), "--token-file", str(token)],
    )
    try:
        roots = cert.read_bytes()
        with cellar.Connection(
            srv.host,
            srv.port,
            token="tls-token",
            timeout=CALL_TIMEOUT,
            tls=True,
            root_certificates=roots,
        ) as conn:
            conn.create_table("secure", {"f": {}})
            conn.table("secure").put(b"r", {b"f:q": b"v"}, durability="sync")
            assert conn.table("secure").row(b"r") == {b"f:q": b"v"}
        # plaintext against a TLS listener fails cleanly
        with cellar.Connection(srv.host, srv.port, token="tls-token", timeout=10) as plain:
            with pytest.raises(cellar.Error):
                plain.tables()
    finally:
        srv.stop()
