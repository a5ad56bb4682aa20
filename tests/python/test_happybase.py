"""happybase 1.3 against Cellar's Thrift gateway, in all four transport/protocol
combinations. Expected values follow HBase's documented behaviour (happybase's API docs,
the HBase Thrift1 server): timestamps are exclusive upper bounds on reads, missing rows
are left out, deletes with a timestamp remove the versions at or before it.

Tests of HBase filter strings are marked `filter_language` (`-m filter_language`)."""

import itertools
import struct
import threading

import happybase
import pytest
from Hbase_thrift import AlreadyExists, IllegalArgument, IOError as HbaseIOError

COMBOS = [(t, p) for t in ("buffered", "framed") for p in ("binary", "compact")]
_names = itertools.count()


@pytest.fixture(params=COMBOS, ids=lambda c: f"{c[0]}-{c[1]}")
def combo(request):
    return request.param


@pytest.fixture
def connect(cellar_server, combo):
    opened = []

    def make(**kw):
        host, port = cellar_server.thrift
        c = happybase.Connection(host, port, transport=combo[0], protocol=combo[1],
                                 timeout=30000, **kw)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.close()


@pytest.fixture
def conn(connect):
    return connect()


@pytest.fixture
def table(conn):
    name = f"t{next(_names)}"
    conn.create_table(name, {"cf1": dict(max_versions=10), "cf2": dict(), "cf3": dict()})
    yield conn.table(name)
    conn.delete_table(name, disable=True)


def test_tables_create_describe_enable_disable_delete(conn):
    name = f"admin{next(_names)}"
    conn.create_table(name, {"a": dict(max_versions=5, time_to_live=3600), "b": dict()})
    assert name.encode() in conn.tables()
    fams = conn.table(name).families()
    assert set(fams) == {b"a", b"b"}
    assert fams[b"a"]["max_versions"] == 5
    assert fams[b"a"]["time_to_live"] == 3600
    assert fams[b"b"]["max_versions"] == 3  # the IDL's default, as happybase sends it
    assert fams[b"b"]["time_to_live"] == 2**31 - 1  # HBase's FOREVER
    regions = conn.table(name).regions()
    assert len(regions) == 1
    assert regions[0]["start_key"] == b"" and regions[0]["end_key"] == b""
    with pytest.raises(AlreadyExists):
        conn.create_table(name, {"a": dict()})
    assert conn.is_table_enabled(name)
    with pytest.raises(HbaseIOError):
        conn.delete_table(name)  # HBase requires disabling first
    conn.disable_table(name)
    assert not conn.is_table_enabled(name)
    with pytest.raises(HbaseIOError):
        conn.table(name).row(b"r")  # a disabled table refuses reads
    conn.enable_table(name)
    conn.table(name).put(b"r", {b"a:x": b"1"})
    conn.compact_table(name)
    conn.compact_table(name, major=True)
    assert conn.table(name).row(b"r") == {b"a:x": b"1"}
    conn.delete_table(name, disable=True)
    assert name.encode() not in conn.tables()
    with pytest.raises(HbaseIOError):
        conn.delete_table(name, disable=True)


def test_unknown_table_is_an_ioerror(conn):
    t = conn.table("no_such_table")
    with pytest.raises(HbaseIOError) as e:
        t.row(b"r")
    assert b"no_such_table" in e.value.message
    with pytest.raises(HbaseIOError):
        list(t.scan())
    # The connection is still usable.
    assert isinstance(conn.tables(), list)


def test_row_with_timestamps(table):
    put = table.put
    row_key = b"row-test"
    put(row_key, {b"cf1:col1": b"v1old"}, timestamp=1234)
    put(row_key, {b"cf1:col1": b"v1new"}, timestamp=3456)
    put(row_key, {b"cf1:col2": b"v2", b"cf2:col1": b"v3"})
    put(row_key, {b"cf2:col2": b"v4"}, timestamp=1234)
    assert table.row(row_key) == {
        b"cf1:col1": b"v1new", b"cf1:col2": b"v2", b"cf2:col1": b"v3", b"cf2:col2": b"v4"}
    assert table.row(row_key, [b"cf1"]) == {b"cf1:col1": b"v1new", b"cf1:col2": b"v2"}
    assert table.row(row_key, [b"cf1:col1", b"cf2:col2"]) == {
        b"cf1:col1": b"v1new", b"cf2:col2": b"v4"}
    assert table.row(row_key, timestamp=2345) == {b"cf1:col1": b"v1old", b"cf2:col2": b"v4"}
    assert table.row(row_key, timestamp=123) == {}
    assert table.row(row_key, timestamp=3456) == {b"cf1:col1": b"v1old", b"cf2:col2": b"v4"}
    assert table.row(row_key, timestamp=3457)[b"cf1:col1"] == b"v1new"
    r = table.row(row_key, include_timestamp=True)
    assert r[b"cf1:col1"] == (b"v1new", 3456)
    assert r[b"cf2:col2"] == (b"v4", 1234)
    assert table.row(b"missing") == {}


def test_empty_qualifier_column(table):
    # "cf:" names the column with the empty qualifier (HBase 2.x), for puts and reads.
    table.put(b"r", {b"cf1:": b"empty", b"cf1:q": b"full"})
    assert table.row(b"r", [b"cf1:"]) == {b"cf1:": b"empty"}
    assert table.row(b"r", [b"cf1"]) == {b"cf1:": b"empty", b"cf1:q": b"full"}


def test_rows_leave_missing_rows_out(table):
    with table.batch() as b:
        for i in range(10):
            b.put(b"row%d" % i, {b"cf1:a": b"v%d" % i, b"cf2:b": b"w%d" % i})
    keys = [b"row1", b"nope", b"row3", b"row9", b"also-missing"]
    got = table.rows(keys)
    assert [k for k, _ in got] == [b"row1", b"row3", b"row9"]
    assert got[0][1] == {b"cf1:a": b"v1", b"cf2:b": b"w1"}
    assert table.rows(keys, columns=[b"cf2"]) == [
        (b"row1", {b"cf2:b": b"w1"}), (b"row3", {b"cf2:b": b"w3"}), (b"row9", {b"cf2:b": b"w9"})]
    assert table.rows([]) == {}
    table.put(b"old", {b"cf1:a": b"x"}, timestamp=100)
    assert table.rows([b"old", b"row1"], timestamp=101) == [(b"old", {b"cf1:a": b"x"})]
    assert table.rows([b"old"], timestamp=100) == []
    got = table.rows([b"old"], include_timestamp=True)
    assert got == [(b"old", {b"cf1:a": (b"x", 100)})]


def test_cells_versions_and_timestamps(table):
    col = b"cf1:col1"
    table.put(b"cell", {col: b"old"}, timestamp=1234)
    table.put(b"cell", {col: b"new"})
    assert table.cells(b"cell", col) == [b"new", b"old"]
    assert table.cells(b"cell", col, versions=1) == [b"new"]
    got = table.cells(b"cell", col, versions=1, include_timestamp=True)
    assert len(got) == 1 and got[0][0] == b"new" and got[0][1] > 1234
    assert table.cells(b"cell", col, timestamp=2345, include_timestamp=True) == [
        (b"old", 1234)]
    assert table.cells(b"cell", col, timestamp=1234) == []
    assert table.cells(b"missing", col) == []
    # cf2 keeps 3 versions (the IDL default): more are not returned.
    for ts in range(1, 6):
        table.put(b"v", {b"cf2:c": b"%d" % ts}, timestamp=ts)
    assert table.cells(b"v", b"cf2:c") == [b"5", b"4", b"3"]


def test_put_to_a_bare_family_is_illegal(table):
    with pytest.raises(IllegalArgument):
        table.put(b"r", {b"cf1": b"v"})
    with pytest.raises(HbaseIOError):
        table.put(b"r", {b"nofamily:q": b"v"})
    assert table.row(b"r") == {}


def test_negative_timestamp_is_refused(table):
    with pytest.raises(IllegalArgument):
        table.put(b"r", {b"cf1:a": b"v"}, timestamp=-5)
    with pytest.raises(HbaseIOError):
        table.row(b"r", timestamp=-1)


def fill(table, n=1000):
    with table.batch(batch_size=250) as b:
        for i in range(n):
            b.put(b"row-%04d" % i, {b"cf1:a": b"%d" % i, b"cf2:b": b"x"})


def test_scan_limits_and_batch_sizes(table):
    fill(table)
    keys = [b"row-%04d" % i for i in range(1000)]
    for batch_size in (1, 5, 499):
        got = [k for k, _ in table.scan(batch_size=batch_size)]
        assert got == keys, batch_size
    for limit, batch_size in ((1, 5), (10, 5), (12, 5), (499, 499), (1000, 7), (2000, 499)):
        got = [k for k, _ in table.scan(limit=limit, batch_size=batch_size)]
        assert got == keys[:limit]
    first = next(iter(table.scan(limit=1)))
    assert first == (b"row-0000", {b"cf1:a": b"0", b"cf2:b": b"x"})


def test_scan_ranges_prefix_reverse_columns(table):
    fill(table, 200)
    key = lambda i: b"row-%04d" % i  # noqa: E731
    got = [k for k, _ in table.scan(row_start=key(10), row_stop=key(20))]
    assert got == [key(i) for i in range(10, 20)]
    got = [k for k, _ in table.scan(row_start=key(195))]
    assert got == [key(i) for i in range(195, 200)]
    got = [k for k, _ in table.scan(row_stop=key(3))]
    assert got == [key(i) for i in range(3)]
    got = [k for k, _ in table.scan(row_prefix=b"row-001")]
    assert got == [key(i) for i in range(10, 20)]
    assert list(table.scan(row_prefix=b"nothing")) == []
    got = [k for k, _ in table.scan(reverse=True, limit=3)]
    assert got == [key(199), key(198), key(197)]
    # Reversed: row_start is the high end (inclusive), row_stop the low end (exclusive).
    got = [k for k, _ in table.scan(row_start=key(20), row_stop=key(15), reverse=True)]
    assert got == [key(i) for i in range(20, 15, -1)]
    got = [r for _, r in table.scan(columns=[b"cf2"], limit=2)]
    assert got == [{b"cf2:b": b"x"}, {b"cf2:b": b"x"}]
    got = [r for _, r in table.scan(columns=[b"cf1:a"], limit=1)]
    assert got == [{b"cf1:a": b"0"}]


def test_scan_sorted_columns_timestamps_and_batching(table):
    table.put(b"r", {b"cf2:z": b"1", b"cf1:b": b"2", b"cf1:a": b"3", b"cf3:m": b"4"})
    rows = list(table.scan(sorted_columns=True))
    assert len(rows) == 1
    assert list(rows[0][1].items()) == [
        (b"cf1:a", b"3"), (b"cf1:b", b"2"), (b"cf2:z", b"1"), (b"cf3:m", b"4")]
    table.put(b"s", {b"cf1:a": b"old"}, timestamp=10)
    table.put(b"s", {b"cf1:a": b"new"}, timestamp=20)
    assert list(table.scan(timestamp=15)) == [(b"s", {b"cf1:a": b"old"})]
    got = list(table.scan(row_start=b"s", include_timestamp=True))
    assert got == [(b"s", {b"cf1:a": (b"new", 20)})]
    # scan_batching cuts a row into parts of at most N cells.
    parts = list(table.scan(row_stop=b"s", scan_batching=3))
    assert [len(p) for _, p in parts] == [3, 1]
    assert all(k == b"r" for k, _ in parts)


def test_scanner_lists_bounded_by_reply_bytes(start_cellar_server, combo):
    server = start_cellar_server("--max-reply-bytes", "2000")
    c = happybase.Connection(*server.thrift, transport=combo[0], protocol=combo[1])
    try:
        c.create_table("big", {"cf": dict()})
        t = c.table("big")
        with t.batch() as b:
            for i in range(50):
                b.put(b"r%02d" % i, {b"cf:v": b"x" * 500})
        got = [k for k, _ in t.scan(batch_size=1000)]
        assert got == [b"r%02d" % i for i in range(50)]
        # One row larger than the bound still comes back.
        t.put(b"huge", {b"cf:v": b"y" * 10000})
        assert t.row(b"huge") == {b"cf:v": b"y" * 10000}
        assert [k for k, _ in t.scan(row_start=b"huge", batch_size=10)] == [b"huge"] + [
            b"r%02d" % i for i in range(50)]
    finally:
        c.close()


@pytest.mark.filter_language
def test_scan_with_filter_strings(table):
    fill(table, 30)
    table.put(b"special", {b"cf1:qual1": b"val1", b"cf1:other": b"z"})
    table.put(b"special2", {b"cf1:qual1": b"val2"})
    # HBase: rows without the column pass (filterIfMissing defaults to false).
    f = "SingleColumnValueFilter ('cf1', 'qual1', =, 'binary:val1')"
    assert [k for k, _ in table.scan(filter=f)] == [b"row-%04d" % i for i in range(30)] + [
        b"special"]
    f = "SingleColumnValueFilter ('cf1', 'qual1', =, 'binary:val1', true, true)"
    assert [k for k, _ in table.scan(filter=f)] == [b"special"]
    got = list(table.scan(filter="PrefixFilter ('row-002')"))
    assert [k for k, _ in got] == [b"row-%04d" % i for i in range(20, 30)]
    got = list(table.scan(filter="KeyOnlyFilter() AND FirstKeyOnlyFilter()", limit=2))
    assert got == [(b"row-0000", {b"cf1:a": b""}), (b"row-0001", {b"cf1:a": b""})]


def test_unknown_filter_is_an_ioerror_naming_it(table):
    with pytest.raises(HbaseIOError) as e:
        list(table.scan(filter="NoSuchFilter ('x')"))
    assert b"NoSuchFilter" in e.value.message


def test_deletes(table):
    table.put(b"r", {b"cf1:a": b"1", b"cf1:b": b"2", b"cf2:c": b"3", b"cf3:d": b"4"})
    table.delete(b"r", columns=[b"cf1:a"])
    assert table.row(b"r") == {b"cf1:b": b"2", b"cf2:c": b"3", b"cf3:d": b"4"}
    table.delete(b"r", columns=[b"cf2"])
    assert table.row(b"r") == {b"cf1:b": b"2", b"cf3:d": b"4"}
    table.delete(b"r")
    assert table.row(b"r") == {}
    # With a timestamp: the versions at or before it go, newer ones stay.
    for ts in (10, 20, 30):
        table.put(b"v", {b"cf1:a": b"%d" % ts, b"cf1:b": b"%d" % ts}, timestamp=ts)
    table.delete(b"v", columns=[b"cf1:a"], timestamp=20)
    assert table.cells(b"v", b"cf1:a") == [b"30"]
    table.delete(b"v", columns=[b"cf1"], timestamp=25)
    assert table.cells(b"v", b"cf1:b") == [b"30"]
    table.delete(b"v", timestamp=30)
    assert table.row(b"v") == {}


def test_batches(table):
    with table.batch(batch_size=7) as b:
        for i in range(20):
            b.put(b"b%02d" % i, {b"cf1:x": b"%d" % i})
        b.delete(b"b05")
    assert len(list(table.scan(row_prefix=b"b"))) == 19
    # Puts and deletes of one batch: every put first, then every delete (HBase).
    with table.batch() as b:
        b.delete(b"pd", columns=[b"cf1:x"])
        b.put(b"pd", {b"cf1:x": b"1", b"cf1:y": b"2"})
    assert table.row(b"pd") == {b"cf1:y": b"2"}
    with pytest.raises(ValueError):
        with table.batch(transaction=True) as b:
            b.put(b"tx", {b"cf1:x": b"never"})
            raise ValueError("abort")
    assert table.row(b"tx") == {}
    with table.batch(transaction=True) as b:
        b.put(b"tx", {b"cf1:x": b"sent"})
    assert table.row(b"tx") == {b"cf1:x": b"sent"}
    with table.batch(wal=False) as b:
        b.put(b"nowal", {b"cf1:x": b"y"})
    assert table.row(b"nowal") == {b"cf1:x": b"y"}
    with table.batch(timestamp=77) as b:
        b.put(b"ts", {b"cf1:x": b"y"})
    assert table.row(b"ts", include_timestamp=True) == {b"cf1:x": (b"y", 77)}


def test_counters(table):
    assert table.counter_get(b"c", b"cf1:n") == 0
    assert table.counter_inc(b"c", b"cf1:n") == 1
    assert table.counter_inc(b"c", b"cf1:n", value=41) == 42
    assert table.counter_dec(b"c", b"cf1:n", value=2) == 40
    assert table.row(b"c") == {b"cf1:n": struct.pack(">q", 40)}
    table.counter_set(b"c", b"cf1:n", -7)
    assert table.counter_get(b"c", b"cf1:n") == -7
    assert table.counter_inc(b"c", b"cf2") == 1  # a bare family: the empty qualifier
    assert table.row(b"c", [b"cf2:"]) == {b"cf2:": struct.pack(">q", 1)}
    table.put(b"c", {b"cf1:text": b"abc"})
    with pytest.raises(IllegalArgument):
        table.counter_inc(b"c", b"cf1:text")


def test_concurrent_counter_increments_sum_exactly(connect, table):
    threads, per_thread = 8, 200
    errors = []

    def work():
        try:
            t = connect().table(table.name)
            for _ in range(per_thread):
                t.counter_inc(b"hot", b"cf1:n")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors
    assert table.counter_get(b"hot", b"cf1:n") == threads * per_thread


def test_connection_pool(cellar_server, combo, table):
    pool = happybase.ConnectionPool(size=3, host=cellar_server.thrift[0],
                                    port=cellar_server.thrift[1],
                                    transport=combo[0], protocol=combo[1])
    errors = []

    def work(n):
        try:
            for i in range(20):
                with pool.connection(timeout=30) as c:
                    t = c.table(table.name)
                    t.put(b"p%d-%02d" % (n, i), {b"cf1:v": b"%d" % i})
                    assert t.row(b"p%d-%02d" % (n, i)) == {b"cf1:v": b"%d" % i}
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors
    assert len(list(table.scan(row_prefix=b"p"))) == 120


def test_scanner_idle_expiry_and_limits(start_cellar_server, combo):
    server = start_cellar_server("--scanner-idle-timeout", "1",
                                 "--max-scanners-per-connection", "2")
    c = happybase.Connection(*server.thrift, transport=combo[0], protocol=combo[1])
    try:
        c.create_table("s", {"cf": dict()})
        t = c.table("s")
        with t.batch() as b:
            for i in range(10):
                b.put(b"r%d" % i, {b"cf:v": b"x"})
        # A scan read faster than the timeout is not cut, however long it lasts overall.
        got = []
        for k, _ in t.scan(batch_size=1):
            got.append(k)
        assert len(got) == 10
        # A scan that outlives the idle timeout gets a clear error.
        scan = t.scan(batch_size=2)
        assert next(scan)[0] == b"r0"
        next(scan)
        import time
        time.sleep(2.5)
        with pytest.raises(IllegalArgument) as e:
            list(scan)
        assert b"expired" in e.value.message
        # Per-connection cap: a third open scanner is refused.
        s1, s2 = t.scan(batch_size=1), t.scan(batch_size=1)
        next(s1)
        next(s2)
        with pytest.raises(HbaseIOError) as e:
            next(t.scan(batch_size=1))
        assert b"scanners" in e.value.message
        s1.close()
        s2.close()
        assert next(t.scan(batch_size=1))[0] == b"r0"
    finally:
        c.close()


def test_sigterm_stops_the_server_with_idle_connections_and_open_scanners(
        start_cellar_server, combo):
    server = start_cellar_server()
    c = happybase.Connection(*server.thrift, transport=combo[0], protocol=combo[1])
    c.create_table("x", {"cf": dict()})
    t = c.table("x")
    t.put(b"a", {b"cf:q": b"1"})
    t.put(b"b", {b"cf:q": b"2"})
    scan = t.scan(batch_size=1)
    assert next(scan)[0] == b"a"
    assert server.stop() == 0
    try:
        scan.close()  # its scannerClose meets the closed socket
    except Exception:  # noqa: BLE001 - any transport error is expected here
        pass
    c.close()


def test_compat_090_uses_the_older_scanner_methods(connect, table):
    # compat="0.90" scans with scannerOpen, scannerOpenWithStop and their Ts variants.
    t = connect(compat="0.90").table(table.name)
    with table.batch() as b:
        for i in range(20):
            b.put(b"o%02d" % i, {b"cf1:a": b"%d" % i})
    table.put(b"o05", {b"cf1:a": b"old"}, timestamp=50)
    keys = [b"o%02d" % i for i in range(20)]
    assert [k for k, _ in t.scan()] == keys
    assert [k for k, _ in t.scan(row_start=b"o15")] == keys[15:]
    assert [k for k, _ in t.scan(row_start=b"o03", row_stop=b"o06")] == keys[3:6]
    assert list(t.scan(timestamp=51)) == [(b"o05", {b"cf1:a": b"old"})]
    assert list(t.scan(row_start=b"o00", row_stop=b"o05", timestamp=51)) == []
    assert [k for k, _ in t.scan(row_prefix=b"o1", columns=[b"cf1:a"])] == keys[10:]
