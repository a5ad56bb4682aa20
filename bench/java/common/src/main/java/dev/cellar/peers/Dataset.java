package dev.cellar.peers;

import java.nio.charset.StandardCharsets;

/**
 * The records and the lookup sample of the mapfile workload, exactly as cellar-bench makes
 * them (crates/cellar-bench/src/peer_keys.rs; docs/benchmarks.md, "mapfile").
 *
 * <ul>
 *   <li>Record {@code i} (0 &le; i &lt; records) has key = {@code i} in zero-padded decimal,
 *       {@code keySize} bytes ("0000000000000042"), so key order is index order.</li>
 *   <li>Its value: {@code valueSize} bytes. The first {@code r = valueSize - valueSize/2}
 *       bytes are printable: byte {@code j} is {@code 32 + (b % 95)}, where {@code b} is byte
 *       {@code j % 8} (little-endian) of output {@code j / 8} of SplitMix64 seeded with
 *       {@code i ^ VALUE_SALT}. The rest repeats them ({@code v[j] = v[j - r]}), so values
 *       compress to about half.</li>
 *   <li>Lookups per iteration: {@code L = max(1, (long) (records * fraction))} (a double
 *       product, truncated).</li>
 *   <li>Lookup {@code j} of iteration {@code k} is record
 *       {@code unsigned(SplitMix64.nth(seed, k * L + j)) % records}.</li>
 * </ul>
 */
public final class Dataset {
    /** "value" in ASCII. */
    public static final long VALUE_SALT = 0x76616C7565L;

    private Dataset() {}

    /** Writes the key of {@code index} into {@code out} (its length is the key size). */
    public static void key(long index, byte[] out) {
        long n = index;
        for (int i = out.length - 1; i >= 0; i--) {
            out[i] = (byte) ('0' + (int) Long.remainderUnsigned(n, 10));
            n = Long.divideUnsigned(n, 10);
        }
    }

    public static byte[] key(long index, int keySize) {
        byte[] k = new byte[keySize];
        key(index, k);
        return k;
    }

    public static String keyString(long index, int keySize) {
        return new String(key(index, keySize), StandardCharsets.US_ASCII);
    }

    /** Writes the value of {@code index} into {@code out} (its length is the value size). */
    public static void value(long index, byte[] out) {
        int raw = out.length - out.length / 2;
        SplitMix64 g = new SplitMix64(index ^ VALUE_SALT);
        long word = 0;
        for (int j = 0; j < raw; j++) {
            if (j % 8 == 0) {
                word = g.next();
            }
            int b = (int) ((word >>> (8 * (j % 8))) & 0xFF);
            out[j] = (byte) (32 + b % 95);
        }
        for (int j = raw; j < out.length; j++) {
            out[j] = out[j - raw];
        }
    }

    public static byte[] value(long index, int valueSize) {
        byte[] v = new byte[valueSize];
        value(index, v);
        return v;
    }

    public static long lookupsPerIteration(long records, double fraction) {
        return Math.max(1L, (long) (records * fraction));
    }

    public static long lookupIndex(long seed, long records, long perIteration, int iteration, long j) {
        long n = iteration * perIteration + j;
        return Long.remainderUnsigned(SplitMix64.nth(seed, n), records);
    }

    /** The record indexes iteration {@code iteration} looks up, in order. */
    public static long[] sample(long seed, long records, long perIteration, int iteration) {
        long[] out = new long[(int) perIteration];
        for (int j = 0; j < out.length; j++) {
            out[j] = lookupIndex(seed, records, perIteration, iteration, j);
        }
        return out;
    }
}
