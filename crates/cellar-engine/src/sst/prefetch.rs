//! A hint to the CPU to start loading a cache line that will be read soon. A batched lookup
//! (`SstReader::multi_get`) first computes where each key's bloom line, index search-tree node and
//! block restart array lie and asks for all of them, then does the dependent work: the
//! misses of many keys overlap instead of queueing one behind another. A prefetch never
//! faults and changes no state, so a wrong address costs only the wasted load.

// Unsafe code here: the prefetch instruction is an intrinsic.
#![allow(unsafe_code)]

/// Prefetches the cache line holding `p` (no-op off x86_64).
#[inline(always)]
pub fn read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads no memory architecturally and cannot fault, whatever the
    // address; SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches the line holding `slice[at]`, if `at` is inside the slice.
#[inline(always)]
pub fn read_at<T>(slice: &[T], at: usize) {
    if let Some(x) = slice.get(at) {
        read(x as *const T);
    }
}
