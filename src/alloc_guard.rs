//! The global allocator of the `memtide` binary: [`System`] plus the memory budget of
//! `memtide_core::budget` (`MEMTIDE_MAX_MEMORY`) and a clear error instead of Rust's abort
//! when an allocation is refused.

use memtide_core::budget;
use std::alloc::{GlobalAlloc, Layout, System};

/// The global allocator of the binary: [`System`] plus the budget and the clear failure.
pub struct Guard;

/// A refused allocation: null inside `budget::try_grow`, else the process exits (a refusal
/// by the budget inside `budget::recoverable` is let through by `budget::overdraw` instead).
#[cold]
fn refused(size: usize, over_budget: bool) -> *mut u8 {
    budget::refused(size, over_budget);
    std::ptr::null_mut()
}

// SAFETY: every call forwards to `System` with the caller's layout; the counting only adds
// bookkeeping and a refusal returns null (allowed) or exits the process.
unsafe impl GlobalAlloc for Guard {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !budget::admit(layout.size()) && !budget::overdraw(layout.size()) {
            return refused(layout.size(), true);
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            budget::release(layout.size());
            return refused(layout.size(), false);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !budget::admit(layout.size()) && !budget::overdraw(layout.size()) {
            return refused(layout.size(), true);
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            budget::release(layout.size());
            return refused(layout.size(), false);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        budget::release(layout.size());
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !budget::admit(new_size - old) && !budget::overdraw(new_size - old) {
            return refused(new_size, true);
        }
        // SAFETY: `ptr` came from this allocator with `layout`; forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > old {
                budget::release(new_size - old);
            }
            return refused(new_size, false);
        }
        if new_size < old {
            budget::release(old - new_size);
        }
        p
    }
}

/// Makes glibc's malloc return freed large blocks to the system at once: allocations over
/// 128 KiB are mapped and unmapped on their own (`M_MMAP_THRESHOLD` fixed at its default,
/// which also turns off glibc's dynamic threshold). Without it, after the first large block
/// is freed glibc raises the threshold and serves later large blocks from the heap, which it
/// keeps: reading rank files one after another kept each file's peak (the ranks overview
/// of eight 88 MiB snapshots reached 2.2× the RSS of the largest alone; with it, 1.6×).
/// Nothing to do on other C libraries.
pub fn return_large_frees_to_the_system() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        unsafe extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        // SAFETY: mallopt only sets a tuning parameter of glibc's allocator; it is called
        // before any thread starts, and a refusal (0) leaves the default behaviour.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        }
    }
}
