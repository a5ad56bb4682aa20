package dev.cellar.peers;

import java.util.ArrayList;
import java.util.List;

/**
 * The command line cellar-bench gives a peer:
 *
 * <pre>
 * --records N --lookup-fraction F --iterations K --buckets 1,1000,10 --durable-inserts M
 * --dir D --seed S [--key-size 16] [--value-size 100] [--drop-caches] [--keep-data]
 * | --self-test
 * </pre>
 *
 * Bucket 1 means single lookups; larger buckets are batched lookups of that many keys.
 */
public final class BenchArgs {
    public long records = 100_000;
    public double lookupFraction = 0.01;
    public int iterations = 3;
    public List<Integer> buckets = new ArrayList<>(List.of(1, 1000, 10));
    public long durableInserts = 10_000;
    public String dir;
    public long seed = 301;
    public int keySize = 16;
    public int valueSize = 100;
    public boolean dropCaches;
    /** Leave the engine's data under --dir after the run. */
    public boolean keepData;
    public boolean selfTest;

    public static BenchArgs parse(String[] argv) {
        BenchArgs a = new BenchArgs();
        for (int i = 0; i < argv.length; i++) {
            String flag = argv[i];
            switch (flag) {
                case "--self-test" -> a.selfTest = true;
                case "--drop-caches" -> a.dropCaches = true;
                case "--keep-data" -> a.keepData = true;
                default -> {
                    if (i + 1 >= argv.length) {
                        throw new IllegalArgumentException(flag + " needs a value");
                    }
                    String v = argv[++i];
                    switch (flag) {
                        case "--records" -> a.records = Long.parseLong(v);
                        case "--lookup-fraction" -> a.lookupFraction = Double.parseDouble(v);
                        case "--iterations" -> a.iterations = Integer.parseInt(v);
                        case "--buckets" -> {
                            a.buckets = new ArrayList<>();
                            for (String b : v.split(",")) {
                                if (!b.isBlank()) {
                                    a.buckets.add(Integer.parseInt(b.trim()));
                                }
                            }
                        }
                        case "--durable-inserts" -> a.durableInserts = Long.parseLong(v);
                        case "--dir" -> a.dir = v;
                        case "--seed" -> a.seed = Long.parseUnsignedLong(v);
                        case "--key-size" -> a.keySize = Integer.parseInt(v);
                        case "--value-size" -> a.valueSize = Integer.parseInt(v);
                        default -> throw new IllegalArgumentException("unknown flag " + flag);
                    }
                }
            }
        }
        if (!a.selfTest) {
            if (a.dir == null) {
                throw new IllegalArgumentException("--dir is required");
            }
            if (a.records < 1 || a.iterations < 0 || a.durableInserts < 0 || a.valueSize < 1) {
                throw new IllegalArgumentException("--records must be >= 1; counts >= 0");
            }
            if (Long.toString(a.records - 1).length() > a.keySize) {
                throw new IllegalArgumentException("--key-size too small for --records");
            }
            for (int b : a.buckets) {
                if (b < 1) {
                    throw new IllegalArgumentException("buckets must be >= 1");
                }
            }
        }
        return a;
    }

    public long lookupsPerIteration() {
        return Dataset.lookupsPerIteration(records, lookupFraction);
    }
}
