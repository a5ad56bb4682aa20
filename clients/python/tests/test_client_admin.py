"""Tables, HQL and token authentication against a real server."""

from __future__ import annotations

from pathlib import Path

import pytest

import cellar
from cellar_testserver import Server


def test_create_list_describe_drop(conn: cellar.Connection) -> None:
    conn.create_table(
        "admin_t",
        {
            "a": {"max_versions": 5, "time_to_live": 3600, "compression": "ZSTD"},
            "b": {"bloom_filter_type": "NONE", "in_memory": True},
            "c:": {},  # happybase style: the trailing ':' is dropped
        },
    )
    try:
        assert "admin_t" in conn.tables()
        assert conn.tables() == sorted(conn.tables())
        families = conn.table("admin_t").families()
        assert list(families) == ["a", "b", "c"]  # schema order
        assert families["a"]["max_versions"] == 5
        assert families["a"]["time_to_live"] == 3600
        assert families["a"]["compression"] == "zstd"
        assert families["b"]["bloom_filter"] is False
        assert families["c"]["bloom_filter"] is True
        assert families["c"]["time_to_live"] == 0
        assert families["c"]["max_versions"] == 1  # HBase's default
        with pytest.raises(cellar.AlreadyExists):
            conn.create_table("admin_t", {"a": {}})
        conn.create_table("admin_t", {"a": {}}, if_not_exists=True)
    finally:
        conn.delete_table("admin_t")
    assert "admin_t" not in conn.tables()
    with pytest.raises(cellar.NotFound):
        conn.delete_table("admin_t")
    conn.delete_table("admin_t", if_exists=True)


def test_connection_is_a_context_manager(server: Server) -> None:
    with server.connect() as c:
        assert isinstance(c.tables(), list)
    with pytest.raises(cellar.Error, match="closed"):
        c.tables()


def test_hql_output(conn: cellar.Connection) -> None:
    out = conn.hql(
        "CREATE TABLE hql_t (f);\n"
        "INSERT INTO hql_t VALUES ('r2', 'f:q', 'two'), ('r1', 'f:q', 'one'), ('r1', 'f', 'e');\n"
        "SELECT * FROM hql_t;\n"
    )
    try:
        # rows ascending; within a row, qualifiers ascending ('' first); `f` for the empty qualifier
        assert out == "r1\tf\te\nr1\tf:q\tone\nr2\tf:q\ttwo\n"
        # the same table through the API
        assert conn.table("hql_t").row(b"r1") == {b"f:": b"e", b"f:q": b"one"}
        assert conn.hql("SHOW TABLES;").splitlines() == conn.tables()
    finally:
        conn.delete_table("hql_t", if_exists=True)


def test_hql_error_names_the_line(conn: cellar.Connection) -> None:
    conn.create_table("hql_e", {"f": {}})
    try:
        with pytest.raises(cellar.HqlError) as info:
            conn.hql(
                "INSERT INTO hql_e VALUES ('r', 'f', 'v');\n"
                "SELECT * FROM hql_e;\n"
                "SELECT * FROM no_such_table;\n"
                "INSERT INTO hql_e VALUES ('after', 'f', 'v');\n"
            )
        err = info.value
        assert err.line == 3
        assert "no_such_table" in str(err)
        assert err.output == "r\tf\tv\n"
        # statements after the failed one did not run
        assert conn.table("hql_e").row(b"after") == {}
        # with keep_going they do, and the error is raised at the end
        with pytest.raises(cellar.HqlError):
            conn.hql(
                "SELECT * FROM no_such_table;\nINSERT INTO hql_e VALUES ('after', 'f', 'v');",
                keep_going=True,
            )
        assert conn.table("hql_e").row(b"after") == {b"f:": b"v"}
        with pytest.raises(cellar.HqlError) as info:
            conn.hql("SELEC * FROM hql_e;")
        assert info.value.line == 1
    finally:
        conn.delete_table("hql_e", if_exists=True)


def test_split_points(table: cellar.Table) -> None:
    assert table.split_points(4) == []  # nothing to cut
    with table.batch() as b:
        for i in range(2000):
            b.put(b"row%05d" % i, {b"cf:v": b"x" * 100})
    points = table.split_points(4)
    assert len(points) <= 3
    assert points == sorted(points)
    assert all(b"row00000" <= p <= b"row01999" for p in points)
    assert table.split_points(1) == []


def test_bad_filter_is_invalid_argument(table: cellar.Table) -> None:
    table.put(b"r", {b"cf:a": b"v"})
    with pytest.raises(cellar.InvalidArgument, match="NoSuchFilter"):
        list(table.scan(filter="NoSuchFilter('x')"))


def test_token_auth(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-token\n")
    srv = Server(tmp_path / "db", ["--token-file", str(token_file)])
    try:
        with srv.connect() as anonymous, pytest.raises(cellar.Unauthenticated):
            anonymous.tables()
        with srv.connect(token="wrong") as wrong, pytest.raises(cellar.Unauthenticated):
            wrong.tables()
        with srv.connect(token="s3cret-token") as good:
            good.create_table("secured", {"f": {}})
            good.table("secured").put(b"r", {b"f:q": b"v"})
            assert good.table("secured").row(b"r") == {b"f:q": b"v"}
            assert good.hql("SELECT * FROM secured;") == "r\tf:q\tv\n"
        with srv.connect(token="wrong") as wrong, pytest.raises(cellar.Unauthenticated):
            list(wrong.table("secured").scan())
    finally:
        srv.stop()
