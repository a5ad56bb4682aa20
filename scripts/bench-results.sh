#!/usr/bin/env bash
# Reruns the full benchmark of each named workload (default: all of them, in this order) with
# the command docs/benchmarks.md gives, replacing its result file in docs/benchmarks/, then
# regenerates RESULTS.md. Needs the `rocksdb` and `slatedb` build and the Java peers (docs/benchmarks.md,
# "Building the peers"), a quiet machine, and a clean checkout: every record names the
# commit it ran on, and a dirty tree is marked `-dirty`.
#
#   scripts/bench-results.sh [db ycsb import hypertable elliptics mapfile server dfsio objstore growth elliptics-215m mapfile-100m]
set -euo pipefail
cd "$(dirname "$0")/.."

bench=./target/release/cellar-bench
if [[ " $* " == *" dfsio "* || " $* " == *" elliptics"* || $# == 0 ]] && ! command -v fio >/dev/null; then
    echo "dfsio and elliptics measure fio's ceiling: install fio first (cellar-bench peers setup --apt)" >&2
    exit 2
fi
# Built here, so that the binary is the checkout's that every record names.
cargo build --release -p cellar-bench --features rocksdb,slatedb
out=docs/benchmarks
data=${CELLAR_BENCH_DATA:-bench-data}

run() { # run FILE ARGS...: the workload's command, its result file replaced
    local file=$out/$1
    shift
    rm -f "$file"
    echo "== $(date -u +%H:%M:%S) cellar-bench $* --json $file" >&2
    "$bench" "$@" --json "$file"
}

workload() {
    case $1 in
    db) run db-10m.jsonl db --engines cellar,rocksdb,fjall,lmdb --num 10000000 --reads 1000000 \
        --sync-ops 20000 --db-dir "$data/db" ;;
    ycsb) run ycsb-1m.jsonl ycsb --engines cellar,rocksdb,fjall,lmdb --records 1000000 \
        --operations 1000000 --db-dir "$data/ycsb" ;;
    import) run import-1m.jsonl import --records 1000000 \
        --engines cellar,rocksdb,fjall,sqlite,hbase --db-dir "$data/import" ;;
    hypertable) run hypertable-20m.jsonl hypertable --lines 20000000 \
        --engines cellar,rocksdb,lmdb,fjall --dir "$data/hypertable" ;;
    elliptics) run elliptics-5m.jsonl elliptics --engines cellar,rocksdb,lmdb,hbase \
        --records 5000000 --seconds 30 --step-seconds 5 --fio --dir "$data/elliptics" ;;
    elliptics-215m) run elliptics-215m.jsonl elliptics --engines cellar,rocksdb,lmdb \
        --records 215000000 --seconds 30 --step-seconds 5 --fio --fio-file-mb 26300 \
        --dir "$data/elliptics-215m" ;;
    mapfile) run mapfile-10m.jsonl mapfile --records 10000000 \
        --engines cellar,rocksdb,lmdb,mapfile,hbase --dir "$data/mapfile" ;;
    mapfile-100m) run mapfile-100m.jsonl mapfile --records 100000000 \
        --engines cellar,rocksdb,lmdb,mapfile --dir "$data/mapfile-100m" ;;
    server) run server-1m.jsonl server --records 1000000 --writers 1,6 \
        --rates 1000,5000,10000 --db-dir "$data/server" ;;
    dfsio) run dfsio-8x1g.jsonl dfsio --files 8 --size 1GB --buffer-size 8388608 \
        --engines cellar,posix --fio --dir "$data/dfsio" ;;
    objstore) run objstore-1m.jsonl objstore --records 1000000 --db-dir "$data/objstore" ;;
    growth) run growth-1m-200m.jsonl growth --engines cellar,rocksdb --sizes 1M,10M,50M,200M \
        --db-dir "$data/growth" ;;
    *) echo "unknown workload $1" >&2; return 2 ;;
    esac
}

if (($# == 0)); then
    set -- db ycsb import hypertable elliptics mapfile server dfsio objstore growth elliptics-215m \
        mapfile-100m
fi
for w in "$@"; do
    workload "$w"
    rm -rf "${data:?}/$w"
done
"$bench" report --json "$out"/*.jsonl
