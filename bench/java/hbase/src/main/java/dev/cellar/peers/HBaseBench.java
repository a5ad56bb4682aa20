package dev.cellar.peers;

import java.io.File;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
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

/**
 * The MapFile benchmark (cellar-bench mapfile) on HBase 2.6.1: an in-process mini-cluster ({@code HBaseTestingUtility
 * .startMiniCluster(1)}: ZooKeeper, an HDFS namenode and one datanode, a master and one
 * region server, all on 127.0.0.1, web UIs off, data under {@code --dir}).
 *
 * <p>Table {@code mapfile_bench}, one family {@code f}, one qualifier {@code v}; row = key.
 * Insert buffered: a {@code BufferedMutator} (autoflush off, 2 MiB client buffer), the timed
 * run ends after its {@code flush()}; the memstore is then flushed to HFiles (untimed,
 * reported as settle). Insert durable: table {@code mapfile_bench_durable}, one
 * {@code Table.put} at a time (autoflush on), each {@code Durability.SYNC_WAL}: the WAL edit
 * is hflushed to the datanode before put returns (HBase 2 fsyncs it only with
 * hbase.wal.hsync=true). Lookups: single {@code Table.get(Get)} or {@code Table.get(List)}
 * per bucket; before each iteration the region server's block cache is cleared and, with
 * {@code --drop-caches}, the page cache dropped.
 */
public final class HBaseBench {
    private static final String ENGINE = "hbase";
    private static final byte[] FAMILY = {'f'};
    private static final byte[] QUALIFIER = {'v'};

    private HBaseBench() {}

    public static void main(String[] argv) {
        System.exit(Peer.runMain(argv, HBaseBench::run));
    }

    private static void run(String[] argv) throws Exception {
        PrintStream out = Peer.takeStdout();
        if (argv.length >= 2 && argv[0].equals("--mode")) {
            if (!argv[1].equals("import")) {
                throw new IllegalArgumentException("unknown --mode " + argv[1] + " (only: import)");
            }
            HBaseImport.run(java.util.Arrays.copyOfRange(argv, 2, argv.length), out);
            return;
        }
        BenchArgs a = BenchArgs.parse(argv);
        if (a.selfTest) {
            Vector.print(out);
            return;
        }
        HBaseTestingUtility util = startCluster(a.dir);
        try {
            Connection conn = util.getConnection();
            Admin admin = util.getAdmin();
            TableName main = TableName.valueOf("mapfile_bench");
            createTable(admin, main, Durability.USE_DEFAULT);
            insertBuffered(a, conn, admin, main, out);
            lookups(a, conn, admin, main, out);
            if (a.durableInserts > 0) {
                TableName durable = TableName.valueOf("mapfile_bench_durable");
                createTable(admin, durable, Durability.SYNC_WAL);
                insertDurable(a, conn, durable, out);
            }
        } finally {
            System.err.println("[hbase] shutting the mini-cluster down");
            util.shutdownMiniCluster();
            if (!a.keepData) {
                util.cleanupTestDir();
            }
        }
    }

    /** Starts the mini-cluster with its data under {@code <dir>/hbase}. */
    static HBaseTestingUtility startCluster(String dir) throws Exception {
        File root = new File(dir, "hbase").getAbsoluteFile();
        System.setProperty("test.build.data.basedirectory", root.getPath());
        System.setProperty("hadoop.tmp.dir", new File(root, "tmp").getPath());
        Configuration conf = HBaseConfiguration.create();
        conf.setInt("hbase.master.info.port", -1);
        conf.setInt("hbase.regionserver.info.port", -1);
        conf.set("hadoop.tmp.dir", new File(root, "tmp").getPath());
        HBaseTestingUtility util = new HBaseTestingUtility(conf);
        long t0 = System.nanoTime();
        System.err.println("[hbase] starting the mini-cluster under " + root);
        util.startMiniCluster(1);
        System.err.printf("[hbase] mini-cluster up in %.1f s%n", (System.nanoTime() - t0) / 1e9);
        return util;
    }

    private static void createTable(Admin admin, TableName name, Durability durability) throws Exception {
        admin.createTable(TableDescriptorBuilder.newBuilder(name)
                .setColumnFamily(ColumnFamilyDescriptorBuilder.of(FAMILY))
                .setDurability(durability)
                .build());
    }

    private static Put put(long i, BenchArgs a) {
        return new Put(Dataset.key(i, a.keySize)).addColumn(FAMILY, QUALIFIER, Dataset.value(i, a.valueSize));
    }

    private static void insertBuffered(BenchArgs a, Connection conn, Admin admin, TableName t, PrintStream out)
            throws Exception {
        Result r = new Result(ENGINE, "insert buffered", a.records);
        Latencies lat = new Latencies();
        long start = System.nanoTime();
        try (BufferedMutator m = conn.getBufferedMutator(new BufferedMutatorParams(t))) {
            for (long i = 0; i < a.records; i++) {
                Put p = put(i, a);
                long t0 = System.nanoTime();
                m.mutate(p);
                lat.add(System.nanoTime() - t0);
            }
            m.flush();
        }
        r.seconds = (System.nanoTime() - start) / 1e9;
        r.ops = a.records;
        long s0 = System.nanoTime();
        admin.flush(t);
        r.settleSeconds = (System.nanoTime() - s0) / 1e9;
        r.notes.add("BufferedMutator (autoflush off), 2 MiB client buffer; key order; settle = memstore flush");
        r.latencies(lat).emit(out);
    }

    private static void insertDurable(BenchArgs a, Connection conn, TableName t, PrintStream out) throws Exception {
        Result r = new Result(ENGINE, "insert durable", a.records);
        Latencies lat = new Latencies();
        try (Table table = conn.getTable(t)) {
            long start = System.nanoTime();
            for (long i = 0; i < a.durableInserts; i++) {
                Put p = put(i, a);
                p.setDurability(Durability.SYNC_WAL);
                long t0 = System.nanoTime();
                table.put(p);
                lat.add(System.nanoTime() - t0);
            }
            r.seconds = (System.nanoTime() - start) / 1e9;
        }
        r.ops = a.durableInserts;
        r.notes.add("Table.put one at a time (autoflush on), Durability.SYNC_WAL (hflush to the datanode)");
        r.latencies(lat).emit(out);
    }

    private static void lookups(BenchArgs a, Connection conn, Admin admin, TableName t, PrintStream out)
            throws Exception {
        List<String> problems = new ArrayList<>();
        try (Table table = conn.getTable(t)) {
            Peer.Prepare prepare = it -> {
                admin.clearBlockCache(t);
                if (a.dropCaches) {
                    Peer.dropPageCache();
                }
            };
            Peer.Lookup single = indexes -> {
                long found = 0;
                for (long i : indexes) {
                    org.apache.hadoop.hbase.client.Result res = table.get(get(i, a));
                    found += check(res, i, a, problems);
                }
                return found;
            };
            Peer.Lookup batch = indexes -> {
                List<Get> gets = new ArrayList<>(indexes.length);
                for (long i : indexes) {
                    gets.add(get(i, a));
                }
                org.apache.hadoop.hbase.client.Result[] res = table.get(gets);
                long found = 0;
                for (int j = 0; j < res.length; j++) {
                    found += check(res[j], indexes[j], a, problems);
                }
                return found;
            };
            Peer.lookups(ENGINE, a, out, prepare, single, batch, "Table.get(List<Get>) per bucket");
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(String.join("; ", problems));
        }
    }

    private static Get get(long i, BenchArgs a) {
        return new Get(Dataset.key(i, a.keySize)).addColumn(FAMILY, QUALIFIER);
    }

    private static long check(org.apache.hadoop.hbase.client.Result res, long i, BenchArgs a, List<String> problems) {
        byte[] v = res == null ? null : res.getValue(FAMILY, QUALIFIER);
        if (v == null) {
            return 0;
        }
        Peer.checkFound(ENGINE, problems, i, v.length, a.valueSize);
        return 1;
    }
}
