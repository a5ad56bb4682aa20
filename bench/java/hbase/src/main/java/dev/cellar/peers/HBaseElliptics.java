package dev.cellar.peers;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.io.compress.Compression;
import org.apache.hadoop.hbase.regionserver.HRegion;
import org.apache.hadoop.hbase.regionserver.HStore;
import org.apache.hadoop.hbase.util.CommonFSUtils;
import org.apache.hadoop.hbase.util.CompressionTest;

/**
 * "Elliptics vs HBase on hundreds of millions of small records" (cellar-bench elliptics) on the HBase
 * 2.6.1 mini-cluster of {@link HBaseBench}: the same phases as cellar-bench's Rust engines
 * (crates/cellar-bench/src/elliptics/child.rs) on the same data ({@link TextRecords}).
 *
 * <pre>
 * HBaseElliptics --records N --value-size V --rps R --seconds S --step-seconds T
 *     --latency-ms L --p99-latency-ms P --max-rps M --max-steps K --threads T --scan-threads U
 *     --seed S --dir D [--drop-caches] [--keep-data]
 * HBaseElliptics --self-test      (prints bench/java/elliptics-vector.txt as computed here)
 * </pre>
 *
 * <p>Table {@code elliptics}, one family {@code f} compressed with GZ (pure Java, no native
 * library; NONE if the codec test fails, and the notes say so), row bloom filter, 64 KiB
 * blocks (HBase's defaults), one region. Load: a {@code BufferedMutator}, one
 * {@code mutate(List)} of 5000 puts per call (the write-up's batch upload), timed until its
 * {@code flush()}; then, untimed, a memstore flush and a wait for compactions. Each read phase
 * starts cold: the region server's block cache cleared ({@code Admin.clearBlockCache}) and,
 * with {@code --drop-caches}, the page cache dropped; the mini-cluster itself stays up (a
 * restart would take 15 s per step). Open loop: request j is due at start + j/rps; a pool
 * of threads (each its own {@code Table}) sleeps until it is due and issues one
 * {@code Table.get}; latency runs from the due time. Max-rate search and range reads
 * ({@code Scan} from the key with {@code setLimit}/{@code setCaching}) as on the Rust side.
 * One JSON line per variant on stdout in the shape of elliptics/line.rs's {@code Line}.
 */
public final class HBaseElliptics {
    private static final String ENGINE = "hbase";
    private static final byte[] FAMILY = {'f'};
    private static final byte[] QUALIFIER = {'v'};
    private static final int LOAD_BATCH = 5000;
    private static final TableName TABLE = TableName.valueOf("elliptics");

    private long records = 20_000_000;
    private int valueSize = 200;
    private long rps = 200;
    private double seconds = 60;
    private double stepSeconds = 10;
    private double latencyMs = 100;
    private double p99LatencyMs = 10;
    private long maxRps = 200_000;
    private int maxSteps = 20;
    private int threads = 32;
    private int scanThreads = 8;
    private long seed = 301;
    private String dir;
    private boolean dropCaches;
    private boolean keepData;
    private boolean selfTest;

    private HBaseTestingUtility util;
    private Connection conn;
    private Admin admin;
    private long dbBytes;
    private Long resident;
    private final List<String> sizeNotes = new ArrayList<>();

    private HBaseElliptics() {}

    public static void main(String[] argv) {
        System.exit(Peer.runMain(argv, HBaseElliptics::run));
    }

    static HBaseElliptics parse(String[] argv) {
        HBaseElliptics a = new HBaseElliptics();
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
                        case "--value-size" -> a.valueSize = Integer.parseInt(v);
                        case "--rps" -> a.rps = Long.parseLong(v);
                        case "--seconds" -> a.seconds = Double.parseDouble(v);
                        case "--step-seconds" -> a.stepSeconds = Double.parseDouble(v);
                        case "--latency-ms" -> a.latencyMs = Double.parseDouble(v);
                        case "--p99-latency-ms" -> a.p99LatencyMs = Double.parseDouble(v);
                        case "--max-rps" -> a.maxRps = Long.parseLong(v);
                        case "--max-steps" -> a.maxSteps = Integer.parseInt(v);
                        case "--threads" -> a.threads = Integer.parseInt(v);
                        case "--scan-threads" -> a.scanThreads = Integer.parseInt(v);
                        case "--seed" -> a.seed = Long.parseUnsignedLong(v);
                        case "--dir" -> a.dir = v;
                        default -> throw new IllegalArgumentException("unknown flag " + flag);
                    }
                }
            }
        }
        if (!a.selfTest && (a.dir == null || a.records < 1 || a.valueSize < 1 || a.rps < 1 || a.threads < 1
                || a.scanThreads < 1 || !(a.seconds > 0) || !(a.stepSeconds > 0))) {
            throw new IllegalArgumentException("needs --dir, and --records, --value-size, --rps, --threads, "
                    + "--scan-threads, --seconds, --step-seconds above 0");
        }
        return a;
    }

    private static void run(String[] argv) throws Exception {
        PrintStream out = Peer.takeStdout();
        HBaseElliptics a = parse(argv);
        if (a.selfTest) {
            TextRecords.printVector(out);
            return;
        }
        a.util = HBaseBench.startCluster(a.dir);
        try {
            a.conn = a.util.getConnection();
            a.admin = a.util.getAdmin();
            a.phases(out);
        } finally {
            System.err.println("[hbase] shutting the mini-cluster down");
            a.util.shutdownMiniCluster();
            if (!a.keepData) {
                a.util.cleanupTestDir();
            }
        }
    }

    private void phases(PrintStream out) throws Exception {
        String compression = createTable();
        load(compression).emit(out);
        EllLine fixed = fixedRate();
        fixed.emit(out);
        for (EllLine l : maxRate()) {
            l.emit(out);
        }
        range(10, TextRecords.STREAM_RANGE10).emit(out);
        range(100, TextRecords.STREAM_RANGE100).emit(out);
    }

    /** Creates the table, GZ-compressed if the codec works here; returns its name. */
    private String createTable() throws Exception {
        Compression.Algorithm alg = Compression.Algorithm.GZ;
        try {
            CompressionTest.testCompression(alg);
        } catch (Exception e) {
            System.err.println("[hbase] GZ compression unavailable (" + e + "): NONE");
            alg = Compression.Algorithm.NONE;
        }
        admin.createTable(TableDescriptorBuilder.newBuilder(TABLE)
                .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(FAMILY).setCompressionType(alg).build())
                .build());
        return alg.getName();
    }

    private EllLine line(String variant) {
        EllLine l = new EllLine(variant);
        l.records = records;
        l.valueBytes = valueSize;
        return l;
    }

    private EllLine load(String compression) throws Exception {
        EllLine l = line("load");
        l.latencyUnit = "batch";
        Latencies lat = new Latencies();
        long start = System.nanoTime();
        try (BufferedMutator m = conn.getBufferedMutator(TABLE)) {
            for (long next = 0; next < records; next += LOAD_BATCH) {
                long n = Math.min(LOAD_BATCH, records - next);
                List<Mutation> batch = new ArrayList<>((int) n);
                for (long i = next; i < next + n; i++) {
                    batch.add(new Put(TextRecords.key(i)).addColumn(FAMILY, QUALIFIER, TextRecords.value(i, valueSize)));
                }
                long t0 = System.nanoTime();
                m.mutate(batch);
                lat.add(System.nanoTime() - t0);
            }
            m.flush();
        }
        l.seconds = (System.nanoTime() - start) / 1e9;
        l.ops = records;
        long s0 = System.nanoTime();
        flushMemstores();
        long waitUntil = System.nanoTime() + 4L * 3600 * 1_000_000_000L;
        while (admin.getCompactionState(TABLE) != CompactionState.NONE && System.nanoTime() < waitUntil) {
            Thread.sleep(200);
        }
        l.settleSeconds = (System.nanoTime() - s0) / 1e9;
        l.finish(lat);
        FileSystem fs = util.getTestFileSystem();
        dbBytes = fs.getContentSummary(CommonFSUtils.getTableDir(CommonFSUtils.getRootDir(util.getConfiguration()), TABLE))
                .getLength();
        l.dbBytes = dbBytes;
        l.note = sizeNote(null);
        sizeNotes.add("family f: compression " + compression + ", 64 KiB blocks, row bloom filter; one region");
        l.notes.add("BufferedMutator.mutate(List) of " + LOAD_BATCH + " puts per call in key order; settle = "
                + "memstore flush + compaction wait (untimed); db_bytes = the table's HFiles");
        l.notes.addAll(sizeNotes);
        return l;
    }

    /**
     * Flushes the table's memstores to HFiles and waits until they are empty. Not
     * {@code Admin.flush}: in HBase 2.6 its flush procedure fails ("Unable to complete flush")
     * when the region server is already flushing after a large load, and the client then
     * waited forever (seen with 5M records). Each region is flushed directly, retried until
     * its memstore is empty.
     */
    private void flushMemstores() throws Exception {
        long deadline = System.nanoTime() + 3600L * 1_000_000_000L;
        for (org.apache.hadoop.hbase.regionserver.HRegion r : util.getHBaseCluster().getRegions(TABLE)) {
            while (r.getMemStoreDataSize() > 0) {
                if (System.nanoTime() > deadline) {
                    throw new java.io.IOException("memstore of " + r + " not flushed within an hour");
                }
                r.flush(true);
                if (r.getMemStoreDataSize() > 0) {
                    Thread.sleep(200);
                }
            }
        }
    }

    private String sizeNote(Long res) {
        long raw = records * (TextRecords.KEY_BYTES + valueSize);
        String s = String.format("on disk %s (%.2f of raw)", bytes(dbBytes), (double) dbBytes / raw);
        return res == null ? s : s + "; index+filter resident " + bytes(res);
    }

    static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = n;
        String unit = "B";
        for (String u : units) {
            if (v < 1024) {
                break;
            }
            v /= 1024;
            unit = u;
        }
        return String.format("%.2f %s", v, unit);
    }

    /** The root-level block indexes of the table's store files: what HBase keeps in memory. */
    private long residentIndexBytes() throws Exception {
        long root = 0;
        long bloom = 0;
        long allIndex = 0;
        for (HRegion r : util.getMiniHBaseCluster().getRegionServer(0).getRegions(TABLE)) {
            for (HStore s : r.getStores()) {
                root += s.getStorefilesRootLevelIndexSize();
                allIndex += s.getTotalStaticIndexSize();
                bloom += s.getTotalStaticBloomSize();
            }
        }
        sizeNotes.add("hbase: resident = root-level block indexes (" + bytes(root) + "); all index levels "
                + bytes(allIndex) + " and bloom chunks " + bytes(bloom) + " are loaded into the block cache on demand");
        return root;
    }

    /** Cold start: block cache cleared, page cache dropped (if permitted). */
    private void cold() throws Exception {
        admin.clearBlockCache(TABLE);
        if (dropCaches) {
            Peer.dropPageCache();
        }
    }

    private String cacheMode() {
        return dropCaches ? "cold: page cache dropped, block cache cleared"
                : "block cache cleared; page cache not dropped";
    }

    private void withSizes(EllLine l) {
        l.dbBytes = dbBytes;
        l.resident = resident;
        l.note = sizeNote(resident);
        l.notes.addAll(sizeNotes);
    }

    /** What an open-loop run measured (openloop.rs, Outcome). */
    private static final class Outcome {
        long scheduled;
        long completed;
        long found;
        long unserved;
        double seconds;
        final Latencies lat = new Latencies();
        final Latencies service = new Latencies();

        double achieved() {
            return seconds > 0 ? completed / seconds : 0.0;
        }
    }

    private Outcome openLoop(long rate, double secs, long stream) throws Exception {
        long total = Math.max(1, Math.round(rate * secs));
        long startNs = System.nanoTime() + 20_000_000L;
        double nsPer = 1e9 / rate;
        long graceNs = (long) (Math.max(secs, 1.0) * 1e9);
        long stopNs = startNs + (long) ((total - 1) * nsPer) + graceNs;
        AtomicLong next = new AtomicLong();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Object[]>> parts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            parts.add(pool.submit(() -> {
                Outcome o = new Outcome();
                long lastEnd = 0;
                try (Table table = conn.getTable(TABLE)) {
                    for (long j = next.getAndIncrement(); j < total; j = next.getAndIncrement()) {
                        long due = startNs + (long) (j * nsPer);
                        long now = System.nanoTime();
                        if (now > stopNs) {
                            o.unserved++;
                            o.lat.add(now - due);
                            continue;
                        }
                        while (now < due) {
                            LockSupport.parkNanos(due - now);
                            now = System.nanoTime();
                        }
                        long index = TextRecords.readIndex(seed, stream, records, j);
                        long t0 = System.nanoTime();
                        org.apache.hadoop.hbase.client.Result r =
                                table.get(new Get(TextRecords.key(index)).addColumn(FAMILY, QUALIFIER));
                        long t1 = System.nanoTime();
                        byte[] v = r.getValue(FAMILY, QUALIFIER);
                        if (v != null) {
                            if (v.length != valueSize) {
                                throw new IllegalStateException("hbase: record " + index + " has a value of "
                                        + v.length + " bytes, expected " + valueSize);
                            }
                            o.found++;
                        }
                        o.lat.add(t1 - due);
                        o.service.add(t1 - t0);
                        o.completed++;
                        lastEnd = Math.max(lastEnd, t1);
                    }
                }
                return new Object[] {o, lastEnd};
            }));
        }
        Outcome all = new Outcome();
        long lastEnd = 0;
        try {
            for (Future<Object[]> f : parts) {
                Object[] p = f.get();
                Outcome o = (Outcome) p[0];
                all.completed += o.completed;
                all.found += o.found;
                all.unserved += o.unserved;
                all.lat.addAll(o.lat);
                all.service.addAll(o.service);
                lastEnd = Math.max(lastEnd, (Long) p[1]);
            }
        } finally {
            pool.shutdownNow();
        }
        all.scheduled = total;
        all.seconds = Math.max(lastEnd > startNs ? (lastEnd - startNs) / 1e9 : 0.0, (double) total / rate);
        return all;
    }

    private String openLoopNote() {
        return "open loop, " + threads + " reader threads, each its own Table; latency from each request's due "
                + "time; requests not served max(step, 1 s) after the last was due count as unserved";
    }

    private EllLine fixedRate() throws Exception {
        EllLine l = line("fixed rps=" + rps);
        l.cacheMode = cacheMode();
        cold();
        Outcome o = openLoop(rps, seconds, TextRecords.STREAM_FIXED);
        resident = residentIndexBytes();
        l.openLoop(rps, o);
        l.notes.add(openLoopNote());
        withSizes(l);
        return l;
    }

    /** One step of the search (openloop.rs, Step). */
    private record Step(long target, double achieved, double p50, double p90, double p99, double max, long completed,
            long unserved) {
        String toJson() {
            return "{\"target_rps\":" + target + ",\"achieved_rps\":" + Result.num(achieved) + ",\"p50_us\":"
                    + Result.num(p50) + ",\"p90_us\":" + Result.num(p90) + ",\"p99_us\":" + Result.num(p99)
                    + ",\"max_us\":" + Result.num(max) + ",\"completed\":" + completed + ",\"unserved\":" + unserved
                    + "}";
        }
    }

    /**
     * openloop.rs, RateSearch: double from the start up to the cap or until a step is
     * overloaded, then bisect between the highest pass and the lowest fail above it (or down
     * from the start if nothing passed) to within 10%.
     */
    private static final class RateSearch {
        final long start;
        final long max;
        final int maxSteps;
        final TreeMap<Long, Boolean> tried = new TreeMap<>();
        boolean doubling = true;
        int steps;

        RateSearch(long start, long max, int maxSteps) {
            this.start = Math.max(1, start);
            this.max = Math.max(max, this.start);
            this.maxSteps = maxSteps;
        }

        Long next() {
            if (steps >= maxSteps) {
                return null;
            }
            if (doubling) {
                return tried.isEmpty() ? start : Math.min(tried.lastKey() * 2, max);
            }
            Long best = result();
            long lo;
            Long fail = null;
            if (best != null) {
                lo = best;
                for (var e : tried.tailMap(best, true).entrySet()) {
                    if (!e.getValue()) {
                        fail = e.getKey();
                        break;
                    }
                }
            } else {
                lo = 0;
                fail = tried.isEmpty() ? null : tried.firstKey();
            }
            if (fail == null || fail - lo <= Math.max(fail / 10, 1)) {
                return null;
            }
            return lo + (fail - lo) / 2;
        }

        void record(long rate, boolean pass, boolean overloaded) {
            steps++;
            tried.put(rate, pass);
            if (doubling && (overloaded || rate >= max)) {
                doubling = false;
            }
        }

        Long result() {
            for (var e : tried.descendingMap().entrySet()) {
                if (e.getValue()) {
                    return e.getKey();
                }
            }
            return null;
        }
    }

    private List<EllLine> maxRate() throws Exception {
        TreeMap<Long, Step> measured = new TreeMap<>();
        List<EllLine> lines = new ArrayList<>();
        String[] variants = {"max rate p50<" + fmt(latencyMs) + "ms", "max rate p99<" + fmt(p99LatencyMs) + "ms"};
        double[] limitsUs = {latencyMs * 1000, p99LatencyMs * 1000};
        for (int c = 0; c < 2; c++) {
            RateSearch search = new RateSearch(rps, maxRps, maxSteps);
            List<Step> steps = new ArrayList<>();
            for (Long rate = search.next(); rate != null; rate = search.next()) {
                Step s = measured.get(rate);
                if (s == null) {
                    long stream = TextRecords.streamRateStep(measured.size());
                    cold();
                    Outcome o = openLoop(rate, stepSeconds, stream);
                    s = new Step(rate, o.achieved(), o.lat.quantileUs(0.5), o.lat.quantileUs(0.9),
                            o.lat.quantileUs(0.99), o.lat.quantileUs(1.0), o.completed, o.unserved);
                    System.err.printf("[hbase] step %d/s: achieved %.0f/s, p50 %.0f us, p99 %.0f us, %d unserved%n",
                            rate, s.achieved, s.p50, s.p99, s.unserved);
                    measured.put(rate, s);
                }
                double got = c == 0 ? s.p50 : s.p99;
                boolean overloaded = s.unserved > 0 || s.achieved < 0.9 * rate;
                search.record(rate, s.unserved == 0 && s.completed > 0 && got < limitsUs[c], overloaded);
                steps.add(s);
            }
            EllLine l = line(variants[c]);
            l.cacheMode = cacheMode();
            Long best = search.result();
            if (best != null) {
                for (Step s : steps) {
                    if (s.target == best) {
                        l.ops = s.completed;
                        l.seconds = stepSeconds;
                        l.p50Us = s.p50;
                        l.p90Us = s.p90;
                        l.p99Us = s.p99;
                        l.maxUs = s.max;
                        l.unserved = s.unserved;
                        break;
                    }
                }
                l.opsPerSecOverride = (double) best;
                l.targetRps = (double) best;
            } else {
                l.opsPerSecOverride = 0.0;
                l.notes.add("no rate from " + rps + " up met the bound");
            }
            if (best != null && best == search.max) {
                l.notes.add("the search stopped at --max-rps " + maxRps + ": the engine may go faster");
            }
            l.notes.add("each step " + fmt(stepSeconds) + " s from a cold start; doubling from " + rps
                    + "/s until overloaded or at the cap, then bisection to within 10%");
            l.notes.add(openLoopNote());
            l.steps = steps;
            withSizes(l);
            lines.add(l);
        }
        return lines;
    }

    /** "100" for 100.0, "2.5" for 2.5: as Rust prints an f64. */
    static String fmt(double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
    }

    private EllLine range(int limit, long stream) throws Exception {
        EllLine l = line("range seek+" + limit);
        l.latencyUnit = "seek";
        l.cacheMode = cacheMode();
        cold();
        AtomicLong next = new AtomicLong();
        long start = System.nanoTime();
        long deadline = start + (long) (stepSeconds * 1e9);
        ExecutorService pool = Executors.newFixedThreadPool(scanThreads);
        List<Future<long[]>> parts = new ArrayList<>();
        List<Latencies> lats = new ArrayList<>();
        for (int t = 0; t < scanThreads; t++) {
            Latencies lat = new Latencies();
            lats.add(lat);
            parts.add(pool.submit(() -> {
                long seeks = 0;
                long found = 0;
                long rows = 0;
                try (Table table = conn.getTable(TABLE)) {
                    while (System.nanoTime() < deadline) {
                        long i = TextRecords.readIndex(seed, stream, records, next.getAndIncrement());
                        byte[] key = TextRecords.key(i);
                        Scan scan = new Scan().withStartRow(key).addColumn(FAMILY, QUALIFIER).setLimit(limit)
                                .setCaching(limit);
                        long t0 = System.nanoTime();
                        long got = 0;
                        try (ResultScanner rs = table.getScanner(scan)) {
                            for (org.apache.hadoop.hbase.client.Result r : rs) {
                                if (got == 0 && Arrays.equals(r.getRow(), key)) {
                                    found++;
                                }
                                got++;
                            }
                        }
                        lat.add(System.nanoTime() - t0);
                        long want = Math.min(limit, records - i);
                        if (got != want) {
                            throw new IllegalStateException("hbase: seek to record " + i + " read " + got
                                    + " rows, expected " + want);
                        }
                        seeks++;
                        rows += got;
                    }
                }
                return new long[] {seeks, found, rows};
            }));
        }
        long seeks = 0;
        long found = 0;
        long rows = 0;
        try {
            for (Future<long[]> f : parts) {
                long[] p = f.get();
                seeks += p[0];
                found += p[1];
                rows += p[2];
            }
        } finally {
            pool.shutdownNow();
        }
        Latencies all = new Latencies();
        for (Latencies x : lats) {
            all.addAll(x);
        }
        l.seconds = (System.nanoTime() - start) / 1e9;
        l.ops = seeks;
        l.found = found;
        l.rows = rows;
        l.finish(all);
        l.notes.add("closed loop, " + scanThreads + " threads: Scan from a random record with setLimit(" + limit
                + ") and setCaching(" + limit + "); latency per scan (open to close)");
        withSizes(l);
        return l;
    }

    /** One line in the shape of elliptics/line.rs's Line. */
    private final class EllLine {
        final String variant;
        long records;
        long valueBytes;
        long ops;
        double seconds;
        Double opsPerSecOverride;
        double p50Us;
        double p90Us;
        double p99Us;
        double maxUs;
        String latencyUnit = "op";
        Double targetRps;
        Long found;
        Long rows;
        Long scheduled;
        Long unserved;
        Double serviceP50Us;
        Double serviceP99Us;
        List<Step> steps;
        String cacheMode;
        Double settleSeconds;
        Long dbBytes;
        Long resident;
        String note = "";
        final List<String> notes = new ArrayList<>();

        EllLine(String variant) {
            this.variant = variant;
        }

        void finish(Latencies lat) {
            p50Us = lat.quantileUs(0.5);
            p90Us = lat.quantileUs(0.9);
            p99Us = lat.quantileUs(0.99);
            maxUs = lat.quantileUs(1.0);
        }

        void openLoop(long target, Outcome o) {
            ops = o.completed;
            seconds = o.seconds;
            finish(o.lat);
            opsPerSecOverride = o.achieved();
            targetRps = (double) target;
            found = o.found;
            scheduled = o.scheduled;
            unserved = o.unserved;
            serviceP50Us = o.service.quantileUs(0.5);
            serviceP99Us = o.service.quantileUs(0.99);
        }

        double opsPerSec() {
            if (opsPerSecOverride != null) {
                return opsPerSecOverride;
            }
            return seconds > 0 ? ops / seconds : 0.0;
        }

        private String opt(Object o) {
            if (o == null) {
                return "null";
            }
            if (o instanceof Double d) {
                return Result.num(d);
            }
            return o.toString();
        }

        String toJson() {
            StringBuilder s = new StringBuilder("{");
            s.append("\"engine\":\"").append(ENGINE).append('"');
            s.append(",\"workload\":\"elliptics\"");
            s.append(",\"variant\":").append(Result.quote(variant));
            s.append(",\"records\":").append(records);
            s.append(",\"key_bytes\":").append(TextRecords.KEY_BYTES);
            s.append(",\"value_bytes\":").append(valueBytes);
            s.append(",\"ops\":").append(ops);
            s.append(",\"seconds\":").append(Result.num(seconds));
            s.append(",\"ops_per_sec\":").append(Result.num(opsPerSec()));
            s.append(",\"p50_us\":").append(Result.num(p50Us));
            s.append(",\"p90_us\":").append(Result.num(p90Us));
            s.append(",\"p99_us\":").append(Result.num(p99Us));
            s.append(",\"max_us\":").append(Result.num(maxUs));
            s.append(",\"latency_unit\":").append(Result.quote(latencyUnit));
            s.append(",\"target_rps\":").append(opt(targetRps));
            s.append(",\"found\":").append(opt(found));
            s.append(",\"rows\":").append(opt(rows));
            s.append(",\"scheduled\":").append(opt(scheduled));
            s.append(",\"unserved\":").append(opt(unserved));
            s.append(",\"service_p50_us\":").append(opt(serviceP50Us));
            s.append(",\"service_p99_us\":").append(opt(serviceP99Us));
            s.append(",\"steps\":");
            if (steps == null) {
                s.append("null");
            } else {
                s.append('[');
                for (int i = 0; i < steps.size(); i++) {
                    s.append(i == 0 ? "" : ",").append(steps.get(i).toJson());
                }
                s.append(']');
            }
            s.append(",\"cache_mode\":").append(cacheMode == null ? "null" : Result.quote(cacheMode));
            s.append(",\"settle_seconds\":").append(opt(settleSeconds));
            s.append(",\"db_bytes\":").append(opt(dbBytes));
            s.append(",\"raw_bytes\":").append(HBaseElliptics.this.records * (TextRecords.KEY_BYTES + valueSize));
            s.append(",\"resident_index_filter_bytes\":").append(opt(resident));
            s.append(",\"peak_rss_bytes\":null");
            s.append(",\"note\":").append(Result.quote(note));
            s.append(",\"notes\":[");
            for (int i = 0; i < notes.size(); i++) {
                s.append(i == 0 ? "" : ",").append(Result.quote(notes.get(i)));
            }
            return s.append("]}").toString();
        }

        void emit(PrintStream out) {
            out.println(toJson());
            out.flush();
            System.err.printf("[hbase] %s: %d ops in %.2f s = %.0f/s, p50 %.0f us, p90 %.0f us, p99 %.0f us per %s%n",
                    variant, ops, seconds, opsPerSec(), p50Us, p90Us, p99Us, latencyUnit);
        }
    }
}
