package dev.cellar.peers;

import java.util.ArrayList;
import java.util.List;

/**
 * The fixed vector both sides are tested against: bench/java/vector.txt. cellar-bench's
 * peer_keys::vector_lines() makes the same lines; a Rust test compares them with the file
 * and with what `--self-test` of each built peer prints, and VectorTest does the same here.
 */
public final class Vector {
    private Vector() {}

    private static String hex(long x) {
        return String.format("%016x", x);
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xFF));
        }
        return s.toString();
    }

    private static String outputs(long seed, int n) {
        SplitMix64 g = new SplitMix64(seed);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < n; i++) {
            s.append(i == 0 ? "" : " ").append(hex(g.next()));
        }
        return s.toString();
    }

    private static String lookups(long seed, long records, long per, int iteration, int count) {
        StringBuilder s = new StringBuilder();
        for (int j = 0; j < count; j++) {
            s.append(j == 0 ? "" : " ").append(Dataset.lookupIndex(seed, records, per, iteration, j));
        }
        return s.toString();
    }

    public static List<String> lines() {
        List<String> out = new ArrayList<>();
        out.add("splitmix64 seed=0: " + outputs(0, 4));
        out.add("splitmix64 seed=18446744073709551615: " + outputs(-1L, 2));
        out.add("splitmix64 nth seed=301 n=999: " + hex(SplitMix64.nth(301, 999)));
        for (long i : new long[] {0, 42, 9_999_999}) {
            out.add("key size=16 index=" + i + ": " + Dataset.keyString(i, 16));
        }
        out.add("key size=8 index=12345: " + Dataset.keyString(12345, 8));
        out.add("per_iteration records=1000000 fraction=0.01: "
                + Dataset.lookupsPerIteration(1_000_000, 0.01));
        out.add("per_iteration records=100000 fraction=0.01: "
                + Dataset.lookupsPerIteration(100_000, 0.01));
        out.add("per_iteration records=50 fraction=0.01: " + Dataset.lookupsPerIteration(50, 0.01));
        out.add("lookups records=1000000 per=10000 seed=301 iteration=0: "
                + lookups(301, 1_000_000, 10_000, 0, 8));
        out.add("lookups records=1000000 per=10000 seed=301 iteration=2: "
                + lookups(301, 1_000_000, 10_000, 2, 8));
        out.add("lookup records=100000 per=1000 seed=7 iteration=1 j=999: "
                + Dataset.lookupIndex(7, 100_000, 1000, 1, 999));
        out.add("value size=100 index=0: " + hex(Dataset.value(0, 100)));
        out.add("value size=100 index=123456: " + hex(Dataset.value(123_456, 100)));
        out.add("value size=7 index=5: " + hex(Dataset.value(5, 7)));
        return out;
    }

    /** What `--self-test` prints: the vector's lines. */
    public static void print(java.io.PrintStream out) {
        for (String line : lines()) {
            out.println(line);
        }
        out.flush();
    }
}
