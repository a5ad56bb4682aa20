package dev.cellar.peers;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.CommonFSUtils;

/**
 * {@code cellar-bench ycsb} on HBase 2.6.1 (crates/cellar-bench/src/ycsb/hbase.rs): the mini-cluster of
 * {@link HBaseBench} and a YCSB client that calls HBase as YCSB's hbase2 binding does with its defaults:
 * <pre>
 * HBaseYcsb --records N --operations N --workloads a,b,c,f,d,e --distributions zipfian,...
 *   --threads 1,4 --field-count 10 --field-length 100 --seed S --dir D [--keep-data]
 * </pre>
 * Per thread count: a fresh table {@code usertable} (one family {@code family}, one region, not pre-split:
 * one region server, as the Rust engines are one tree), the load phase, then each workload, as the Rust
 * side runs them (ycsb/mod.rs). A record is a row of {@code field-count} columns {@code family:field<i>}
 * of {@code field-length} random printable bytes (YCSB's layout); the same row keys as the Rust side.
 * Client thread {@code t} has its own {@code Table} from the one shared {@code Connection} and draws its
 * requests from the same seed as the Rust client {@code t} (YcsbWorkload), so with one thread both sides
 * ask for the same records in the same order.
 * <ul>
 *   <li>read: {@code Table.get} of the whole family (readallfields=true);</li>
 *   <li>update: {@code Table.put} of one column (writeallfields=false, YCSB's default);</li>
 *   <li>insert (and the load): {@code Table.put} of every column;</li>
 *   <li>scan: {@code Table.getScanner} from the key, {@code setLimit(n)} and {@code setCaching(n)}, n
 *       uniform in 1..=100;</li>
 *   <li>read-modify-write: {@code Table.get} then {@code Table.put} of one column, timed together.</li>
 * </ul>
 * Writes: one {@code Table.put} per operation (the binding's clientbuffering=false default: no
 * BufferedMutator), durability {@code USE_DEFAULT}, i.e. the table's {@code SYNC_WAL}: the WAL edit is
 * hflushed to the datanode before the put returns, not fsynced (hbase.wal.hsync is false). One JSON line
 * per phase on stdout ({@link SuiteLine}); progress on stderr.
 */
public final class HBaseYcsb {
    private static final String ENGINE = "hbase";
    private static final TableName TABLE = TableName.valueOf("usertable");
    private static final byte[] FAMILY = {'f', 'a', 'm', 'i', 'l', 'y'};
    private static final long SETTLE_TIMEOUT_NANOS = 3600L * 1_000_000_000L;
    /** Salt of the value generators ("values"), so values never share a stream with requests. */
    private static final long VALUE_SALT = 0x76616c756573L;

    private long records = -1;
    private long operations = -1;
    private final List<YcsbWorkload.Mix> workloads = new ArrayList<>();
    private final List<Integer> threads = new ArrayList<>();
    private int fieldCount = 10;
    private int fieldLength = 100;
    private long seed = 1;
    private String dir;
    private boolean keepData;
    private byte[][] qualifiers;

    private HBaseYcsb() {}

    public static void main(String[] argv) {
        System.exit(Peer.runMain(argv, HBaseYcsb::run));
    }

    private static List<String> list(String v) {
        List<String> out = new ArrayList<>();
        for (String s : v.split(",")) {
            if (!s.isBlank()) {
                out.add(s.trim());
            }
        }
        return out;
    }

    static HBaseYcsb parse(String[] argv) {
        HBaseYcsb a = new HBaseYcsb();
        List<String> names = List.of();
        List<String> dists = null;
        for (int i = 0; i < argv.length; i++) {
            String flag = argv[i];
            if (flag.equals("--keep-data")) {
                a.keepData = true;
                continue;
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String v = argv[++i];
            switch (flag) {
                case "--records" -> a.records = Long.parseLong(v);
                case "--operations" -> a.operations = Long.parseLong(v);
                case "--workloads" -> names = list(v);
                case "--distributions" -> dists = list(v);
                case "--threads" -> list(v).forEach(t -> a.threads.add(Integer.parseInt(t)));
                case "--field-count" -> a.fieldCount = Integer.parseInt(v);
                case "--field-length" -> a.fieldLength = Integer.parseInt(v);
                case "--seed" -> a.seed = Long.parseUnsignedLong(v);
                case "--dir" -> a.dir = v;
                default -> throw new IllegalArgumentException("unknown flag " + flag);
            }
        }
        for (int i = 0; i < names.size(); i++) {
            YcsbWorkload.Mix m = YcsbWorkload.core(names.get(i).charAt(0));
            if (dists != null && i < dists.size()) {
                m.distribution = YcsbWorkload.Distribution.parse(dists.get(i));
            }
            a.workloads.add(m);
        }
        if (a.dir == null || a.records < 2 || a.operations < 1 || a.threads.isEmpty()
                || a.threads.stream().anyMatch(t -> t < 1) || a.fieldCount < 1 || a.fieldLength < 1
                || (dists != null && dists.size() != names.size())) {
            throw new IllegalArgumentException("needs --dir, --records >= 2, --operations >= 1, --threads of at "
                    + "least 1, --field-count and --field-length >= 1, one distribution per workload");
        }
        a.qualifiers = new byte[a.fieldCount][];
        for (int f = 0; f < a.fieldCount; f++) {
            a.qualifiers[f] = ("field" + f).getBytes(StandardCharsets.US_ASCII);
        }
        return a;
    }

    private static void run(String[] argv) throws Exception {
        PrintStream out = Peer.takeStdout();
        HBaseYcsb a = parse(argv);
        HBaseTestingUtility util = HBaseBench.startCluster(a.dir);
        try {
            for (int t : a.threads) {
                new Phases(a, util, t).runAll(out);
            }
        } finally {
            System.err.println("[hbase] shutting the mini-cluster down");
            util.shutdownMiniCluster();
            if (!a.keepData) {
                util.cleanupTestDir();
            }
        }
    }

    static long share(long total, int threads, int t) {
        return total / threads + (t < total % threads ? 1 : 0);
    }

    /** Random printable field values (YCSB's RandomByteIterator): 32 + b % 95 per byte of SplitMix64. */
    private static final class Values {
        private final SplitMix64 g;
        private final int length;

        Values(long seed, int length) {
            this.g = new SplitMix64(seed ^ VALUE_SALT);
            this.length = length;
        }

        byte[] next() {
            byte[] v = new byte[length];
            long word = 0;
            for (int j = 0; j < length; j++) {
                if (j % 8 == 0) {
                    word = g.next();
                }
                v[j] = (byte) (32 + Long.remainderUnsigned((word >>> (8 * (j % 8))) & 0xFF, 95));
            }
            return v;
        }
    }

    /** What one client thread did. */
    private static final class ClientOut {
        final Map<String, Latencies> latency = new TreeMap<>();
        long ops;
        long reads;
        long found;

        void record(YcsbWorkload.Op op, long nanos) {
            latency.computeIfAbsent(op.label, k -> new Latencies()).add(nanos);
        }
    }

    /** The load and the workloads of one thread count on a fresh table. */
    private static final class Phases {
        private final HBaseYcsb a;
        private final HBaseTestingUtility util;
        private final Connection conn;
        private final Admin admin;
        private final int threads;
        /** Records that exist (the load's, plus inserts of earlier workloads). */
        private long records;

        Phases(HBaseYcsb a, HBaseTestingUtility util, int threads) throws IOException {
            this.a = a;
            this.util = util;
            this.conn = util.getConnection();
            this.admin = util.getAdmin();
            this.threads = threads;
        }

        void runAll(PrintStream out) throws Exception {
            if (admin.tableExists(TABLE)) {
                admin.disableTable(TABLE);
                admin.deleteTable(TABLE);
            }
            admin.createTable(TableDescriptorBuilder.newBuilder(TABLE)
                    .setColumnFamily(ColumnFamilyDescriptorBuilder.of(FAMILY))
                    .build());
            try {
                load().emit(out);
                for (int i = 0; i < a.workloads.size(); i++) {
                    workload(a.workloads.get(i), i).emit(out);
                }
            } finally {
                admin.disableTable(TABLE);
                admin.deleteTable(TABLE);
            }
        }

        private Put row(long n, Values values) {
            Put p = new Put(YcsbWorkload.key(n));
            for (byte[] q : a.qualifiers) {
                p.addColumn(FAMILY, q, values.next());
            }
            return p;
        }

        /** Runs {@code body(t)} on every thread at once; the span from the start to the last end. */
        private List<ClientOut> runThreads(Client body, double[] seconds) throws Exception {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<ClientOut>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                Callable<ClientOut> c = () -> {
                    go.await();
                    try (Table table = conn.getTable(TABLE)) {
                        return body.run(thread, table);
                    }
                };
                done.add(pool.submit(c));
            }
            resetPeakRss();
            long start = System.nanoTime();
            go.countDown();
            List<ClientOut> outs = new ArrayList<>();
            try {
                for (Future<ClientOut> f : done) {
                    outs.add(f.get());
                }
            } finally {
                pool.shutdownNow();
            }
            seconds[0] = (System.nanoTime() - start) / 1e9;
            return outs;
        }

        private interface Client {
            ClientOut run(int thread, Table table) throws Exception;
        }

        /** Inserts records 0..records, thread t a contiguous slice of the numbers (keys hashed). */
        private SuiteLine load() throws Exception {
            long total = a.records;
            double[] seconds = new double[1];
            List<ClientOut> outs = runThreads((t, table) -> {
                long first = 0;
                for (int u = 0; u < t; u++) {
                    first += share(total, threads, u);
                }
                long n = share(total, threads, t);
                Values values = new Values(YcsbWorkload.clientSeed(a.seed, 0, 100 + t), a.fieldLength);
                ClientOut o = new ClientOut();
                for (long i = first; i < first + n; i++) {
                    Put p = row(i, values);
                    long t0 = System.nanoTime();
                    table.put(p);
                    o.record(YcsbWorkload.Op.INSERT, System.nanoTime() - t0);
                    o.ops++;
                }
                return o;
            }, seconds);
            long s0 = System.nanoTime();
            admin.flush(TABLE);
            waitForCompactions();
            records = total;
            SuiteLine r = line("ycsb_load", seconds[0], outs);
            r.settleSeconds = (System.nanoTime() - s0) / 1e9;
            r.notes.add("settle: memstore flush (Admin.flush) and wait for compactions");
            return r;
        }

        private void waitForCompactions() throws Exception {
            long deadline = System.nanoTime() + SETTLE_TIMEOUT_NANOS;
            while (admin.getCompactionState(TABLE) != CompactionState.NONE) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("hbase: compactions still running after an hour");
                }
                Thread.sleep(100);
            }
        }

        private SuiteLine workload(YcsbWorkload.Mix mix, int ordinal) throws Exception {
            long ops = a.operations;
            YcsbWorkload.KeyChooser chooser = new YcsbWorkload.KeyChooser(mix.distribution, records,
                    YcsbWorkload.expectedInserts(mix, ops));
            YcsbGen.InsertCounter inserts = new YcsbGen.InsertCounter(records);
            double[] seconds = new double[1];
            List<ClientOut> outs = runThreads((t, table) -> client(table, mix, new YcsbWorkload.KeyChooser(chooser),
                    inserts, YcsbWorkload.clientSeed(a.seed, ordinal, t), share(ops, threads, t)), seconds);
            long before = records;
            records = inserts.complete();
            SuiteLine r = line("ycsb_" + mix.name, seconds[0], outs);
            r.records = before;
            if (records > before) {
                r.notes.add((records - before) + " records inserted");
            }
            return r;
        }

        private ClientOut client(Table table, YcsbWorkload.Mix mix, YcsbWorkload.KeyChooser chooser,
                YcsbGen.InsertCounter inserts, long seed, long n) throws IOException {
            YcsbGen.Rng rng = new YcsbGen.Rng(seed);
            Values values = new Values(seed, a.fieldLength);
            ClientOut o = new ClientOut();
            for (long i = 0; i < n; i++) {
                YcsbWorkload.Request q = YcsbWorkload.nextRequest(mix, chooser, inserts, a.fieldCount, rng);
                byte[] key = YcsbWorkload.key(q.record);
                switch (q.op) {
                    case READ -> {
                        Get g = new Get(key).addFamily(FAMILY);
                        long t0 = System.nanoTime();
                        org.apache.hadoop.hbase.client.Result got = table.get(g);
                        o.record(q.op, System.nanoTime() - t0);
                        countRead(o, key, got);
                    }
                    case UPDATE -> {
                        Put p = new Put(key).addColumn(FAMILY, a.qualifiers[q.field], values.next());
                        long t0 = System.nanoTime();
                        table.put(p);
                        o.record(q.op, System.nanoTime() - t0);
                    }
                    case INSERT -> {
                        Put p = row(q.record, values);
                        long t0 = System.nanoTime();
                        table.put(p);
                        o.record(q.op, System.nanoTime() - t0);
                        inserts.acknowledge(q.record);
                    }
                    case SCAN -> {
                        Scan s = new Scan().withStartRow(key).addFamily(FAMILY).setLimit(q.scanLength)
                                .setCaching(q.scanLength);
                        long t0 = System.nanoTime();
                        int visited = 0;
                        try (ResultScanner rs = table.getScanner(s)) {
                            for (org.apache.hadoop.hbase.client.Result row = rs.next(); row != null; row = rs.next()) {
                                if (++visited >= q.scanLength) {
                                    break;
                                }
                            }
                        }
                        o.record(q.op, System.nanoTime() - t0);
                        if (visited == 0) {
                            throw new IllegalStateException("hbase: a scan from an existing key found nothing");
                        }
                    }
                    case READ_MODIFY_WRITE -> {
                        Get g = new Get(key).addFamily(FAMILY);
                        long t0 = System.nanoTime();
                        org.apache.hadoop.hbase.client.Result got = table.get(g);
                        Put p = new Put(key).addColumn(FAMILY, a.qualifiers[q.field], values.next());
                        table.put(p);
                        o.record(q.op, System.nanoTime() - t0);
                        countRead(o, key, got);
                    }
                }
                o.ops++;
            }
            return o;
        }

        /** A read that found a record must find all of it; a missing record is counted. */
        private void countRead(ClientOut o, byte[] key, org.apache.hadoop.hbase.client.Result got) {
            o.reads++;
            if (got == null || got.isEmpty()) {
                return;
            }
            for (byte[] q : a.qualifiers) {
                byte[] v = got.getValue(FAMILY, q);
                if (v == null || v.length != a.fieldLength) {
                    throw new IllegalStateException("hbase: record " + new String(key, StandardCharsets.US_ASCII)
                            + " lacks " + new String(q, StandardCharsets.US_ASCII)
                            + " of " + a.fieldLength + " bytes");
                }
            }
            o.found++;
        }

        private SuiteLine line(String workload, double seconds, List<ClientOut> outs) throws IOException {
            SuiteLine r = new SuiteLine(ENGINE, workload, "t" + threads);
            long reads = 0;
            long found = 0;
            for (ClientOut o : outs) {
                r.ops += o.ops;
                reads += o.reads;
                found += o.found;
                o.latency.forEach((op, l) -> r.opLatency.computeIfAbsent(op, k -> new Latencies()).addAll(l));
            }
            r.threads = threads;
            r.records = records;
            r.seconds = seconds;
            r.keyBytes = 4 + YcsbWorkload.KEY_DIGITS;
            r.valueBytes = YcsbWorkload.valueBytes(a.fieldCount, a.fieldLength);
            r.sync = false;
            if (reads > 0) {
                r.reads = reads;
                r.found = found;
            }
            if (found < reads) {
                r.notes.add((reads - found) + " reads did not find their record");
            }
            r.dbBytes = dbBytes();
            r.peakRssBytes = peakRssBytes();
            return r;
        }

        /** The table's files and the live WALs on HDFS (replication 1); memstores are not counted. */
        private long dbBytes() throws IOException {
            FileSystem fs = util.getTestFileSystem();
            org.apache.hadoop.fs.Path root = CommonFSUtils.getRootDir(util.getConfiguration());
            long bytes = fs.getContentSummary(CommonFSUtils.getTableDir(root, TABLE)).getLength();
            org.apache.hadoop.fs.Path wals = new org.apache.hadoop.fs.Path(root, "WALs");
            if (fs.exists(wals)) {
                bytes += fs.getContentSummary(wals).getLength();
            }
            return bytes;
        }
    }

    /** Resets VmHWM (Linux ≥ 4.0) so the next reading is the peak of what follows. */
    private static void resetPeakRss() {
        try {
            Files.writeString(Path.of("/proc/self/clear_refs"), "5");
        } catch (IOException | UnsupportedOperationException e) {
            // Not Linux, or not allowed: the peak then covers the whole run.
        }
    }

    /** VmHWM of this JVM (client and mini-cluster together), or null. */
    private static Long peakRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmHWM:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return null;
        }
        return null;
    }
}
