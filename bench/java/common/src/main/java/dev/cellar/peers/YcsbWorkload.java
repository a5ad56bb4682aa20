package dev.cellar.peers;

import java.nio.charset.StandardCharsets;

/**
 * YCSB's core workloads as cellar-bench ycsb runs them (crates/cellar-bench/src/ycsb/workload.rs):
 * the mixes, the keys, and the draws of one client, in the same order as the Rust client so that
 * the same seed asks for the same records (bench/java/ycsb_vector.txt).
 *
 * <p>Per operation: the operation ({@code nextDouble} against the cumulative proportions); unless
 * it is an insert, the record (the request distribution); then for an update or read-modify-write
 * the field ({@code below(fieldCount)}), for a scan its length (uniform 1..=100). An insert takes
 * the next number from the shared {@link YcsbGen.InsertCounter} and draws nothing.
 */
public final class YcsbWorkload {
    private YcsbWorkload() {}

    /** Digits of the hashed record number in a key (YCSB's zeropadding=19). */
    public static final int KEY_DIGITS = 19;

    public enum Op {
        READ("read", 'r'),
        UPDATE("update", 'u'),
        INSERT("insert", 'i'),
        SCAN("scan", 's'),
        READ_MODIFY_WRITE("read_modify_write", 'm');

        /** The name in results (SuiteRecord.op_latency). */
        public final String label;
        final char letter;

        Op(String label, char letter) {
            this.label = label;
            this.letter = letter;
        }
    }

    public enum Distribution {
        ZIPFIAN, LATEST, UNIFORM;

        public static Distribution parse(String s) {
            return switch (s) {
                case "zipfian" -> ZIPFIAN;
                case "latest" -> LATEST;
                case "uniform" -> UNIFORM;
                default -> throw new IllegalArgumentException("unknown distribution " + s);
            };
        }
    }

    /** One core workload: proportions of read, update, insert, scan, read-modify-write. */
    public static final class Mix {
        public final char name;
        final double[] p;
        public Distribution distribution;

        Mix(char name, double[] p, Distribution distribution) {
            this.name = name;
            this.p = p;
            this.distribution = distribution;
        }

        public double insert() {
            return p[2];
        }

        /** The operation for a uniform draw {@code u} in [0, 1). */
        public Op choose(double u) {
            Op[] ops = Op.values();
            double acc = 0.0;
            Op last = Op.READ;
            for (int i = 0; i < ops.length; i++) {
                if (p[i] <= 0.0) {
                    continue;
                }
                acc += p[i];
                last = ops[i];
                if (u < acc) {
                    return ops[i];
                }
            }
            return last;
        }
    }

    /** Workloads a-f of YCSB with their own request distributions. */
    public static Mix core(char name) {
        return switch (Character.toLowerCase(name)) {
            case 'a' -> new Mix('a', new double[] {0.5, 0.5, 0, 0, 0}, Distribution.ZIPFIAN);
            case 'b' -> new Mix('b', new double[] {0.95, 0.05, 0, 0, 0}, Distribution.ZIPFIAN);
            case 'c' -> new Mix('c', new double[] {1.0, 0, 0, 0, 0}, Distribution.ZIPFIAN);
            case 'd' -> new Mix('d', new double[] {0.95, 0, 0.05, 0, 0}, Distribution.LATEST);
            case 'e' -> new Mix('e', new double[] {0, 0, 0.05, 0.95, 0}, Distribution.ZIPFIAN);
            case 'f' -> new Mix('f', new double[] {0.5, 0, 0, 0, 0.5}, Distribution.ZIPFIAN);
            default -> throw new IllegalArgumentException("unknown workload " + name + " (a-f)");
        };
    }

    /** The seed of client thread {@code thread} in the workload at position {@code ordinal}. */
    public static long clientSeed(long seed, long ordinal, long thread) {
        return seed * 1_000_003L + (ordinal * 1000 + thread);
    }

    /** Inserts YCSB sizes a run's zipfian key space for: twice the expected count. */
    public static long expectedInserts(Mix mix, long operations) {
        return (long) ((double) operations * mix.insert() * 2.0);
    }

    /** The key of record {@code n}: "user" and the FNV hash of n, 19 zero-padded digits. */
    public static String keyString(long n) {
        String digits = Long.toUnsignedString(YcsbGen.fnvHash64(n));
        return "user" + "0".repeat(Math.max(0, KEY_DIGITS - digits.length())) + digits;
    }

    public static byte[] key(long n) {
        return keyString(n).getBytes(StandardCharsets.US_ASCII);
    }

    /** Bytes of a record as the Rust side serializes it (per field: 4 + name + 4 + value). */
    public static long valueBytes(int fieldCount, int fieldLength) {
        long sum = 0;
        for (int i = 0; i < fieldCount; i++) {
            sum += 8 + ("field" + i).length() + fieldLength;
        }
        return sum;
    }

    /** Picks record numbers by a request distribution; one per client (copy the prototype). */
    public static final class KeyChooser {
        private final Distribution d;
        private final YcsbGen.ScrambledZipfian zipfian;
        private final YcsbGen.SkewedLatest latest;

        public KeyChooser(Distribution d, long records, long newRecords) {
            this.d = d;
            this.zipfian = d == Distribution.ZIPFIAN ? new YcsbGen.ScrambledZipfian(0, records + newRecords - 1) : null;
            this.latest = d == Distribution.LATEST ? new YcsbGen.SkewedLatest(records - 1) : null;
        }

        public KeyChooser(KeyChooser o) {
            d = o.d;
            zipfian = o.zipfian;
            latest = o.latest == null ? null : new YcsbGen.SkewedLatest(o.latest);
        }

        /** A record below {@code complete}; a zipfian draw beyond it is drawn again (as YCSB). */
        public long next(long complete, YcsbGen.Rng rng) {
            switch (d) {
                case ZIPFIAN -> {
                    while (true) {
                        long n = zipfian.next(rng);
                        if (n < complete) {
                            return n;
                        }
                    }
                }
                case LATEST -> {
                    return latest.next(complete - 1, rng);
                }
                default -> {
                    return YcsbGen.uniform(0, complete - 1, rng);
                }
            }
        }
    }

    /** One operation as drawn. */
    public static final class Request {
        public final Op op;
        public final long record;
        /** Update and read-modify-write: the field; otherwise 0. */
        public final int field;
        /** Scan: records to visit; otherwise 0. */
        public final int scanLength;

        Request(Op op, long record, int field, int scanLength) {
            this.op = op;
            this.record = record;
            this.field = field;
            this.scanLength = scanLength;
        }

        /** As in the vector: r12, u12.f3, i500, s12.n40, m12.f3. */
        public String vectorForm() {
            String s = op.letter + Long.toString(record);
            return switch (op) {
                case UPDATE, READ_MODIFY_WRITE -> s + ".f" + field;
                case SCAN -> s + ".n" + scanLength;
                default -> s;
            };
        }
    }

    /** The next operation of a client. An insert's record is claimed; acknowledge it once written. */
    public static Request nextRequest(Mix mix, KeyChooser chooser, YcsbGen.InsertCounter inserts, int fieldCount,
            YcsbGen.Rng rng) {
        Op op = mix.choose(rng.nextDouble());
        long record = op == Op.INSERT ? inserts.claim() : chooser.next(inserts.complete(), rng);
        int field = 0;
        int scanLength = 0;
        if (op == Op.UPDATE || op == Op.READ_MODIFY_WRITE) {
            field = (int) rng.below(fieldCount);
        } else if (op == Op.SCAN) {
            scanLength = (int) YcsbGen.uniform(1, 100, rng);
        }
        return new Request(op, record, field, scanLength);
    }
}
