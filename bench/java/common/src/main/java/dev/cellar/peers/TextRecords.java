package dev.cellar.peers;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The records and read streams of {@code cellar-bench elliptics}, exactly as
 * cellar-bench makes them (crates/cellar-bench/src/elliptics/data.rs; docs/benchmarks.md,
 * "elliptics").
 *
 * <ul>
 *   <li>Record {@code i} has the 16-byte zero-padded decimal key of {@code i} ({@link Dataset#key}).</li>
 *   <li>Its value: {@code valueSize} bytes of words of {@link #WORDS} separated by one space,
 *       word {@code w} being {@code WORDS[o_w >>> 58]}, {@code o_w} the w-th output of
 *       SplitMix64 seeded with {@code i ^ TEXT_SALT}; words are appended until the text is at
 *       least {@code valueSize} bytes, then it is cut to exactly {@code valueSize}.</li>
 *   <li>Read {@code j} of stream {@code s}: record
 *       {@code unsigned(SplitMix64.nth(seed + s, j)) % records}.</li>
 * </ul>
 * bench/java/elliptics-vector.txt pins this; {@link #vectorLines} reproduces it.
 */
public final class TextRecords {
    public static final int KEY_BYTES = 16;
    /** "text" in ASCII. */
    public static final long TEXT_SALT = 0x74657874L;

    /** Stream ids (data.rs, Stream::id). */
    public static final long STREAM_FIXED = 0;
    public static final long STREAM_RANGE10 = 1;
    public static final long STREAM_RANGE100 = 2;

    public static long streamRateStep(long n) {
        return 16 + n;
    }

    static final String[] WORDS = {
        "the", "of", "and", "to", "in", "is", "was", "that", "for", "on", "with", "as", "by", "at",
        "from", "his", "her", "they", "which", "this", "have", "were", "but", "not", "are", "had",
        "one", "all", "their", "there", "been", "when", "would", "some", "time", "people", "other",
        "into", "more", "could", "first", "water", "after", "where", "through", "long", "little",
        "very", "before", "great", "world", "between", "server", "record", "storage", "small",
        "object", "index", "cache", "random", "disk", "median", "reply", "upload",
    };

    private TextRecords() {}

    public static byte[] key(long index) {
        return Dataset.key(index, KEY_BYTES);
    }

    public static byte[] value(long index, int valueSize) {
        StringBuilder s = new StringBuilder(valueSize + 16);
        SplitMix64 g = new SplitMix64(index ^ TEXT_SALT);
        while (s.length() < valueSize) {
            if (s.length() > 0) {
                s.append(' ');
            }
            s.append(WORDS[(int) (g.next() >>> 58)]);
        }
        s.setLength(valueSize);
        return s.toString().getBytes(StandardCharsets.US_ASCII);
    }

    public static long readIndex(long seed, long stream, long records, long j) {
        return Long.remainderUnsigned(SplitMix64.nth(seed + stream, j), Math.max(1, records));
    }

    private static String reads(long seed, long stream, long records, int count) {
        StringBuilder s = new StringBuilder();
        for (int j = 0; j < count; j++) {
            s.append(j == 0 ? "" : " ").append(readIndex(seed, stream, records, j));
        }
        return s.toString();
    }

    public static List<String> vectorLines() {
        List<String> out = new ArrayList<>();
        for (long i : new long[] {0, 1, 20_000_000 - 1}) {
            out.add("key index=" + i + ": " + new String(key(i), StandardCharsets.US_ASCII));
        }
        long[][] values = {{0, 200}, {42, 200}, {19_999_999, 200}, {7, 13}};
        for (long[] v : values) {
            out.add("value size=" + v[1] + " index=" + v[0] + ": "
                    + new String(value(v[0], (int) v[1]), StandardCharsets.US_ASCII));
        }
        for (long stream : new long[] {STREAM_FIXED, STREAM_RANGE10, STREAM_RANGE100, streamRateStep(0), streamRateStep(5)}) {
            out.add("reads seed=301 stream=" + stream + " records=20000000: " + reads(301, stream, 20_000_000, 6));
        }
        out.add("read seed=7 stream=3 records=1000 j=123456: " + readIndex(7, 3, 1000, 123_456));
        return out;
    }

    /** What the peer's {@code --self-test} prints: the vector's lines. */
    public static void printVector(PrintStream out) {
        for (String line : vectorLines()) {
            out.println(line);
        }
        out.flush();
    }
}
