package dev.cellar.peers;

/**
 * SplitMix64 (Steele, Lea and Flood, 2014), the generator cellar-bench and these peers share
 * so that every engine writes the same values and looks up the same keys.
 *
 * <p>The state starts at the seed; each {@link #next()} adds {@link #GAMMA} to it and returns
 * {@link #mix} of the new state. All arithmetic is on unsigned 64-bit words (Java's wrapping
 * {@code long} arithmetic gives the same bits as Rust's {@code wrapping_*} on {@code u64}).
 * The Rust twin is crates/cellar-bench/src/peer_keys.rs.
 */
public final class SplitMix64 {
    public static final long GAMMA = 0x9E3779B97F4A7C15L;

    private long state;

    public SplitMix64(long seed) {
        this.state = seed;
    }

    /** The finalizer: a bijection on 64-bit words. */
    public static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The {@code n}-th output (0-based) of a generator started at {@code seed}, in O(1). */
    public static long nth(long seed, long n) {
        return mix(seed + (n + 1) * GAMMA);
    }

    public long next() {
        state += GAMMA;
        return mix(state);
    }
}
