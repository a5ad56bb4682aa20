package dev.cellar.peers;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** What both peers' main() share: the real stdout, the page-cache drop, the lookup loop. */
public final class Peer {
    private Peer() {}

    /**
     * Keeps the real stdout for result lines and sends everything else printed to
     * System.out (libraries, log configuration mishaps) to stderr.
     */
    public static PrintStream takeStdout() {
        PrintStream results = System.out;
        System.setOut(System.err);
        return results;
    }

    /** A peer's body, run by {@link #runMain}. */
    public interface Body {
        void run(String[] argv) throws Exception;
    }

    /**
     * Runs {@code body} and returns the exit status (1 on any failure, after printing it), so
     * that main() can System.exit: a library's stuck non-daemon thread must not keep the JVM,
     * and cellar-bench waiting, after the work is done.
     */
    public static int runMain(String[] argv, Body body) {
        try {
            body.run(argv);
            return 0;
        } catch (IllegalArgumentException e) {
            System.err.println("usage error: " + e.getMessage());
            return 2;
        } catch (Throwable t) {
            t.printStackTrace();
            return 1;
        }
    }

    /** sync(1), then drops the page cache, dentries and inodes (root only). */
    public static void dropPageCache() throws IOException, InterruptedException {
        Process p = new ProcessBuilder("sync").inheritIO().start();
        if (p.waitFor() != 0) {
            throw new IOException("sync exited with " + p.exitValue());
        }
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3");
    }

    public static String cacheMode(BenchArgs a) {
        return a.dropCaches ? "cold: page cache dropped, caches emptied" : "caches emptied; page cache not dropped";
    }

    /** A lookup of keys, one call: single (one key) or batched. Returns how many were found. */
    public interface Lookup {
        long lookup(long[] indexes) throws Exception;
    }

    /** Runs before each timed iteration (untimed): drop and reopen caches. */
    public interface Prepare {
        void prepare(int iteration) throws Exception;
    }

    /**
     * The lookup variants: for each bucket size, {@code a.iterations} iterations of
     * {@code a.lookupsPerIteration()} keys (iteration k draws the same keys for every bucket
     * size and every engine), issued {@code bucket} per call. Bucket 1 calls {@code single},
     * larger ones {@code batch}.
     */
    public static void lookups(String engine, BenchArgs a, PrintStream out, Prepare prepare,
            Lookup single, Lookup batch, String batchNote) throws Exception {
        long per = a.lookupsPerIteration();
        for (int bucket : a.buckets) {
            String variant = bucket == 1 ? "lookup single" : "lookup bucket=" + bucket;
            Result r = new Result(engine, variant, a.records);
            r.latencyUnit = bucket == 1 ? "op" : "batch";
            r.cacheMode = cacheMode(a);
            r.iterationsOpsPerSec = new java.util.ArrayList<>();
            Latencies all = new Latencies();
            long found = 0;
            for (int it = 0; it < a.iterations; it++) {
                prepare.prepare(it);
                long[] sample = Dataset.sample(a.seed, a.records, per, it);
                Latencies lat = new Latencies();
                long start = System.nanoTime();
                for (int i = 0; i < sample.length; i += bucket) {
                    long[] keys = java.util.Arrays.copyOfRange(sample, i, Math.min(sample.length, i + bucket));
                    long t0 = System.nanoTime();
                    found += bucket == 1 ? single.lookup(keys) : batch.lookup(keys);
                    lat.add(System.nanoTime() - t0);
                }
                double secs = (System.nanoTime() - start) / 1e9;
                r.seconds += secs;
                r.ops += sample.length;
                r.iterationsOpsPerSec.add(secs > 0 ? sample.length / secs : 0.0);
                all.addAll(lat);
            }
            r.found = found;
            if (bucket > 1 && batchNote != null) {
                r.notes.add(batchNote);
            }
            r.latencies(all).emit(out);
        }
    }

    public static void checkFound(String engine, List<String> problems, long index, int got, int want) {
        if (got != want && problems.size() < 5) {
            problems.add(engine + ": record " + index + " has a value of " + got + " bytes, expected " + want);
        }
    }
}
