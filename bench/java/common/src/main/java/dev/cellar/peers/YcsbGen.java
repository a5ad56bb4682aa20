package dev.cellar.peers;

import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;

/**
 * YCSB's request generators as cellar-bench ycsb makes them (crates/cellar-bench/src/ycsb/gen.rs),
 * step by step, so that the same seed draws the same numbers on both sides; bench/java/ycsb_vector.txt
 * pins both (YcsbVectorTest). Record numbers and counts are unsigned 64-bit on the Rust side and
 * stay far below 2^63 here, except the FNV hash, handled as unsigned.
 *
 * <p>Floating point: the same operations in the same order give the same doubles, except pow,
 * which here is {@link StrictMath#pow} (fdlibm, the same on every JVM) and in Rust glibc's pow;
 * both are within one ulp and agree on every value of the vector.
 */
public final class YcsbGen {
    private YcsbGen() {}

    /** YCSB's zipfian constant. */
    public static final double ZIPFIAN_CONSTANT = 0.99;
    /** Items of the zipfian behind {@link ScrambledZipfian}, and YCSB's hard-coded zeta of them. */
    static final long SCRAMBLED_ITEMS = 10_000_000_000L;
    static final double SCRAMBLED_ZETAN = 26.46902820178302;
    private static final long FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325L;
    private static final long FNV_PRIME_64 = 1099511628211L;

    /** SplitMix64 with the two derived draws of gen.rs's YcsbRng. */
    public static final class Rng {
        private final SplitMix64 g;

        public Rng(long seed) {
            g = new SplitMix64(seed);
        }

        public long nextLong() {
            return g.next();
        }

        /** The top 53 bits times 2^-53: uniform in [0, 1). */
        public double nextDouble() {
            return (nextLong() >>> 11) * (1.0 / (1L << 53));
        }

        /** Uniform in {@code 0..n} (n ≥ 1): the high word of the unsigned 128-bit product. */
        public long below(long n) {
            long x = nextLong();
            // Unsigned high word from the signed one (n is positive).
            return Math.multiplyHigh(x, n) + ((x >> 63) & n);
        }
    }

    /** YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of v, low first, made non-negative (unsigned). */
    public static long fnvHash64(long v) {
        long h = FNV_OFFSET_BASIS_64;
        for (int i = 0; i < 8; i++) {
            h ^= v & 0xff;
            h *= FNV_PRIME_64;
            v >>>= 8;
        }
        // Rust: (h as i64).unsigned_abs(); Long.MIN_VALUE stays 2^63 read as unsigned.
        return h < 0 ? -h : h;
    }

    static double zetaFrom(long from, long n, double theta, double partial) {
        double sum = partial;
        for (long i = from; i < n; i++) {
            sum += 1.0 / StrictMath.pow((double) (i + 1), theta);
        }
        return sum;
    }

    public static double zeta(long n, double theta) {
        return zetaFrom(0, n, theta, 0.0);
    }

    /** Zipfian ranks in {@code 0..items}, rank 0 the most popular (Gray et al.). */
    public static final class Zipfian {
        private long items;
        private final double theta;
        private final double alpha;
        private double zetan;
        private final double zeta2;
        private double eta;

        public Zipfian(long items) {
            this(items, zeta(items, ZIPFIAN_CONSTANT));
        }

        Zipfian(long items, double zetan) {
            this.items = items;
            this.theta = ZIPFIAN_CONSTANT;
            this.alpha = 1.0 / (1.0 - theta);
            this.zetan = zetan;
            this.zeta2 = zeta(2, theta);
            this.eta = etaFor(items);
        }

        Zipfian(Zipfian o) {
            items = o.items;
            theta = o.theta;
            alpha = o.alpha;
            zetan = o.zetan;
            zeta2 = o.zeta2;
            eta = o.eta;
        }

        private double etaFor(long n) {
            return (1.0 - StrictMath.pow(2.0 / (double) n, 1.0 - theta)) / (1.0 - zeta2 / zetan);
        }

        public long next(Rng rng) {
            double u = rng.nextDouble();
            double uz = u * zetan;
            if (uz < 1.0) {
                return 0;
            }
            if (uz < 1.0 + StrictMath.pow(0.5, theta)) {
                return 1;
            }
            // Rust's `as u64` saturates; ranks stay far below 2^63.
            long r = (long) ((double) items * StrictMath.pow(eta * u - eta + 1.0, alpha));
            return Math.min(Math.max(r, 0), items - 1);
        }

        /** A rank after growing the item count to {@code n} (never shrinks). */
        public long nextBelow(long n, Rng rng) {
            if (n > items) {
                zetan = zetaFrom(items, n, theta, zetan);
                items = n;
                eta = etaFor(n);
            }
            return next(rng);
        }
    }

    /** YCSB's ScrambledZipfianGenerator over {@code min..=max}. */
    public static final class ScrambledZipfian {
        private final long min;
        private final long count;
        private final Zipfian ranks;

        public ScrambledZipfian(long min, long max) {
            this.min = min;
            this.count = max - min + 1;
            this.ranks = new Zipfian(SCRAMBLED_ITEMS, SCRAMBLED_ZETAN);
        }

        public long next(Rng rng) {
            return min + Long.remainderUnsigned(fnvHash64(ranks.next(rng)), count);
        }
    }

    /** YCSB's SkewedLatestGenerator: {@code newest - zipfian(newest)}, in {@code 1..=newest}. */
    public static final class SkewedLatest {
        private final Zipfian ranks;

        public SkewedLatest(long newest) {
            ranks = new Zipfian(Math.max(newest, 1));
        }

        public SkewedLatest(SkewedLatest o) {
            ranks = new Zipfian(o.ranks);
        }

        public long next(long newest, Rng rng) {
            newest = Math.max(newest, 1);
            return newest - Math.min(ranks.nextBelow(newest, rng), newest - 1);
        }
    }

    /** Uniform over {@code min..=max}. */
    public static long uniform(long min, long max, Rng rng) {
        return min + rng.below(max - min + 1);
    }

    /** New record numbers for inserts, and the prefix of them that is complete (acknowledged). */
    public static final class InsertCounter {
        private final AtomicLong next;
        private volatile long completeBelow;
        private final TreeSet<Long> doneOutOfOrder = new TreeSet<>();

        public InsertCounter(long records) {
            next = new AtomicLong(records);
            completeBelow = records;
        }

        public long claim() {
            return next.getAndIncrement();
        }

        public synchronized void acknowledge(long n) {
            doneOutOfOrder.add(n);
            long below = completeBelow;
            while (doneOutOfOrder.remove(below)) {
                below++;
            }
            completeBelow = below;
        }

        /** Records {@code 0..complete()} all exist. */
        public long complete() {
            return completeBelow;
        }
    }
}
