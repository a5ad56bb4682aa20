"""The committed stubs are what the proto generates, and the client's checks of arguments
that need no server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import cellar
from cellar import _convert as cv

CLIENT = Path(__file__).resolve().parents[1]
COMMITTED = CLIENT / "src" / "cellar" / "_proto"


def _without_versions(text: str) -> str:
    """The generator's own version stamps (which move with grpcio-tools releases, and are
    floors the runtime checks) are not drift of the proto."""
    text = re.sub(r"GRPC_GENERATED_VERSION = '[^']*'", "GRPC_GENERATED_VERSION = ''", text)
    text = re.sub(r"# Protobuf Python Version: \S+", "# Protobuf Python Version:", text)
    return re.sub(
        r"(ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,)\s*\d+,\s*\d+,\s*\d+,",
        r"\1",
        text,
    )


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    out = tmp_path / "proto"
    subprocess.run(
        ["bash", str(CLIENT / "generate.sh"), str(out)],
        check=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    generated = sorted(p.name for p in out.iterdir())
    committed = sorted(p.name for p in COMMITTED.iterdir() if p.is_file())
    assert generated == committed
    for name in generated:
        fresh = _without_versions((out / name).read_text())
        kept = _without_versions((COMMITTED / name).read_text())
        assert fresh == kept, (
            f"src/cellar/_proto/{name} differs from what proto/cellar/v1/cellar.proto generates: "
            "run clients/python/generate.sh (PYTHON=target/py-venv/bin/python) and commit"
        )


def test_stub_imports_resolve_inside_the_package() -> None:
    from cellar._proto import cellar_pb2, cellar_pb2_grpc

    assert getattr(cellar_pb2_grpc, "cellar_dot_v1_dot_cellar__pb2") is cellar_pb2  # noqa: B009
    assert "from cellar.v1" not in (COMMITTED / "cellar_pb2_grpc.py").read_text()


def test_package_is_typed() -> None:
    assert (Path(cellar.__file__).parent / "py.typed").is_file()


def test_columns_split_at_the_first_colon() -> None:
    assert cv.split_column(b"cf:a:b") == ("cf", b"a:b")
    assert cv.split_column(b"cf:") == ("cf", b"")
    assert cv.split_column(b"cf") == ("cf", None)
    assert cv.split_column("cf:q") == ("cf", b"q")
    assert cv.put_column(b"cf") == ("cf", b"")
    with pytest.raises(ValueError):
        cv.split_column(b":q")


def test_time_ranges() -> None:
    assert cv.time_range(None, None) is None
    r = cv.time_range(500, None)
    assert r is not None
    assert (r.min, r.max) == (0, 500)
    r = cv.time_range(None, (100, 300))
    assert r is not None
    assert (r.min, r.max) == (100, 300)
    r = cv.time_range(200, (100, 300))
    assert r is not None
    assert (r.min, r.max) == (100, 200)
    with pytest.raises(ValueError):
        cv.time_range(None, (300, 300))
    with pytest.raises(ValueError):
        cv.time_range(0, None)
    with pytest.raises(ValueError):
        cv.time_range(-1, None)
    with pytest.raises(TypeError):
        cv.time_range(1.5, None)  # type: ignore[arg-type]


def test_durability_names() -> None:
    from cellar._proto import cellar_pb2 as pb

    assert cv.durability(None) == pb.DURABILITY_DEFAULT
    assert cv.durability("sync") == pb.DURABILITY_SYNC
    assert cv.durability("Buffered") == pb.DURABILITY_BUFFERED
    with pytest.raises(ValueError):
        cv.durability("fast")


def test_argument_errors_before_any_call() -> None:
    # No server listens here: these must fail in the client, before a call is made.
    with cellar.Connection("127.0.0.1", 1, timeout=1) as conn:
        t = conn.table("t")
        with pytest.raises(ValueError):
            list(t.scan(batch_size=0))
        with pytest.raises(ValueError):
            list(t.scan(limit=0))
        with pytest.raises(TypeError):
            t.row(b"r", columns=b"cf")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            t.batch(batch_size=2, transaction=True)
        with pytest.raises(ValueError):
            t.put(b"r", {b"cf:a": b"v"}, durability="eventually")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            conn.create_table("t", {"cf": {"colour": "red"}})
        with pytest.raises(ValueError):
            t.split_points(0)


def test_unreachable_server_is_unavailable() -> None:
    with cellar.Connection("127.0.0.1", 1, timeout=5) as conn:
        with pytest.raises(cellar.Unavailable):
            conn.tables()
