package dev.cellar.peers;

import java.util.Arrays;

/** Every latency sample of one measurement, in nanoseconds; quantiles by nearest rank. */
public final class Latencies {
    private long[] ns = new long[1024];
    private int n;

    public void add(long nanos) {
        if (n == ns.length) {
            ns = Arrays.copyOf(ns, ns.length * 2);
        }
        ns[n++] = Math.max(1, nanos);
    }

    public void addAll(Latencies o) {
        for (int i = 0; i < o.n; i++) {
            add(o.ns[i]);
        }
    }

    public int count() {
        return n;
    }

    /** Quantile {@code q} in microseconds; 0 when nothing was recorded. */
    public double quantileUs(double q) {
        if (n == 0) {
            return 0.0;
        }
        long[] sorted = Arrays.copyOf(ns, n);
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * n);
        return sorted[Math.min(n, Math.max(1, rank)) - 1] / 1000.0;
    }
}
