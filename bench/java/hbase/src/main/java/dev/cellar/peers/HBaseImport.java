package dev.cellar.peers;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.CommonFSUtils;

/**
 * "Performance of HBase importing" (cellar-bench import) on the HBase mini-cluster of {@link HBaseBench}:
 * {@code HBaseBench --mode import --input FILE --records N --sync-records M --writers 1,2,4,6
 * --buffer-mb 12 --dir D [--verify-rows 1000] [--keep-data] [--buffered-only]}; or, on the
 * cluster of a running {@link HBaseThriftGateway}, the same flags without {@code --dir}
 * ({@link #runOn}). {@code --buffered-only} skips the durable variants (then
 * {@code --sync-records} is not needed).
 *
 * <p>The input is the file cellar-bench import writes (crates/cellar-bench/src/import.rs):
 * records of 6 little-endian int64, 48 bytes each; row key {@code "a:b:c"}, value the six as
 * zigzag LEB128 varints, in one column {@code f:v}. Each variant writes into a fresh table
 * (one family, one region, not pre-split), dropped afterwards; writer {@code w} of {@code W}
 * takes the same slice of the file as on the Rust side (the first ones take the remainder).
 * <ul>
 *   <li>{@code durable/wN}: N threads, each its own {@code Table}, one {@code Table.put} per
 *       row with {@code Durability.SYNC_WAL} (autoflush on), over the first M rows.</li>
 *   <li>{@code buffered/wN}: N threads, each its own {@code BufferedMutator} with
 *       writeBufferSize = buffer-mb MiB (autoflush off), over all N rows; the final
 *       {@code flush()} and {@code close()} are inside the timed span.</li>
 * </ul>
 * One JSON line per variant on stdout, in the shape of cellar-bench's {@code SuiteRecord};
 * latencies per {@code Table.put} (durable) or per {@code BufferedMutator.mutate} call
 * (buffered: most only append to the client buffer, the ones that fill it send it). Then,
 * untimed: the memstore is flushed (settle_seconds), the table's HFiles measured (db_bytes)
 * and up to verify-rows rows read back.
 */
final class HBaseImport {
    private static final String ENGINE = "hbase";
    private static final int RECORD_BYTES = 48;
    private static final long MIB = 1L << 20;
    private static final byte[] FAMILY = {'f'};
    private static final byte[] QUALIFIER = {'v'};

    private String input;
    private long records = -1;
    private long syncRecords = -1;
    private List<Integer> writers = List.of(1, 2, 4, 6);
    private long bufferMb = 12;
    private String dir;
    private long verifyRows = 1000;
    private boolean keepData;
    private boolean bufferedOnly;

    private HBaseImport() {}

    static HBaseImport parse(String[] argv) {
        HBaseImport a = new HBaseImport();
        for (int i = 0; i < argv.length; i++) {
            String flag = argv[i];
            if (flag.equals("--keep-data")) {
                a.keepData = true;
                continue;
            }
            if (flag.equals("--buffered-only")) {
                a.bufferedOnly = true;
                continue;
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException(flag + " needs a value");
            }
            String v = argv[++i];
            switch (flag) {
                case "--input" -> a.input = v;
                case "--records" -> a.records = Long.parseLong(v);
                case "--sync-records" -> a.syncRecords = Long.parseLong(v);
                case "--writers" -> {
                    List<Integer> w = new ArrayList<>();
                    for (String s : v.split(",")) {
                        w.add(Integer.parseInt(s.trim()));
                    }
                    a.writers = w;
                }
                case "--buffer-mb" -> a.bufferMb = Long.parseLong(v);
                case "--dir" -> a.dir = v;
                case "--verify-rows" -> a.verifyRows = Long.parseLong(v);
                default -> throw new IllegalArgumentException("unknown flag " + flag);
            }
        }
        if (a.bufferedOnly && a.syncRecords < 1) {
            a.syncRecords = 1;
        }
        if (a.input == null || a.records < 1 || a.syncRecords < 1 || a.bufferMb < 1
                || a.writers.isEmpty() || a.writers.stream().anyMatch(w -> w < 1)) {
            throw new IllegalArgumentException("--mode import needs --input, --records >= 1, "
                    + "--sync-records >= 1 (unless --buffered-only), --buffer-mb >= 1 and --writers of at least 1");
        }
        a.syncRecords = Math.min(a.syncRecords, a.records);
        return a;
    }

    /** Starts a mini-cluster under {@code --dir}, runs the variants on it, shuts it down. */
    static void run(String[] argv, PrintStream out) throws Exception {
        HBaseImport a = parse(argv);
        if (a.dir == null) {
            throw new IllegalArgumentException("--mode import needs --dir");
        }
        a.checkInput();
        HBaseTestingUtility util = HBaseBench.startCluster(a.dir);
        try {
            a.variants(util, out);
        } finally {
            System.err.println("[hbase] shutting the mini-cluster down");
            util.shutdownMiniCluster();
            if (!a.keepData) {
                util.cleanupTestDir();
            }
        }
    }

    /** Runs the variants on a cluster that is already up (and stays up). */
    static void runOn(HBaseTestingUtility util, String[] argv, PrintStream out) throws Exception {
        HBaseImport a = parse(argv);
        a.checkInput();
        a.variants(util, out);
    }

    private void checkInput() {
        long have = new java.io.File(input).length();
        if (have < records * RECORD_BYTES) {
            throw new IllegalArgumentException(input + " holds " + have / RECORD_BYTES + " rows, not " + records);
        }
    }

    private void variants(HBaseTestingUtility util, PrintStream out) throws Exception {
        Connection conn = util.getConnection();
        Admin admin = util.getAdmin();
        boolean[] modes = bufferedOnly ? new boolean[] {false} : new boolean[] {true, false};
        for (boolean durable : modes) {
            for (int w : writers) {
                variant(util, conn, admin, durable, w).emit(out);
            }
        }
    }

    /** Rows {@code first .. first + n} of the input file, in order. */
    private static final class Rows implements AutoCloseable {
        private final DataInputStream in;
        private final byte[] buf = new byte[RECORD_BYTES];
        private final ByteBuffer le = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN);
        private long left;

        Rows(String path, long first, long n) throws IOException {
            FileInputStream f = new FileInputStream(path);
            f.getChannel().position(first * RECORD_BYTES);
            in = new DataInputStream(new BufferedInputStream(f, 1 << 20));
            left = n;
        }

        /** The next row's six fields, or null at the end of the slice. */
        long[] next() throws IOException {
            if (left == 0) {
                return null;
            }
            in.readFully(buf);
            left--;
            long[] v = new long[6];
            for (int i = 0; i < 6; i++) {
                v[i] = le.getLong(i * 8);
            }
            return v;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }

    static byte[] key(long[] r) {
        return (r[0] + ":" + r[1] + ":" + r[2]).getBytes(StandardCharsets.US_ASCII);
    }

    /** The six fields as zigzag LEB128 varints (import.rs, Row::value). */
    static byte[] value(long[] r) {
        ByteArrayOutputStream b = new ByteArrayOutputStream(24);
        for (long v : r) {
            long z = (v << 1) ^ (v >> 63);
            while (Long.compareUnsigned(z, 0x80) >= 0) {
                b.write((int) (z & 0x7f) | 0x80);
                z >>>= 7;
            }
            b.write((int) z);
        }
        return b.toByteArray();
    }

    static long share(long total, int threads, int t) {
        return total / threads + (t < total % threads ? 1 : 0);
    }

    private Put put(long[] row, boolean durable) {
        Put p = new Put(key(row)).addColumn(FAMILY, QUALIFIER, value(row));
        if (durable) {
            p.setDurability(Durability.SYNC_WAL);
        }
        return p;
    }

    private Latencies writer(Connection conn, TableName t, boolean durable, long first, long n) throws Exception {
        Latencies lat = new Latencies();
        try (Rows rows = new Rows(input, first, n)) {
            if (durable) {
                try (Table table = conn.getTable(t)) {
                    for (long[] r = rows.next(); r != null; r = rows.next()) {
                        Put p = put(r, true);
                        long t0 = System.nanoTime();
                        table.put(p);
                        lat.add(System.nanoTime() - t0);
                    }
                }
                return lat;
            }
            BufferedMutatorParams params = new BufferedMutatorParams(t).writeBufferSize(bufferMb * MIB);
            try (BufferedMutator m = conn.getBufferedMutator(params)) {
                for (long[] r = rows.next(); r != null; r = rows.next()) {
                    Put p = put(r, false);
                    long t0 = System.nanoTime();
                    m.mutate(p);
                    lat.add(System.nanoTime() - t0);
                }
                m.flush();
            }
        }
        return lat;
    }

    private ImportRecord variant(HBaseTestingUtility util, Connection conn, Admin admin, boolean durable, int writers)
            throws Exception {
        String mode = durable ? "durable" : "buffered";
        TableName t = TableName.valueOf("import_" + mode + "_w" + writers);
        admin.createTable(TableDescriptorBuilder.newBuilder(t)
                .setColumnFamily(ColumnFamilyDescriptorBuilder.of(FAMILY))
                .build());
        long rows = durable ? syncRecords : records;
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Latencies>> done = new ArrayList<>();
        long first = 0;
        for (int w = 0; w < writers; w++) {
            long from = first;
            long n = share(rows, writers, w);
            first += n;
            done.add(pool.submit(() -> {
                go.await();
                return writer(conn, t, durable, from, n);
            }));
        }
        long start = System.nanoTime();
        go.countDown();
        Latencies all = new Latencies();
        try {
            for (Future<Latencies> f : done) {
                all.addAll(f.get());
            }
        } finally {
            pool.shutdownNow();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        long s0 = System.nanoTime();
        admin.flush(t);
        double settle = (System.nanoTime() - s0) / 1e9;
        FileSystem fs = util.getTestFileSystem();
        long dbBytes = fs.getContentSummary(CommonFSUtils.getTableDir(CommonFSUtils.getRootDir(util.getConfiguration()), t))
                .getLength();
        long[] sizes = verify(conn, t, rows);
        admin.disableTable(t);
        admin.deleteTable(t);

        ImportRecord r = new ImportRecord();
        r.variant = mode + "/w" + writers;
        r.threads = writers;
        r.rows = rows;
        r.seconds = seconds;
        r.op = durable ? "put_sync" : "mutate";
        r.latencyUnit = durable ? "write call" : "mutate call";
        r.calls = all.count();
        r.p50Us = all.quantileUs(0.50);
        r.p99Us = all.quantileUs(0.99);
        r.keyBytes = sizes[0];
        r.valueBytes = sizes[1];
        r.sync = durable;
        r.dbBytes = dbBytes;
        r.settleSeconds = settle;
        r.notes.add(all.count() + " write calls");
        if (durable) {
            r.notes.add("one Table.put per row, Durability.SYNC_WAL (autoflush on; WAL hflushed to the datanode)");
        } else {
            r.notes.add("BufferedMutator per writer, writeBufferSize " + bufferMb
                    + " MiB (autoflush off); latency per mutate call; flush+close timed");
        }
        r.notes.add("HBase 2.6 mini-cluster in one JVM; one region, not pre-split; db_bytes = table HFiles");
        return r;
    }

    /** Reads back up to verify-rows rows spread over the {@code rows} written; mean key and value size. */
    private long[] verify(Connection conn, TableName t, long rows) throws Exception {
        long step = Math.max(1, rows / verifyRows);
        long checked = 0;
        long keySum = 0;
        long valueSum = 0;
        try (Table table = conn.getTable(t)) {
            for (long i = 0; i < rows; i += step) {
                long[] row;
                try (Rows r = new Rows(input, i, 1)) {
                    row = r.next();
                }
                byte[] k = key(row);
                byte[] v = value(row);
                byte[] got = table.get(new Get(k).addColumn(FAMILY, QUALIFIER)).getValue(FAMILY, QUALIFIER);
                if (!Arrays.equals(got, v)) {
                    throw new IllegalStateException("hbase: row " + i + " ("
                            + new String(k, StandardCharsets.US_ASCII) + ") was not read back with its value");
                }
                checked++;
                keySum += k.length;
                valueSum += v.length;
            }
        }
        long c = Math.max(1, checked);
        return new long[] {(keySum + checked / 2) / c, (valueSum + checked / 2) / c};
    }

    /** One line of cellar-bench's SuiteRecord (crates/cellar-bench/src/suite.rs). */
    private static final class ImportRecord {
        String variant;
        int threads;
        long rows;
        double seconds;
        String op;
        String latencyUnit;
        long calls;
        double p50Us;
        double p99Us;
        long keyBytes;
        long valueBytes;
        boolean sync;
        long dbBytes;
        double settleSeconds;
        final List<String> notes = new ArrayList<>();

        double opsPerSec() {
            return seconds > 0 ? rows / seconds : 0.0;
        }

        String toJson() {
            StringBuilder s = new StringBuilder("{");
            s.append("\"engine\":\"").append(ENGINE).append('"');
            s.append(",\"workload\":\"import\"");
            s.append(",\"variant\":").append(Result.quote(variant));
            s.append(",\"threads\":").append(threads);
            s.append(",\"records\":").append(rows);
            s.append(",\"ops\":").append(rows);
            s.append(",\"seconds\":").append(Result.num(seconds));
            s.append(",\"ops_per_sec\":").append(Result.num(opsPerSec()));
            s.append(",\"p50_us\":").append(Result.num(p50Us));
            s.append(",\"p99_us\":").append(Result.num(p99Us));
            s.append(",\"latency_unit\":").append(Result.quote(latencyUnit));
            s.append(",\"op_latency\":{").append(Result.quote(op)).append(":{\"ops\":").append(calls);
            s.append(",\"p50_us\":").append(Result.num(p50Us));
            s.append(",\"p99_us\":").append(Result.num(p99Us)).append("}}");
            s.append(",\"rows_per_ms\":").append(Result.num(opsPerSec() / 1000.0));
            s.append(",\"key_bytes\":").append(keyBytes);
            s.append(",\"value_bytes\":").append(valueBytes);
            s.append(",\"sync\":").append(sync);
            s.append(",\"found\":null,\"reads\":null");
            s.append(",\"db_bytes\":").append(dbBytes);
            s.append(",\"peak_rss_bytes\":null");
            s.append(",\"settle_seconds\":").append(Result.num(settleSeconds));
            s.append(",\"notes\":[");
            for (int i = 0; i < notes.size(); i++) {
                s.append(i == 0 ? "" : ",").append(Result.quote(notes.get(i)));
            }
            return s.append("]}").toString();
        }

        void emit(PrintStream out) {
            out.println(toJson());
            out.flush();
            System.err.printf("[hbase] import %s: %d rows in %.3f s = %.0f rows/s, %.1f rows/ms, p50 %.2f us, "
                            + "p99 %.2f us per %s%n",
                    variant, rows, seconds, opsPerSec(), opsPerSec() / 1000.0, p50Us, p99Us, latencyUnit);
        }
    }
}
