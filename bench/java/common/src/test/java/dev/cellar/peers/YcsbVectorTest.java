package dev.cellar.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The YCSB generators match bench/java/ycsb_vector.txt, which cellar-bench's generators also match. */
class YcsbVectorTest {
    @Test
    void generatorsMatchSharedVector() throws Exception {
        // Surefire runs in the module's folder (bench/java/common).
        List<String> want = Files.readAllLines(Path.of("..", "ycsb_vector.txt")).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#"))
                .collect(Collectors.toList());
        List<String> got = YcsbVector.lines();
        for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
            assertEquals(want.get(i), got.get(i), "line " + i + " of ycsb_vector.txt");
        }
        assertEquals(want.size(), got.size());
    }

    @Test
    void insertCounterTracksTheCompletePrefix() {
        YcsbGen.InsertCounter c = new YcsbGen.InsertCounter(100);
        long a = c.claim();
        long b = c.claim();
        assertEquals(101, b);
        c.acknowledge(b);
        assertEquals(100, c.complete());
        c.acknowledge(a);
        assertEquals(102, c.complete());
    }

    @Test
    void belowStaysInRangeAndKeysAre23Bytes() {
        YcsbGen.Rng r = new YcsbGen.Rng(3);
        for (int i = 0; i < 100_000; i++) {
            long x = r.below(7);
            assertTrue(x >= 0 && x < 7, Long.toString(x));
        }
        assertEquals(23, YcsbWorkload.key(0).length);
        assertEquals(1140, YcsbWorkload.valueBytes(10, 100));
    }
}
