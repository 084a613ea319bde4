//! Memory budget and allocation failures as clear errors: the global allocator of the
//! `memtide` binary (its `alloc_guard::Guard`, which calls [`admit`], [`release`] and
//! [`refused`]) counts live heap bytes against an optional budget
//! (`MEMTIDE_MAX_MEMORY`, e.g. `4G`, `512M`, or plain bytes) and turns an allocation the
//! budget or the system refuses into an error instead of Rust's `memory allocation of N
//! bytes failed` abort.
//!
//! - Inside `try_grow` (the growth of the big buffers: trace rows, stream buffers, event
//!   columns) a refused allocation comes back as an `Err` the reader turns into a located
//!   error (`… exceeds …`, with the file offset or line).
//! - Anywhere else the process prints `memtide: error: <input>: out of memory: …` and exits
//!   with status 2 (no abort, no core dump).
//!
//! - Inside `recoverable` (one file of a job, read while others are read too) a refusal by
//!   the budget ends that file's reading, not the process: the allocation is let through
//!   (an overdraft of at most the budget again), the thread's next `try_grow` fails, and
//!   the caller gets the reason with the file's outcome.
//!
//! - In [`library_mode`] (the Python extension, which must never end the interpreter) no
//!   refusal exits: one by the budget is always let through (noted as in `recoverable`; the
//!   caller turns it into `MemoryError`), and one by the system returns null, which
//!   `try_reserve` (and `try_grow`) report as an error.
//!
//! Without `MEMTIDE_MAX_MEMORY` nothing is counted and only real allocation failures (e.g.
//! under `ulimit -v`) are caught. The budget is checked per allocation against the bytes
//! live at that moment, so it bounds the process's heap (decoded model included).

use std::cell::{Cell, RefCell};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes live through the binary's allocator while counting is on (may dip below 0 for memory allocated
/// before counting started).
static LIVE: AtomicI64 = AtomicI64::new(0);
/// The budget in bytes (`u64::MAX`: none).
static LIMIT: AtomicU64 = AtomicU64::new(u64::MAX);
static COUNTING: AtomicBool = AtomicBool::new(false);
/// [`recoverable`] scopes running now, on any thread.
static SCOPES: AtomicU64 = AtomicU64::new(0);
/// Refusals by the budget on a thread outside any scope while scopes run (a reader's helper
/// thread: which file it worked for is not known), and the last one's size and bytes in use.
static STRAY_REFUSALS: AtomicU64 = AtomicU64::new(0);
static STRAY_SIZE: AtomicU64 = AtomicU64::new(0);
static STRAY_LIVE: AtomicI64 = AtomicI64::new(0);
/// The input being read, for the out-of-memory message.
static CONTEXT: Mutex<String> = Mutex::new(String::new());
/// Run before the out-of-memory exit (the explorer restores the terminal there).
static BEFORE_EXIT: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();
/// Set once the out-of-memory exit has begun (a refusal inside [`BEFORE_EXIT`] exits at once).
static EXITING: AtomicBool = AtomicBool::new(false);
/// Set by [`library_mode`]: refusals never exit the process.
static LIBRARY: AtomicBool = AtomicBool::new(false);
/// Refusals so far, by the budget or the system, on any thread ([`refusals`]).
static REFUSALS: AtomicU64 = AtomicU64::new(0);

/// The mode of a library inside another program (the Python extension): counting starts (no
/// budget until [`set_limit`]) and no refusal exits the process. A refusal by the budget is
/// let through and noted (inside [`recoverable`] the scope learns why; the thread's next
/// `try_grow` fails); one by the system returns null: `try_reserve` and `try_grow` report
/// it, an infallible allocation ends in Rust's allocation-failure abort, as it would without
/// this allocator. `false` restores the binary's behaviour (the wheel's `memtide` command).
pub fn library_mode(on: bool) {
    LIBRARY.store(on, Ordering::SeqCst);
    if on {
        COUNTING.store(true, Ordering::Relaxed);
    }
}

/// How many allocations the budget or the system refused so far (any thread): a caller that
/// sees it move during a call knows memory ran short meanwhile.
pub fn refusals() -> u64 {
    REFUSALS.load(Ordering::SeqCst)
}

/// Bytes live through the allocator since counting started (0 before; may be below 0 for
/// memory allocated before counting started and freed since).
pub fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// Sets what runs before the out-of-memory exit (once; later calls are ignored): the
/// explorer leaves the alternate screen there, so the message is seen and the shell usable.
pub fn before_exit(f: fn()) {
    let _ = BEFORE_EXIT.set(f);
}

thread_local! {
    /// Set while [`try_grow`] runs: a refusal then returns null to `try_reserve`.
    static FALLIBLE: Cell<bool> = const { Cell::new(false) };
    /// Set while [`recoverable`] runs on this thread.
    static RECOVERABLE: Cell<bool> = const { Cell::new(false) };
    /// The first refusal by the budget inside [`recoverable`]: the size asked for and the
    /// bytes in use then.
    static REFUSED: Cell<Option<(usize, i64)>> = const { Cell::new(None) };
    /// The input this thread reads, for the out-of-memory message (several threads read
    /// several files at once): its first [`CONTEXT_MAX`] bytes and their length. A plain
    /// buffer, not a `String`: a thread-local with a destructor registers it (glibc
    /// allocates) on first use, and glibc aborts when that fails, as it does out of memory.
    static THREAD_CONTEXT: RefCell<([u8; CONTEXT_MAX], usize)> =
        const { RefCell::new(([0; CONTEXT_MAX], 0)) };
}

/// The most bytes of an input's name the out-of-memory message shows.
const CONTEXT_MAX: usize = 300;

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

/// Names the input being read in the out-of-memory message (this thread's, and the
/// process's for threads that name none).
pub(crate) fn set_context(name: &str) {
    if let Ok(mut c) = CONTEXT.lock() {
        c.clear();
        c.push_str(name);
    }
    let _ = THREAD_CONTEXT.try_with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            let n = crate::clip::floor_char_boundary(name, CONTEXT_MAX);
            c.0[..n].copy_from_slice(&name.as_bytes()[..n]);
            c.1 = n;
        }
    });
}

/// Runs `f` (the reading of one file of several) so that the budget refusing an allocation
/// ends only this reading: returns `f`'s result and, when the budget refused something on
/// this thread meanwhile — or on a helper thread while this ran (which file it served is not
/// known, so every scope running then is told) — why (`out of memory: …`). The caller then
/// treats the file as failed, whatever `f` returned; read again alone, the answer is exact.
pub fn recoverable<R>(f: impl FnOnce() -> R) -> (R, Option<String>) {
    let _ = REFUSED.try_with(|r| r.set(None));
    let _ = RECOVERABLE.try_with(|r| r.set(true));
    SCOPES.fetch_add(1, Ordering::SeqCst);
    let strays = STRAY_REFUSALS.load(Ordering::SeqCst);
    let out = f();
    SCOPES.fetch_sub(1, Ordering::SeqCst);
    let _ = RECOVERABLE.try_with(|r| r.set(false));
    let refused = REFUSED.try_with(|r| r.take()).ok().flatten().or_else(|| {
        (STRAY_REFUSALS.load(Ordering::SeqCst) != strays).then(|| {
            (
                STRAY_SIZE.load(Ordering::Relaxed) as usize,
                STRAY_LIVE.load(Ordering::Relaxed),
            )
        })
    });
    (
        out,
        refused.map(|(size, live)| over_budget_text(size, live)),
    )
}

/// Whether this thread may overdraw: inside a scope, or a helper thread while scopes run.
fn in_scope() -> bool {
    RECOVERABLE.try_with(Cell::get).unwrap_or(false) || SCOPES.load(Ordering::Relaxed) > 0
}

fn over_budget_text(size: usize, live: i64) -> String {
    format!(
        "out of memory: allocating {size} B with {} B in use exceeds the memory budget of {} B (MEMTIDE_MAX_MEMORY)",
        live.max(0),
        LIMIT.load(Ordering::Relaxed)
    )
}

/// Whether this thread is inside [`recoverable`] and the budget already refused something.
fn refused_here() -> bool {
    RECOVERABLE.try_with(Cell::get).unwrap_or(false)
        && REFUSED.try_with(|r| r.get().is_some()).unwrap_or(false)
}

/// Notes a refusal inside [`recoverable`] (this thread's first), or on a helper thread while
/// scopes run.
fn note_refusal(size: usize) {
    REFUSALS.fetch_add(1, Ordering::SeqCst);
    let live = LIVE.load(Ordering::Relaxed);
    if RECOVERABLE.try_with(Cell::get).unwrap_or(false) {
        let _ = REFUSED.try_with(|r| {
            if r.get().is_none() {
                r.set(Some((size, live)));
            }
        });
    } else if SCOPES.load(Ordering::Relaxed) > 0 {
        STRAY_SIZE.store(size as u64, Ordering::Relaxed);
        STRAY_LIVE.store(live, Ordering::Relaxed);
        STRAY_REFUSALS.fetch_add(1, Ordering::SeqCst);
    }
}

/// An allocation of `size` the budget refused, outside `try_grow`: inside `recoverable`
/// (or on a helper thread while one runs) it is let through (counted) while the bytes in use
/// stay under twice the budget, and the refusal is noted (the thread's next `try_grow`
/// fails, ending the file's reading); in [`library_mode`] it is always let through (and
/// noted). Returns whether the caller may allocate.
#[inline]
pub fn overdraw(size: usize) -> bool {
    if FALLIBLE.try_with(Cell::get).unwrap_or(false) {
        return false;
    }
    let library = LIBRARY.load(Ordering::Relaxed);
    if !library && !in_scope() {
        return false;
    }
    let limit = LIMIT.load(Ordering::Relaxed);
    let before = LIVE.load(Ordering::Relaxed).max(0) as u64;
    if !library && before.saturating_add(size as u64) > limit.saturating_mul(2) {
        return false;
    }
    note_refusal(size);
    LIVE.fetch_add(size as i64, Ordering::Relaxed);
    true
}

/// Grows `v` so it holds `additional` more items, returning an error text (`… exceeds …`)
/// when the budget or the system refuses, instead of aborting.
pub(crate) fn try_grow<T>(v: &mut Vec<T>, additional: usize, what: &str) -> Result<(), String> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    if refused_here() {
        // An allocation elsewhere already went over the budget: stop reading this file.
        return Err(format!(
            "{what}: stopped reading: the memory budget of {} B (MEMTIDE_MAX_MEMORY) is exceeded",
            LIMIT.load(Ordering::Relaxed)
        ));
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
pub(crate) fn try_push<T>(v: &mut Vec<T>, x: T, what: &str) -> Result<(), String> {
    if v.len() == v.capacity() {
        try_grow(v, v.capacity().max(16), what)?;
    }
    v.push(x);
    Ok(())
}

/// Writes the out-of-memory message without allocating and exits with status 2.
#[cold]
fn fail(size: usize, over_budget: bool) -> ! {
    if !EXITING.swap(true, Ordering::SeqCst) {
        if let Some(f) = BEFORE_EXIT.get() {
            f();
        }
    }
    let mut buf = [0u8; 512];
    let mut w = &mut buf[..];
    let _ = write!(w, "memtide: error: ");
    let cut = |c: &str| -> usize {
        let n = c.len().min(300);
        (0..=n).rev().find(|&i| c.is_char_boundary(i)).unwrap_or(0)
    };
    // This thread's input first: another thread may be reading another file.
    let named = THREAD_CONTEXT
        .try_with(|c| match c.try_borrow() {
            Ok(c) if c.1 > 0 => {
                let text = std::str::from_utf8(&c.0[..c.1]).unwrap_or("");
                let _ = write!(w, "{text}: ");
                true
            }
            _ => false,
        })
        .unwrap_or(false);
    if !named {
        if let Ok(c) = CONTEXT.try_lock() {
            if !c.is_empty() {
                let _ = write!(w, "{}: ", &c[..cut(&c)]);
            }
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

/// Counts `size` more bytes; false (and not counted) when that exceeds the budget.
#[inline]
pub fn admit(size: usize) -> bool {
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

/// Counts `size` bytes freed.
#[inline]
pub fn release(size: usize) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE.fetch_sub(size as i64, Ordering::Relaxed);
    }
}

/// An allocation of `size` was refused (by the budget or the system): returns when the caller
/// is inside `try_grow` or in [`library_mode`] (the allocator then returns null), otherwise
/// prints the out-of-memory message and exits with status 2.
#[cold]
pub fn refused(size: usize, over_budget: bool) {
    if FALLIBLE.try_with(|f| f.get()).unwrap_or(false) {
        if over_budget {
            note_refusal(size);
        } else {
            REFUSALS.fetch_add(1, Ordering::SeqCst);
        }
        return;
    }
    if LIBRARY.load(Ordering::Relaxed) {
        REFUSALS.fetch_add(1, Ordering::SeqCst);
        return;
    }
    fail(size, over_budget)
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
    fn library_mode_never_exits_and_counts_refusals() {
        // The test binary has the system allocator: these calls are the guard's, by hand.
        library_mode(true);
        let before = refusals();
        // A system refusal outside `try_grow` returns (the allocator gives null) instead of
        // exiting the process, which would end this test binary.
        refused(1 << 40, false);
        assert_eq!(refusals(), before + 1);
        // A refusal by the budget is let through, however far over, and noted in a scope.
        let (through, why) = recoverable(|| overdraw(usize::MAX / 4));
        assert!(through);
        assert!(why.is_some_and(|w| w.contains("exceeds the memory budget")));
        assert_eq!(refusals(), before + 2);
        LIVE.fetch_sub((usize::MAX / 4) as i64, Ordering::Relaxed);
        library_mode(false);
    }

    #[test]
    fn the_out_of_memory_context_is_kept_short() {
        set_context(&"é".repeat(1000));
        THREAD_CONTEXT.with(|c| {
            let c = c.borrow();
            assert!(c.1 <= CONTEXT_MAX && c.1 > CONTEXT_MAX - 2);
            assert!(std::str::from_utf8(&c.0[..c.1]).is_ok());
        });
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
