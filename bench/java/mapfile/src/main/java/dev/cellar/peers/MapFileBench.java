package dev.cellar.peers;

import java.io.File;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.io.BytesWritable;
import org.apache.hadoop.io.MapFile;
import org.apache.hadoop.io.SequenceFile;

/**
 * The MapFile benchmark (cellar-bench mapfile) on a Hadoop MapFile (hadoop-common 3.4.1) on the local file system.
 *
 * <p>Insert: {@code MapFile.Writer} with BytesWritable keys and values, appended in key order
 * (MapFile requires it), no compression, index every 128 keys (the default); the timed run
 * ends when {@code close()} returns (data handed to the OS, not fsynced). Lookups:
 * {@code MapFile.Reader.get}, one Reader opened (and its index read) untimed before each
 * iteration. MapFile has no batched lookup: a bucket is its keys sorted and read one by one
 * through the same Reader, which can then move forward instead of seeking from the index.
 * MapFile has no per-write durability, so "insert durable" is reported as skipped.
 *
 * <p>Usage: see {@link BenchArgs}. Result lines on stdout, progress on stderr.
 */
public final class MapFileBench {
    private static final String ENGINE = "mapfile";

    private MapFileBench() {}

    public static void main(String[] argv) {
        System.exit(Peer.runMain(argv, MapFileBench::run));
    }

    private static void run(String[] argv) throws Exception {
        PrintStream out = Peer.takeStdout();
        BenchArgs a = BenchArgs.parse(argv);
        if (a.selfTest) {
            Vector.print(out);
            return;
        }
        Configuration conf = new Configuration();
        FileSystem fs = FileSystem.getLocal(conf);
        File root = new File(a.dir).getAbsoluteFile();
        Path path = new Path(new File(root, "mapfile").toURI());
        fs.delete(path, true);

        insert(a, conf, path, out);
        lookups(a, conf, path, out);
        Result.skipped(ENGINE, "insert durable", a.records,
                "MapFile has no per-write durability (MapFile.Writer exposes no sync)").emit(out);
        if (!a.keepData) {
            fs.delete(path, true);
        }
    }

    private static void insert(BenchArgs a, Configuration conf, Path path, PrintStream out) throws Exception {
        Result r = new Result(ENGINE, "insert buffered", a.records);
        Latencies lat = new Latencies();
        byte[] kb = new byte[a.keySize];
        byte[] vb = new byte[a.valueSize];
        BytesWritable k = new BytesWritable();
        BytesWritable v = new BytesWritable();
        long start = System.nanoTime();
        try (MapFile.Writer w = new MapFile.Writer(conf, path,
                MapFile.Writer.keyClass(BytesWritable.class),
                MapFile.Writer.valueClass(BytesWritable.class),
                MapFile.Writer.compression(SequenceFile.CompressionType.NONE))) {
            for (long i = 0; i < a.records; i++) {
                Dataset.key(i, kb);
                Dataset.value(i, vb);
                k.set(kb, 0, kb.length);
                v.set(vb, 0, vb.length);
                long t0 = System.nanoTime();
                w.append(k, v);
                lat.add(System.nanoTime() - t0);
            }
        }
        r.seconds = (System.nanoTime() - start) / 1e9;
        r.ops = a.records;
        r.notes.add("sorted appends; seconds include close() (no fsync)");
        r.latencies(lat).emit(out);
    }

    private static void lookups(BenchArgs a, Configuration conf, Path path, PrintStream out) throws Exception {
        MapFile.Reader[] reader = new MapFile.Reader[1];
        byte[] kb = new byte[a.keySize];
        BytesWritable k = new BytesWritable();
        BytesWritable v = new BytesWritable();
        List<String> problems = new ArrayList<>();
        Peer.Prepare prepare = it -> {
            if (reader[0] != null) {
                reader[0].close();
            }
            if (a.dropCaches) {
                Peer.dropPageCache();
            }
            reader[0] = new MapFile.Reader(path, conf);
            reader[0].midKey(); // reads the whole index, as an engine's open reads its own
        };
        Peer.Lookup get = indexes -> {
            long found = 0;
            for (long i : indexes) {
                Dataset.key(i, kb);
                k.set(kb, 0, kb.length);
                if (reader[0].get(k, v) != null) {
                    Peer.checkFound(ENGINE, problems, i, v.getLength(), a.valueSize);
                    found++;
                }
            }
            return found;
        };
        Peer.Lookup sortedGets = indexes -> {
            long[] sorted = indexes.clone();
            Arrays.sort(sorted);
            return get.lookup(sorted);
        };
        try {
            Peer.lookups(ENGINE, a, out, prepare, get, sortedGets,
                    "no batched lookup in MapFile: the bucket's keys sorted, then Reader.get one by one");
        } finally {
            if (reader[0] != null) {
                reader[0].close();
            }
        }
        if (!problems.isEmpty()) {
            throw new IllegalStateException(String.join("; ", problems));
        }
    }
}
