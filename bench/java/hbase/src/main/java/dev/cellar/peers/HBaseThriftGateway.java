package dev.cellar.peers;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.thrift.ThriftServer;

/**
 * HBase's own Thrift1 gateway (the server happybase talks to) beside the mini-cluster of
 * {@link HBaseBench}, in one JVM: {@code HBaseThriftGateway --dir D [--port P] [--keep-data]}.
 *
 * <p>The gateway is {@code org.apache.hadoop.hbase.thrift.ThriftServer} from hbase-thrift
 * 2.6.1 with the cluster's configuration: the {@code threadpool} server type (one thread per
 * connection), binary protocol, buffered transport (happybase's defaults), bound to
 * 127.0.0.1 only, its info web server off. {@code --port 0} (the default) takes a free
 * ephemeral port.
 *
 * <p>Protocol with the parent (cellar-bench server), all on stdin/stdout, progress and logs
 * on stderr:
 * <ul>
 *   <li>once the gateway accepts connections, one line {@code listening thrift 127.0.0.1:PORT}
 *       (the format of {@code cellar serve});</li>
 *   <li>each stdin line {@code import FLAGS...} runs {@link HBaseImport} with those flags on
 *       this cluster (HBase's native BufferedMutator; its JSON result lines on stdout), then
 *       prints {@code done import} (or {@code failed import: WHY});</li>
 *   <li>when stdin closes, the gateway and the cluster stop, the data is deleted (unless
 *       {@code --keep-data}) and the JVM exits 0.</li>
 * </ul>
 */
public final class HBaseThriftGateway {
    private static final String HOST = "127.0.0.1";
    private static final long START_TIMEOUT_MS = 120_000;

    private HBaseThriftGateway() {}

    public static void main(String[] argv) {
        System.exit(Peer.runMain(argv, HBaseThriftGateway::run));
    }

    private static void run(String[] argv) throws Exception {
        PrintStream out = Peer.takeStdout();
        String dir = null;
        int port = 0;
        boolean keepData = false;
        for (int i = 0; i < argv.length; i++) {
            switch (argv[i]) {
                case "--keep-data" -> keepData = true;
                case "--dir" -> dir = value(argv, ++i, "--dir");
                case "--port" -> port = Integer.parseInt(value(argv, ++i, "--port"));
                default -> throw new IllegalArgumentException("unknown flag " + argv[i]);
            }
        }
        if (dir == null || port < 0 || port > 65535) {
            throw new IllegalArgumentException("HBaseThriftGateway needs --dir DIR [--port 0..65535] [--keep-data]");
        }
        HBaseTestingUtility util = HBaseBench.startCluster(dir);
        ThriftServer gateway = null;
        Thread serving = null;
        try {
            int listen = port == 0 ? freePort() : port;
            gateway = new ThriftServer(gatewayConf(util.getConfiguration(), listen));
            serving = startServing(gateway, listen);
            waitUntilAccepting(listen, serving);
            out.println("listening thrift " + HOST + ":" + listen);
            out.flush();
            System.err.println("[hbase-thrift] gateway on " + HOST + ":" + listen + "; stops when stdin closes");
            commands(util, out);
        } finally {
            System.err.println("[hbase-thrift] stopping the gateway and the mini-cluster");
            if (gateway != null) {
                gateway.stop();
            }
            if (serving != null) {
                serving.join(10_000);
            }
            util.shutdownMiniCluster();
            if (!keepData) {
                util.cleanupTestDir();
            }
        }
    }

    private static String value(String[] argv, int i, String flag) {
        if (i >= argv.length) {
            throw new IllegalArgumentException(flag + " needs a value");
        }
        return argv[i];
    }

    /** The cluster's configuration plus the gateway's: loopback, threadpool, no info server. */
    static Configuration gatewayConf(Configuration cluster, int port) {
        Configuration conf = new Configuration(cluster);
        conf.set("hbase.regionserver.thrift.ipaddress", HOST);
        conf.setInt("hbase.regionserver.thrift.port", port);
        conf.set("hbase.regionserver.thrift.server.type", "threadpool");
        conf.setBoolean("hbase.regionserver.thrift.framed", false);
        conf.setBoolean("hbase.regionserver.thrift.compact", false);
        conf.setInt("hbase.thrift.info.port", -1);
        return conf;
    }

    /**
     * A port free right now on 127.0.0.1 (ThriftServer does not report the port it bound, so
     * it is given one; another process taking it in between makes the start fail clearly).
     */
    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.bind(new InetSocketAddress(HOST, 0));
            return s.getLocalPort();
        }
    }

    /** ThriftServer.run blocks in serve(): it gets a thread of its own. */
    private static Thread startServing(ThriftServer gateway, int port) {
        String[] args = {"-threadpool", "-b", HOST, "-p", Integer.toString(port), "start"};
        Thread t = new Thread(() -> {
            try {
                gateway.run(args);
            } catch (Exception e) {
                System.err.println("[hbase-thrift] gateway failed: " + e);
                e.printStackTrace();
            }
        }, "hbase-thrift-gateway");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void waitUntilAccepting(int port, Thread serving) throws Exception {
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(HOST, port), 1000);
                return;
            } catch (IOException notYet) {
                if (!serving.isAlive()) {
                    throw new IllegalStateException("the Thrift gateway stopped before accepting connections");
                }
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("the Thrift gateway did not accept connections on "
                            + HOST + ":" + port + " within " + START_TIMEOUT_MS / 1000 + " s");
                }
                Thread.sleep(100);
            }
        }
    }

    /** Serves stdin's commands until it closes. */
    private static void commands(HBaseTestingUtility util, PrintStream out) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            String[] words = line.trim().split("\\s+");
            if (words.length == 0 || words[0].isEmpty()) {
                continue;
            }
            if (!words[0].equals("import")) {
                out.println("failed " + words[0] + ": unknown command (only: import)");
                out.flush();
                continue;
            }
            try {
                HBaseImport.runOn(util, Arrays.copyOfRange(words, 1, words.length), out);
                out.println("done import");
            } catch (Exception e) {
                e.printStackTrace();
                out.println("failed import: " + String.valueOf(e.getMessage()).replace('\n', ' '));
            }
            out.flush();
        }
    }
}
