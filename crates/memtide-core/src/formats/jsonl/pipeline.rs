//! A whole JSONL input on two threads: a second thread reads, frames and decodes the lines
//! (with the string interner), the calling thread applies the items to the trace in file
//! order. The items pass in batches over a bounded channel, the emptied batches come back, so
//! memory stays a few batches whatever the file's size. The result (trace, interner, the
//! decoder's state for a follower, the first error) is the one feeding the same bytes on one
//! thread gives: both halves see the same items in the same order.

use super::lines::{Item, Lines, Sink};
use super::JsonlDecoder;
use crate::formats::error::FormatError;
use crate::formats::source::io_or_cancel;
use crate::trace::{Interner, Trace};
use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

/// Items per batch: big enough that the channel's cost per item vanishes, small enough that
/// the applying thread starts at once.
const BATCH: usize = 4096;
/// Batches in flight between the threads.
const IN_FLIGHT: usize = 4;
/// Bytes read at a time.
const READ: usize = 4 << 20;

/// Feeds everything `reader` holds to `dec` and `trace` as [`JsonlDecoder::feed`] would,
/// reading and decoding on a second thread; returns the bytes fed. Call `finish` or `flush`
/// after it as after `feed`.
pub fn feed_two_threads(
    dec: &mut JsonlDecoder,
    trace: &mut Trace,
    reader: impl Read + Send,
) -> Result<u64, FormatError> {
    feed_in_batches(dec, trace, reader, BATCH)
}

fn feed_in_batches(
    dec: &mut JsonlDecoder,
    trace: &mut Trace,
    reader: impl Read + Send,
    batch: usize,
) -> Result<u64, FormatError> {
    let mut lines = std::mem::replace(&mut dec.lines, Lines::new());
    let mut strings = std::mem::take(&mut trace.strings);
    let (full_tx, full_rx) = sync_channel::<Vec<Item>>(IN_FLIGHT);
    let (empty_tx, empty_rx) = sync_channel::<Vec<Item>>(IN_FLIGHT + 2);
    let (read, applied) = std::thread::scope(|s| {
        let reading = std::thread::Builder::new()
            .name("memtide-jsonl".into())
            .spawn_scoped(s, || {
                let mut sink = Batches {
                    batch: Vec::with_capacity(batch),
                    size: batch,
                    full: full_tx,
                    empty: empty_rx,
                };
                let r = read_all(reader, &mut lines, &mut strings, &mut sink);
                // What is left goes too; a closed channel means the applier stopped first.
                let _ = sink.send();
                r
            });
        let applied = apply_all(dec, trace, &full_rx, &empty_tx);
        // The reader stops at its next send once the receiver is gone.
        drop(full_rx);
        let read = match reading {
            Ok(h) => h.join().unwrap_or_else(|_| {
                Err(Stop::Failed(FormatError::Invalid(
                    "the JSONL reading thread stopped unexpectedly".into(),
                )))
            }),
            Err(e) => Err(Stop::Failed(FormatError::Io(e))),
        };
        (read, applied)
    });
    dec.lines = lines;
    trace.strings = strings;
    // An item's error comes before anything the reader met later in the file.
    applied?;
    match read {
        Ok(n) => Ok(n),
        Err(Stop::Failed(e)) => Err(e),
        // The applier stopped (with an error, returned above); unreachable otherwise.
        Err(Stop::Closed) => Ok(0),
    }
}

/// Why the reading thread stopped early.
enum Stop {
    Failed(FormatError),
    /// The applying side hung up (it met an error).
    Closed,
}

fn read_all(
    mut reader: impl Read,
    lines: &mut Lines,
    strings: &mut Interner,
    sink: &mut Batches,
) -> Result<u64, Stop> {
    let mut buf = vec![0u8; READ];
    let mut fed = 0u64;
    loop {
        let n = reader
            .read(&mut buf)
            .map_err(|e| Stop::Failed(io_or_cancel(e)))?;
        if n == 0 {
            return Ok(fed);
        }
        fed += n as u64;
        lines
            .feed(strings, &buf[..n], sink)
            .map_err(|Closed| Stop::Closed)?;
    }
}

/// Applies every batch in order; stops at the first error.
fn apply_all(
    dec: &mut JsonlDecoder,
    trace: &mut Trace,
    full: &Receiver<Vec<Item>>,
    empty: &SyncSender<Vec<Item>>,
) -> Result<(), FormatError> {
    for mut batch in full.iter() {
        for item in batch.drain(..) {
            dec.apply.take(trace, item)?;
        }
        // The reader may have enough spares already.
        let _ = empty.try_send(batch);
    }
    Ok(())
}

/// The reading half's sink: items gathered into batches and sent.
struct Batches {
    batch: Vec<Item>,
    /// Items per batch.
    size: usize,
    full: SyncSender<Vec<Item>>,
    empty: Receiver<Vec<Item>>,
}

/// The applying side has hung up.
struct Closed;

impl Batches {
    fn send(&mut self) -> Result<(), Closed> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(self.size));
        let batch = std::mem::replace(&mut self.batch, next);
        self.full.send(batch).map_err(|_| Closed)
    }
}

impl Sink for Batches {
    type Error = Closed;
    fn take(&mut self, item: Item) -> Result<(), Closed> {
        self.batch.push(item);
        if self.batch.len() >= self.size {
            self.send()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::jsonl::JsonlOptions;

    /// Trace, decoder state and result after the whole input, fed on one thread in `chunk`
    /// pieces (the reference) or on two threads in batches of `batch` items.
    /// `probe`: what the external-span probe answers (an I/O error for None), when there is one.
    fn run(bytes: &[u8], lenient: bool, probe: Option<Option<bool>>, two: Option<usize>) -> String {
        let mut trace = Trace::new("cuda:0", "t.jsonl", "jsonl");
        let mut dec = JsonlDecoder::new(JsonlOptions {
            lenient,
            has_external_spans: None,
        });
        if let Some(answer) = probe {
            dec.set_external_probe(crate::formats::jsonl::ExternalProbe(Box::new(move || {
                answer.ok_or_else(|| FormatError::Io(std::io::Error::other("probe failed")))
            })));
        }
        let fed = match two {
            None => bytes
                .chunks(4096)
                .try_for_each(|c| dec.feed(&mut trace, c))
                .map(|()| bytes.len() as u64),
            Some(batch) => feed_in_batches(&mut dec, &mut trace, bytes, batch),
        };
        // After an error the load is refused: only the error counts (the reading thread may
        // have read on before it heard, so the decoder's state is not comparable).
        if let Err(e) = fed {
            return format!("Err({e})");
        }
        let finished = dec.finish(&mut trace);
        format!("{finished:?}\n{trace:?}\n{dec:?}")
    }

    /// A generated file with lines broken in the ways the reader must report or skip: bad
    /// JSON, unknown ops, `t` going backwards, a double alloc, a free of nothing, a second
    /// header, a torn last line.
    fn mutated(seed: u64) -> Vec<u8> {
        let mut raw = Vec::new();
        crate::synth::jsonl(300, seed, &mut raw).unwrap_or_default();
        let text = String::from_utf8(raw).unwrap_or_default();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = |n: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as usize
        };
        for _ in 0..1 + next(4) {
            let at = next(lines.len());
            let bad = match next(9) {
                0 => "{\"t\":".to_string(),
                1 => r#"{"t":999999999,"op":"teleport","id":1}"#.to_string(),
                2 => r#"{"t":0,"op":"free","id":1}"#.to_string(),
                3 => lines.get(at.saturating_sub(1)).cloned().unwrap_or_default(),
                4 => r#"{"t":999999999,"op":"free","id":987654321}"#.to_string(),
                5 => r#"{"memtide":1,"device":"cuda:0"}"#.to_string(),
                6 => "not json".to_string(),
                7 => r#"{"memtide":1,"clock":"fortnights"}"#.to_string(),
                _ => r#"{"t":999999999,"op":"sample","used":5}"#.to_string(),
            };
            lines.insert(at, bad);
        }
        let mut out = lines.join("\n").into_bytes();
        if next(3) == 0 {
            out.extend_from_slice(b"\n{\"t\":99999999");
        }
        out
    }

    #[test]
    fn two_threads_give_what_one_gives_on_good_and_broken_files() {
        let mut errors = 0;
        for seed in 1..60u64 {
            let bytes = mutated(seed);
            let probe = [None, Some(Some(true)), Some(Some(false)), Some(None)][seed as usize % 4];
            for lenient in [false, true] {
                let one = run(&bytes, lenient, probe, None);
                errors += usize::from(one.starts_with("Err"));
                for batch in [1, 3, 4096] {
                    assert!(
                        one == run(&bytes, lenient, probe, Some(batch)),
                        "seed {seed}, lenient {lenient}, batch {batch}"
                    );
                }
            }
        }
        // The mutations do reach the error paths (strict mode refuses most of them).
        assert!(errors >= 30, "{errors} runs ended in an error");
    }
}
