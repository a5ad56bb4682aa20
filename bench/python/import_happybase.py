#!/usr/bin/env python3
"""The import write-up ("Performance of HBase importing") from Python, over HBase's Thrift1 API.

The same script talks to Cellar's gateway (`cellar serve --thrift`) and to HBase's own Thrift
server (bench/java HBaseThriftGateway) unchanged: that is the comparison. `cellar-bench
server` runs it (crates/cellar-bench/src/server/python.rs); it can also be run by hand.
Needs only the standard library and happybase 1.3.

Input: the file `cellar-bench import` writes (crates/cellar-bench/src/import.rs): records of
six little-endian int64, 48 bytes each. Row key "a:b:c" (the first three, in decimal), one
cell `d:v` holding all six as zigzag LEB128 varints.

Modes (each prints one JSON object on stdout; progress and errors on stderr):

  create  --host H --port P --table T [--family d]
      Drops T if it exists, creates it with one family.
  import  --host H --port P --table T --input FILE --records N --writer w --writers W
          [--batch-size 1000] [--api happybase|grpc] [--wait-go]
      Writer w of W writes its slice of the first N records (the slices of import.rs: the
      first N % W writers take one more) with `table.batch(batch_size=...)`, happybase's
      client-side buffer ("autoflush off": a mutateRows call per batch-size rows). With
      --wait-go it reads its slice, prints {"ready": true} and starts when a line arrives on
      stdin, so that several writer processes start together. Prints rows, seconds, the
      wall-clock start and end (time.time(), to combine processes) and the latency of each
      batch send in microseconds.
  get     --host H --port P --table T --input FILE --records N --rate R --seconds S
          [--threads 8] [--seed 1]
      Point reads (`table.row`) of random rows of the file at R requests per second for S
      seconds, open loop: request j is due at start + j/R whatever happened before it, and
      its latency runs from its due time (waiting for a free connection included). Requests
      not served within a grace second after the last due time count as unserved.
  verify  --host H --port P --table T --input FILE --records N [--rows 200]
      Reads rows spread over the first N and checks their values.

--api grpc is the hook for Cellar's Python gRPC client (clients/python): the same import
through `cellar`'s happybase-like API. While that package is not installed the mode prints
{"skipped": "..."} and exits with status 3.
"""

import argparse
import json
import mmap
import random
import struct
import sys
import threading
import time

RECORD = struct.Struct("<6q")
EXIT_SKIPPED = 3


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def key_of(fields):
    a, b, c = fields[0], fields[1], fields[2]
    return b"%d:%d:%d" % (a, b, c)


def value_of(fields):
    """The six fields as zigzag LEB128 varints (import.rs, Row::value)."""
    out = bytearray()
    for v in fields:
        z = ((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF
        while z >= 0x80:
            out.append((z & 0x7F) | 0x80)
            z >>= 7
        out.append(z)
    return bytes(out)


def share(total, writers, w):
    return total // writers + (1 if w < total % writers else 0)


def open_input(path, records):
    f = open(path, "rb")
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(m) < records * RECORD.size:
        raise SystemExit(
            f"{path} holds {len(m) // RECORD.size} records, not {records}")
    return m


def row_at(m, i):
    return RECORD.unpack_from(m, i * RECORD.size)


# --- connections -------------------------------------------------------------------------

def connect(api, host, port):
    """A happybase-like connection: happybase over Thrift1, or Cellar's gRPC client."""
    if api == "happybase":
        import happybase

        # happybase's defaults: buffered transport, binary protocol.
        return happybase.Connection(host=host, port=port, timeout=120_000)
    if api == "grpc":
        try:
            import cellar  # clients/python, `pip install ./clients/python`
        except ImportError as e:
            emit({"skipped": f"the Python gRPC client is not installed ({e}); "
                             "pip install ./clients/python"})
            sys.exit(EXIT_SKIPPED)
        return cellar.Connection(host, port, timeout=120.0)
    raise SystemExit(f"unknown --api {api!r} (happybase or grpc)")


# --- modes -------------------------------------------------------------------------------

def mode_create(a):
    conn = connect(a.api, a.host, a.port)
    # happybase lists table names as bytes, the gRPC client as str.
    if a.table in conn.tables() or a.table.encode() in conn.tables():
        if a.api == "happybase":
            conn.delete_table(a.table, disable=True)
        else:
            conn.delete_table(a.table)
    conn.create_table(a.table, {a.family: dict()})
    conn.close()
    emit({"created": a.table, "family": a.family})


def mode_import(a):
    if not 0 <= a.writer < a.writers:
        raise SystemExit("--writer must be in 0..--writers")
    m = open_input(a.input, a.records)
    first = sum(share(a.records, a.writers, u) for u in range(a.writer))
    n = share(a.records, a.writers, a.writer)
    # The slice is read before the clock starts (the Rust and Java writers stream it from
    # the page cache; here the file's bytes are copied out so the timed loop does the same
    # decoding work as theirs and no I/O).
    raw = m[first * RECORD.size:(first + n) * RECORD.size]
    conn = connect(a.api, a.host, a.port)
    table = conn.table(a.table)
    column = (a.family + ":v").encode()
    if a.wait_go:
        emit({"ready": True})
        if not sys.stdin.readline():
            raise SystemExit("stdin closed before the start signal")
    sends = []
    start_wall = time.time()
    t0 = time.perf_counter()
    batch = table.batch(batch_size=a.batch_size)
    send = batch.send

    def timed_send():
        s = time.perf_counter()
        send()
        sends.append((time.perf_counter() - s) * 1e6)

    # Batch.put calls self.send() every batch_size mutations: each send is timed.
    batch.send = timed_send
    unpack = RECORD.unpack_from
    for off in range(0, len(raw), RECORD.size):
        fields = unpack(raw, off)
        batch.put(key_of(fields), {column: value_of(fields)})
    if n % a.batch_size:
        batch.send()
    seconds = time.perf_counter() - t0
    end_wall = start_wall + seconds
    conn.close()
    emit({
        "rows": n,
        "seconds": seconds,
        "start": start_wall,
        "end": end_wall,
        "send_latency_us": [round(x, 1) for x in sends],
        "batch_size": a.batch_size,
        "api": a.api,
    })


def mode_get(a):
    m = open_input(a.input, a.records)
    rng = random.Random(a.seed)
    total = max(1, round(a.rate * a.seconds))
    keys = [key_of(row_at(m, rng.randrange(a.records))) for _ in range(total)]
    conns = [connect(a.api, a.host, a.port) for _ in range(a.threads)]
    column = (a.family + ":v").encode()
    lock = threading.Lock()
    state = {"next": 0, "lat": [], "service": [], "found": 0, "unserved": 0, "error": None,
             "last_end": None}
    start = time.perf_counter() + 0.05
    stop_serving = start + (total - 1) / a.rate + a.grace

    def worker(conn):
        table = conn.table(a.table)
        lat, service, found, unserved, last_end = [], [], 0, 0, None
        while True:
            with lock:
                j = state["next"]
                state["next"] += 1
                if j >= total or state["error"]:
                    break
            due = start + j / a.rate
            now = time.perf_counter()
            if now > stop_serving:
                unserved += 1
                lat.append((now - due) * 1e6)
                continue
            if due > now:
                time.sleep(due - now)
            s = time.perf_counter()
            try:
                row = table.row(keys[j], columns=[column])
            except Exception as e:  # reported once, ends the run
                with lock:
                    state["error"] = state["error"] or repr(e)
                break
            e = time.perf_counter()
            found += 1 if row else 0
            lat.append((e - due) * 1e6)
            service.append((e - s) * 1e6)
            last_end = e
        with lock:
            state["lat"] += lat
            state["service"] += service
            state["found"] += found
            state["unserved"] += unserved
            if last_end and (state["last_end"] is None or last_end > state["last_end"]):
                state["last_end"] = last_end

    threads = [threading.Thread(target=worker, args=(c,)) for c in conns]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in conns:
        c.close()
    if state["error"]:
        raise SystemExit(f"get failed: {state['error']}")
    completed = len(state["service"])
    span = max((state["last_end"] or start) - start, total / a.rate)
    emit({
        "rate": a.rate,
        "scheduled": total,
        "completed": completed,
        "found": state["found"],
        "unserved": state["unserved"],
        "seconds": span,
        "achieved_rps": completed / span if span > 0 else 0.0,
        "p50_us": percentile(state["lat"], 0.50),
        "p99_us": percentile(state["lat"], 0.99),
        "service_p50_us": percentile(state["service"], 0.50),
        "service_p99_us": percentile(state["service"], 0.99),
        "threads": a.threads,
        "api": a.api,
    })


def mode_verify(a):
    m = open_input(a.input, a.records)
    conn = connect(a.api, a.host, a.port)
    table = conn.table(a.table)
    column = (a.family + ":v").encode()
    step = max(1, a.records // a.rows)
    checked = 0
    for i in range(0, a.records, step):
        fields = row_at(m, i)
        got = table.row(key_of(fields), columns=[column]).get(column)
        if got != value_of(fields):
            raise SystemExit(f"row {i} ({key_of(fields).decode()}) read back as {got!r}")
        checked += 1
    conn.close()
    emit({"verified": checked})


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["create", "import", "get", "verify"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--family", default="d")
    p.add_argument("--api", default="happybase", choices=["happybase", "grpc"])
    p.add_argument("--input")
    p.add_argument("--records", type=int)
    p.add_argument("--writer", type=int, default=0)
    p.add_argument("--writers", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=1000)
    p.add_argument("--wait-go", action="store_true")
    p.add_argument("--rate", type=float)
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--grace", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rows", type=int, default=200)
    a = p.parse_args(argv)
    if a.mode != "create" and (a.input is None or not a.records or a.records < 1):
        p.error(f"{a.mode} needs --input and --records >= 1")
    if a.mode == "get" and (not a.rate or a.rate <= 0 or a.seconds <= 0 or a.threads < 1):
        p.error("get needs --rate > 0, --seconds > 0 and --threads >= 1")
    if a.batch_size < 1 or a.writers < 1:
        p.error("--batch-size and --writers must be at least 1")
    {"create": mode_create, "import": mode_import, "get": mode_get,
     "verify": mode_verify}[a.mode](a)


if __name__ == "__main__":
    main()
