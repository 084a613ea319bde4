//! A named thread that owns the value it works on, and gives the value back when no thread
//! can be started (the caller then does the work itself).

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Starts thread `name` running `work(value)`. When the thread cannot start: `Err` with the
/// value (`None` only if a poisoned hand-over lost it). The handle yields `None` only if the
/// value never reached the thread.
pub(crate) fn spawn<T, R>(
    name: &str,
    value: T,
    work: impl FnOnce(T) -> R + Send + 'static,
) -> Result<JoinHandle<Option<R>>, Option<T>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    // The value travels in a slot: if the thread cannot start, the closure holding the
    // slot's other end is dropped and the value is taken back out.
    let slot = Arc::new(Mutex::new(Some(value)));
    let theirs = Arc::clone(&slot);
    let started = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let value = theirs.lock().ok().and_then(|mut s| s.take());
            value.map(work)
        });
    started.map_err(|_| slot.lock().ok().and_then(|mut s| s.take()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_thread_gets_the_value_and_its_name() {
        let h = spawn("memtide-test", 20, |v| {
            (v + 1, std::thread::current().name().map(str::to_string))
        });
        let got = h.ok().and_then(|h| h.join().ok()).flatten();
        assert_eq!(got, Some((21, Some("memtide-test".to_string()))));
    }
}
