package dev.cellar.peers;

/** Prints the shared vector (bench/java/vector.txt) as this side computes it. */
public final class SelfTest {
    private SelfTest() {}

    public static void main(String[] args) {
        Vector.print(System.out);
    }
}
