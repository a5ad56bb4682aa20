package dev.cellar.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The elliptics generator matches bench/java/elliptics-vector.txt, as cellar-bench's data.rs does. */
class TextRecordsTest {
    @Test
    void textRecordsMatchSharedVector() throws Exception {
        // Surefire runs in the module's folder (bench/java/common).
        List<String> want = Files.readAllLines(Path.of("..", "elliptics-vector.txt")).stream()
                .filter(l -> !l.isBlank() && !l.startsWith("#"))
                .collect(Collectors.toList());
        assertEquals(want, TextRecords.vectorLines());
    }

    @Test
    void valuesHaveExactSize() {
        for (long i = 0; i < 100; i++) {
            assertEquals(200, TextRecords.value(i, 200).length);
        }
        assertEquals(0, TextRecords.value(1, 0).length);
    }
}
