package dev.cellar.peers;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The generator matches bench/java/vector.txt, the vector cellar-bench is tested against. */
class VectorTest {
    @Test
    void generatorMatchesSharedVector() throws Exception {
        // Surefire runs in the module's folder (bench/java/common).
        List<String> want = Files.readAllLines(Path.of("..", "vector.txt")).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#"))
                .collect(Collectors.toList());
        assertEquals(want, Vector.lines());
    }

    @Test
    void splitmix64MatchesPublishedOutputs() {
        // First outputs for seed 0 (the reference implementation's test vector).
        SplitMix64 g = new SplitMix64(0);
        assertEquals(0xE220A8397B1DCDAFL, g.next());
        assertEquals(0x6E789E6AA1B965F4L, g.next());
        SplitMix64 h = new SplitMix64(0);
        for (int i = 0; i < 5; i++) {
            h.next();
        }
        assertEquals(SplitMix64.nth(0, 5), h.next());
    }

    @Test
    void keysAreZeroPaddedDecimalInIndexOrder() {
        assertArrayEquals("0000000000000042".getBytes(), Dataset.key(42, 16));
        assertEquals(-1, Dataset.keyString(99_999, 16).compareTo(Dataset.keyString(100_000, 16)));
    }

    @Test
    void valuesRepeatTheirPrintableHalf() {
        byte[] v = Dataset.value(7, 100);
        for (int j = 0; j < 50; j++) {
            assertEquals(v[j], v[j + 50]);
            assertEquals(true, v[j] >= 32 && v[j] < 127);
        }
    }
}
