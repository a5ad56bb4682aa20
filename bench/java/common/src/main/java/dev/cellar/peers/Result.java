package dev.cellar.peers;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;

/**
 * One measurement, printed as one JSON object on one line of stdout (the protocol with
 * cellar-bench: crates/cellar-bench/src/mapfile/report.rs, `PeerLine`). Fields: engine, workload
 * ("mapfile"), variant ("insert buffered", "insert durable", "lookup single",
 * "lookup bucket=N"), records, ops, seconds, ops_per_sec, p50_us, p99_us, latency_unit,
 * found, iterations_ops_per_sec, cache_mode, settle_seconds, notes; or, for a variant the
 * engine cannot run, engine, workload, variant and skipped (the reason).
 */
public final class Result {
    public String engine;
    public String variant;
    public long records;
    public long ops;
    public double seconds;
    public double p50Us;
    public double p99Us;
    public String latencyUnit = "op";
    public Long found;
    public List<Double> iterationsOpsPerSec;
    public String cacheMode;
    public Double settleSeconds;
    public String skipped;
    public final List<String> notes = new ArrayList<>();

    public Result(String engine, String variant, long records) {
        this.engine = engine;
        this.variant = variant;
        this.records = records;
    }

    public static Result skipped(String engine, String variant, long records, String why) {
        Result r = new Result(engine, variant, records);
        r.skipped = why;
        return r;
    }

    public Result latencies(Latencies l) {
        p50Us = l.quantileUs(0.50);
        p99Us = l.quantileUs(0.99);
        return this;
    }

    public double opsPerSec() {
        return seconds > 0 ? ops / seconds : 0.0;
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    /** A JSON number (finite; NaN and infinities become 0). */
    static String num(double d) {
        return Double.isFinite(d) ? Double.toString(d) : "0";
    }

    public String toJson() {
        StringBuilder s = new StringBuilder("{");
        s.append("\"engine\":").append(quote(engine));
        s.append(",\"workload\":\"mapfile\"");
        s.append(",\"variant\":").append(quote(variant));
        s.append(",\"records\":").append(records);
        if (skipped != null) {
            s.append(",\"skipped\":").append(quote(skipped));
            return s.append('}').toString();
        }
        s.append(",\"ops\":").append(ops);
        s.append(",\"seconds\":").append(num(seconds));
        s.append(",\"ops_per_sec\":").append(num(opsPerSec()));
        s.append(",\"p50_us\":").append(num(p50Us));
        s.append(",\"p99_us\":").append(num(p99Us));
        s.append(",\"latency_unit\":").append(quote(latencyUnit));
        s.append(",\"found\":").append(found == null ? "null" : found.toString());
        s.append(",\"iterations_ops_per_sec\":");
        if (iterationsOpsPerSec == null) {
            s.append("null");
        } else {
            s.append('[');
            for (int i = 0; i < iterationsOpsPerSec.size(); i++) {
                s.append(i == 0 ? "" : ",").append(num(iterationsOpsPerSec.get(i)));
            }
            s.append(']');
        }
        s.append(",\"cache_mode\":").append(cacheMode == null ? "null" : quote(cacheMode));
        s.append(",\"settle_seconds\":").append(settleSeconds == null ? "null" : num(settleSeconds));
        s.append(",\"notes\":[");
        for (int i = 0; i < notes.size(); i++) {
            s.append(i == 0 ? "" : ",").append(quote(notes.get(i)));
        }
        return s.append("]}").toString();
    }

    /** Prints the line to {@code out} (the real stdout) and a summary to stderr. */
    public void emit(PrintStream out) {
        out.println(toJson());
        out.flush();
        if (skipped != null) {
            System.err.printf("[%s] %s: skipped: %s%n", engine, variant, skipped);
        } else {
            System.err.printf("[%s] %s: %d ops in %.3f s = %.0f ops/s, p50 %.2f us, p99 %.2f us per %s%n",
                    engine, variant, ops, seconds, opsPerSec(), p50Us, p99Us, latencyUnit);
        }
    }
}
