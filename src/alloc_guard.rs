//! Memory budget and allocation failures as clear errors: the global allocator of the
//! `memtide` binary ([`Guard`]) counts live heap bytes against an optional budget
//! (`MEMTIDE_MAX_MEMORY`, e.g. `4G`, `512M`, or plain bytes) and turns an allocation the
//! budget or the system refuses into an error instead of Rust's `memory allocation of N
//! bytes failed` abort.
//!
//! - Inside [`try_grow`] (the growth of the big buffers: trace rows, stream buffers, event
//!   columns) a refused allocation comes back as an `Err` the reader turns into a located
//!   error (`… exceeds …`, with the file offset or line).
//! - Anywhere else the process prints `memtide: error: <input>: out of memory: …` and exits
//!   with status 2 (no abort, no core dump).
//!
//! Without `MEMTIDE_MAX_MEMORY` nothing is counted and only real allocation failures (e.g.
//! under `ulimit -v`) are caught. The budget is checked per allocation against the bytes
//! live at that moment, so it bounds the process's heap (decoded model included).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes live through [`Guard`] while counting is on (may dip below 0 for memory allocated
/// before counting started).
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The budget in bytes (`u64::MAX`: none).
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);
static COUNTING: AtomicBool = AtomicBool::new(false);
/// The input being read, for the out-of-memory message.
static CONTEXT: Mutex<String> = Mutex::new(String::new());

thread_local! {
    /// Set while [`try_grow`] runs: a refusal then returns null to `try_reserve`.
    static FALLIBLE: Cell<bool> = const { Cell::new(false) };
}

/// The global allocator of the binary: [`System`] plus the budget and the clear failure.
pub struct Guard;

/// Parses a size such as `4G`, `512M`, `64k`, `1000000` (binary multiples).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        (i, 't' | 'T') => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// Reads `MEMTIDE_MAX_MEMORY` and starts counting when it is set. Returns an error text for
/// an unreadable value.
pub fn init_from_env() -> Result<(), String> {
    match std::env::var("MEMTIDE_MAX_MEMORY") {
        Ok(v) if !v.trim().is_empty() => {
            let n = parse_size(&v).ok_or_else(|| {
                format!("MEMTIDE_MAX_MEMORY={v:?} is not a size (expected e.g. 4G, 512M, 1000000)")
            })?;
            set_limit(Some(n));
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Sets (or clears) the budget; counting starts with the first call.
pub fn set_limit(limit: Option<u64>) {
    LIMIT.store(limit.unwrap_or(u64::MAX), Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
}

/// The budget in bytes, if one is set.
pub fn limit() -> Option<u64> {
    Some(LIMIT.load(Ordering::Relaxed)).filter(|&l| l != u64::MAX)
}

/// Names the input being read in the out-of-memory message.
pub fn set_context(name: &str) {
    if let Ok(mut c) = CONTEXT.lock() {
        c.clear();
        c.push_str(name);
    }
}

/// Grows `v` so it holds `additional` more items, returning an error text (`… exceeds …`)
/// when the budget or the system refuses, instead of aborting.
pub fn try_grow<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<(), String> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    FALLIBLE.with(|f| f.set(true));
    let r = v.try_reserve(additional);
    FALLIBLE.with(|f| f.set(false));
    r.map_err(|_| {
        let want = (v.len() as u128 + additional as u128) * std::mem::size_of::<T>() as u128;
        match limit() {
            Some(l) => format!(
                "{what}: {want} B exceeds the memory budget of {l} B (MEMTIDE_MAX_MEMORY) or the memory available"
            ),
            None => format!("{what}: {want} B exceeds the memory available"),
        }
    })
}

/// As [`try_grow`] for one more item: doubles the capacity when full.
#[inline]
pub fn try_push<T>(v: &mut Vec<T>, x: T, what: &str) -> Result<(), String> {
    if v.len() == v.capacity() {
        try_grow(v, v.capacity().max(16), what)?;
    }
    v.push(x);
    Ok(())
}

/// Writes the out-of-memory message without allocating and exits with status 2.
#[cold]
fn fail(size: usize, over_budget: bool) -> ! {
    let mut buf = [0u8; 512];
    let mut w = &mut buf[..];
    let _ = write!(w, "memtide: error: ");
    if let Ok(c) = CONTEXT.try_lock() {
        if !c.is_empty() {
            let n = c.len().min(300);
            let cut = (0..=n).rev().find(|&i| c.is_char_boundary(i)).unwrap_or(0);
            let _ = write!(w, "{}: ", &c[..cut]);
        }
    }
    let live = LIVE.load(Ordering::Relaxed).max(0);
    if over_budget {
        let _ = writeln!(
            w,
            "out of memory: allocating {size} B with {live} B in use exceeds the memory budget of {} B (MEMTIDE_MAX_MEMORY)",
            LIMIT.load(Ordering::Relaxed)
        );
    } else {
        let _ = writeln!(
            w,
            "out of memory: allocating {size} B failed (the input needs more memory than is available)"
        );
    }
    let left = w.len();
    let n = buf.len() - left;
    let _ = std::io::stderr().write_all(&buf[..n]);
    std::process::exit(2)
}

impl Guard {
    #[inline]
    fn admit(&self, size: usize) -> bool {
        if !COUNTING.load(Ordering::Relaxed) {
            return true;
        }
        let before = LIVE.fetch_add(size as i64, Ordering::Relaxed);
        let limit = LIMIT.load(Ordering::Relaxed);
        if before.saturating_add(size as i64).max(0) as u64 > limit {
            LIVE.fetch_sub(size as i64, Ordering::Relaxed);
            return false;
        }
        true
    }

    #[inline]
    fn release(&self, size: usize) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(size as i64, Ordering::Relaxed);
        }
    }

    #[cold]
    fn refused(&self, size: usize, over_budget: bool) -> *mut u8 {
        if FALLIBLE.try_with(|f| f.get()).unwrap_or(false) {
            return std::ptr::null_mut();
        }
        fail(size, over_budget)
    }
}

// SAFETY: every call forwards to `System` with the caller's layout; the counting only adds
// bookkeeping and a refusal returns null (allowed) or exits the process.
unsafe impl GlobalAlloc for Guard {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size()) {
            return self.refused(layout.size(), true);
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            self.release(layout.size());
            return self.refused(layout.size(), false);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !self.admit(layout.size()) {
            return self.refused(layout.size(), true);
        }
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            self.release(layout.size());
            return self.refused(layout.size(), false);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.release(layout.size());
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let old = layout.size();
        if new_size > old && !self.admit(new_size - old) {
            return self.refused(new_size, true);
        }
        // SAFETY: `ptr` came from this allocator with `layout`; forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            if new_size > old {
                self.release(new_size - old);
            }
            return self.refused(new_size, false);
        }
        if new_size < old {
            self.release(old - new_size);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4G"), Some(4 << 30));
        assert_eq!(parse_size("512m"), Some(512 << 20));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size("99999999999T"), None);
    }

    #[test]
    fn try_grow_reports_instead_of_aborting() {
        let mut v: Vec<u64> = Vec::new();
        let e = try_grow(&mut v, usize::MAX / 4, "rows").expect_err("cannot fit");
        assert!(e.contains("exceeds"), "{e}");
        try_push(&mut v, 1, "rows").expect("one item fits");
        assert_eq!(v, [1]);
    }
}
