package dev.cellar.peers;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One result line in the shape of cellar-bench's {@code SuiteRecord} (crates/cellar-bench/src/suite.rs),
 * the record of {@code cellar-bench ycsb} and {@code import}: engine, workload, variant, threads, records,
 * ops, seconds, ops_per_sec, p50_us, p99_us, latency_unit, op_latency (per operation type: ops, p50_us,
 * p99_us), rows_per_ms, key_bytes, value_bytes, sync, found, reads, db_bytes, peak_rss_bytes,
 * settle_seconds, notes. Field meanings: docs/benchmarks.md.
 */
public final class SuiteLine {
    public String engine;
    public String workload;
    public String variant;
    public int threads;
    public long records;
    public long ops;
    public double seconds;
    public String latencyUnit = "op";
    /** Latencies per operation type, by the name cellar-bench uses ("read", "update", ...). */
    public final Map<String, Latencies> opLatency = new TreeMap<>();
    public Double rowsPerMs;
    public long keyBytes;
    public long valueBytes;
    public boolean sync;
    public Long found;
    public Long reads;
    public long dbBytes;
    public Long peakRssBytes;
    public Double settleSeconds;
    public final List<String> notes = new ArrayList<>();

    public SuiteLine(String engine, String workload, String variant) {
        this.engine = engine;
        this.workload = workload;
        this.variant = variant;
    }

    public double opsPerSec() {
        return seconds > 0 ? ops / seconds : 0.0;
    }

    /** Every operation type together. */
    public Latencies total() {
        Latencies all = new Latencies();
        for (Latencies l : opLatency.values()) {
            all.addAll(l);
        }
        return all;
    }

    private static String opt(Long v) {
        return v == null ? "null" : v.toString();
    }

    private static String opt(Double v) {
        return v == null ? "null" : Result.num(v);
    }

    public String toJson() {
        Latencies all = total();
        StringBuilder s = new StringBuilder("{");
        s.append("\"engine\":").append(Result.quote(engine));
        s.append(",\"workload\":").append(Result.quote(workload));
        s.append(",\"variant\":").append(Result.quote(variant));
        s.append(",\"threads\":").append(threads);
        s.append(",\"records\":").append(records);
        s.append(",\"ops\":").append(ops);
        s.append(",\"seconds\":").append(Result.num(seconds));
        s.append(",\"ops_per_sec\":").append(Result.num(opsPerSec()));
        s.append(",\"p50_us\":").append(Result.num(all.quantileUs(0.50)));
        s.append(",\"p99_us\":").append(Result.num(all.quantileUs(0.99)));
        s.append(",\"latency_unit\":").append(Result.quote(latencyUnit));
        s.append(",\"op_latency\":{");
        boolean first = true;
        for (Map.Entry<String, Latencies> e : opLatency.entrySet()) {
            Latencies l = e.getValue();
            s.append(first ? "" : ",").append(Result.quote(e.getKey()));
            s.append(":{\"ops\":").append(l.count());
            s.append(",\"p50_us\":").append(Result.num(l.quantileUs(0.50)));
            s.append(",\"p99_us\":").append(Result.num(l.quantileUs(0.99))).append('}');
            first = false;
        }
        s.append('}');
        s.append(",\"rows_per_ms\":").append(opt(rowsPerMs));
        s.append(",\"key_bytes\":").append(keyBytes);
        s.append(",\"value_bytes\":").append(valueBytes);
        s.append(",\"sync\":").append(sync);
        s.append(",\"found\":").append(opt(found));
        s.append(",\"reads\":").append(opt(reads));
        s.append(",\"db_bytes\":").append(dbBytes);
        s.append(",\"peak_rss_bytes\":").append(opt(peakRssBytes));
        s.append(",\"settle_seconds\":").append(opt(settleSeconds));
        s.append(",\"notes\":[");
        for (int i = 0; i < notes.size(); i++) {
            s.append(i == 0 ? "" : ",").append(Result.quote(notes.get(i)));
        }
        return s.append("]}").toString();
    }

    /** Prints the line to {@code out} (the real stdout) and a progress line to stderr. */
    public void emit(PrintStream out) {
        String json = toJson();
        out.println(json);
        out.flush();
        Latencies all = total();
        System.err.printf("[%s] %s %s: %d ops in %.3f s = %.0f ops/s, p50 %.2f us, p99 %.2f us per %s%n", engine,
                workload, variant, ops, seconds, opsPerSec(), all.quantileUs(0.50), all.quantileUs(0.99),
                latencyUnit);
    }
}
