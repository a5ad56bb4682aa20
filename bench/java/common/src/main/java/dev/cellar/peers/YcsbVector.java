package dev.cellar.peers;

import java.util.ArrayList;
import java.util.List;

/**
 * The lines of bench/java/ycsb_vector.txt as this side computes them; cellar-bench's
 * ycsb/vector.rs makes the same ones from the Rust generators.
 */
public final class YcsbVector {
    private YcsbVector() {}

    private static final int DRAWS = 20;
    private static final int REQUESTS = 30;

    private interface Draw {
        long next();
    }

    private static String draws(Draw d) {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < DRAWS; i++) {
            s.append(i == 0 ? "" : " ").append(Long.toUnsignedString(d.next()));
        }
        return s.toString();
    }

    private static String hex(long x) {
        return String.format("%016x", x);
    }

    public static List<String> lines() {
        List<String> out = new ArrayList<>();
        YcsbGen.Rng r1 = new YcsbGen.Rng(1);
        out.add("rng seed=1: " + hex(r1.nextLong()) + " " + hex(r1.nextLong()) + " " + hex(r1.nextLong()) + " "
                + hex(r1.nextLong()));
        YcsbGen.Rng rMax = new YcsbGen.Rng(-1L);
        out.add("rng below=100 seed=18446744073709551615: " + draws(() -> rMax.below(100)));
        YcsbGen.Rng r5 = new YcsbGen.Rng(5);
        StringBuilder bits = new StringBuilder();
        for (int i = 0; i < 4; i++) {
            bits.append(i == 0 ? "" : " ").append(hex(Double.doubleToRawLongBits(r5.nextDouble())));
        }
        out.add("rng f64 bits seed=5: " + bits);
        StringBuilder fnv = new StringBuilder();
        long[] ns = {0, 1, 2, 999_999, -1L};
        for (int i = 0; i < ns.length; i++) {
            fnv.append(i == 0 ? "" : " ").append(Long.toUnsignedString(YcsbGen.fnvHash64(ns[i])));
        }
        out.add("fnv64 0 1 2 999999 18446744073709551615: " + fnv);
        for (long n : new long[] {0, 1, 4999}) {
            out.add("key n=" + n + ": " + YcsbWorkload.keyString(n));
        }
        for (long n : new long[] {2, 1000, 100_000}) {
            out.add("zeta n=" + n + " bits: "
                    + hex(Double.doubleToRawLongBits(YcsbGen.zeta(n, YcsbGen.ZIPFIAN_CONSTANT))));
        }
        YcsbGen.Zipfian z = new YcsbGen.Zipfian(1000);
        YcsbGen.Rng r7a = new YcsbGen.Rng(7);
        out.add("zipfian items=1000 seed=7: " + draws(() -> z.next(r7a)));
        YcsbGen.Zipfian zg = new YcsbGen.Zipfian(1000);
        YcsbGen.Rng r7b = new YcsbGen.Rng(7);
        out.add("zipfian items=1000 grown=5000 seed=7: " + draws(() -> zg.nextBelow(5000, r7b)));
        YcsbGen.ScrambledZipfian s = new YcsbGen.ScrambledZipfian(0, 99_999);
        YcsbGen.Rng r7c = new YcsbGen.Rng(7);
        out.add("scrambled_zipfian min=0 max=99999 seed=7: " + draws(() -> s.next(r7c)));
        YcsbGen.SkewedLatest l = new YcsbGen.SkewedLatest(9999);
        YcsbGen.Rng r7d = new YcsbGen.Rng(7);
        out.add("latest newest=9999 seed=7: " + draws(() -> l.next(9999, r7d)));
        out.add("latest newest=9999 then=10100 seed=7: " + draws(() -> l.next(10_100, r7d)));
        YcsbGen.Rng r7e = new YcsbGen.Rng(7);
        out.add("uniform min=1 max=100 seed=7: " + draws(() -> YcsbGen.uniform(1, 100, r7e)));

        long records = 1000;
        long operations = 1000;
        int fields = 10;
        String[][] runs = {{"a", null}, {"b", null}, {"c", null}, {"d", null}, {"e", null}, {"f", null},
            {"a", "uniform"}, {"e", "latest"}};
        for (int ordinal = 0; ordinal < runs.length; ordinal++) {
            YcsbWorkload.Mix mix = YcsbWorkload.core(runs[ordinal][0].charAt(0));
            if (runs[ordinal][1] != null) {
                mix.distribution = YcsbWorkload.Distribution.parse(runs[ordinal][1]);
            }
            long seed = YcsbWorkload.clientSeed(1, ordinal, 0);
            YcsbWorkload.KeyChooser chooser = new YcsbWorkload.KeyChooser(mix.distribution, records,
                    YcsbWorkload.expectedInserts(mix, operations));
            YcsbGen.InsertCounter inserts = new YcsbGen.InsertCounter(records);
            YcsbGen.Rng r = new YcsbGen.Rng(seed);
            StringBuilder reqs = new StringBuilder();
            for (int i = 0; i < REQUESTS; i++) {
                YcsbWorkload.Request q = YcsbWorkload.nextRequest(mix, chooser, inserts, fields, r);
                if (q.op == YcsbWorkload.Op.INSERT) {
                    inserts.acknowledge(q.record);
                }
                reqs.append(i == 0 ? "" : " ").append(q.vectorForm());
            }
            out.add("workload " + mix.name + " distribution=" + mix.distribution.name().toLowerCase()
                    + " records=" + records + " operations=" + operations + " fields=" + fields + " seed=" + seed
                    + ": " + reqs);
        }
        return out;
    }
}
