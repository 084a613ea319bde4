//! The second core's share of the event parse: the later part of each chunk is parsed on the
//! thread between the reader and the parser, into a [`Part`] of its own, and taken over by the
//! parser when it reaches the part's first event itself — so the result is the one-thread
//! result, whatever the guess of where an event starts.

use super::parse::{keep, raw_event, Collected, Keep, MemEv, Names, OomEv, Span, TidKey};
use rustc_hash::FxHashMap;

/// What the events of a chunk's later part keep, with ids of their own: positions counted from
/// the part's first event, thread and name ids in the order the part met them.
#[derive(Default, Debug)]
pub(crate) struct Part {
    mem: Vec<MemEv>,
    ooms: Vec<OomEv>,
    spans: Vec<Span>,
    names: Names,
    tids: FxHashMap<TidKey, u32>,
    /// Keys by id.
    tid_keys: Vec<TidKey>,
    events: u64,
    bad_bytes: u64,
    first_bad_bytes: Option<u64>,
}

impl Keep for Part {
    fn src(&self) -> u64 {
        self.events
    }
    fn tid(&mut self, k: TidKey) -> u32 {
        if let Some(&id) = self.tids.get(&k) {
            return id;
        }
        let id = self.tid_keys.len() as u32;
        self.tid_keys.push(k.clone());
        self.tids.insert(k, id);
        id
    }
    fn name(&mut self, s: &str) -> u32 {
        self.names.intern(s)
    }
    fn mem(&mut self, ev: MemEv) {
        self.mem.push(ev);
    }
    fn oom(&mut self, ev: OomEv) {
        self.ooms.push(ev);
    }
    fn span(&mut self, sp: Span) {
        self.spans.push(sp);
    }
    fn bad_bytes(&mut self, src: u64) {
        self.bad_bytes += 1;
        self.first_bad_bytes.get_or_insert(src);
    }
}

/// Parses the events of `chunk` from the first place after byte `from` that looks like the
/// start of one (`}` `,` `{`, whitespace between) up to the last comma after a whole event:
/// the range, as chunk offsets just past those two commas, and what the events keep. It stops
/// at anything it cannot read; the parser then reads on from there and reports what is wrong.
pub(crate) fn parse_ahead(chunk: &[u8], from: usize) -> Option<(usize, usize, Part)> {
    let start = event_start_after(chunk, from)?;
    let mut part = Part::default();
    let (mut i, mut end) = (start, start);
    while let Ok(Some((ev, used))) = raw_event(&chunk[i..], true) {
        let mut j = i + used;
        while chunk.get(j).is_some_and(u8::is_ascii_whitespace) {
            j += 1;
        }
        // Only an event with its comma is the part's: the parser would stop at anything else.
        if chunk.get(j) != Some(&b',') {
            break;
        }
        keep(&mut part, ev);
        part.events += 1;
        i = j + 1;
        end = i;
    }
    Some((start, end, part))
}

/// Just past the first comma at or after `from` that has `}` before it and `{` after it.
fn event_start_after(chunk: &[u8], from: usize) -> Option<usize> {
    let tail = chunk.get(from..)?;
    memchr::memchr_iter(b',', tail)
        .map(|k| from + k)
        .find(|&k| {
            let before = chunk[..k].iter().rev().find(|b| !b.is_ascii_whitespace());
            let after = chunk[k + 1..].iter().find(|b| !b.is_ascii_whitespace());
            before == Some(&b'}') && after == Some(&b'{')
        })
        .map(|k| k + 1)
}

impl Collected {
    /// Takes over a part read ahead, as if its events had been read here one by one: names and
    /// threads new to the pass get their ids in the order the part met them.
    pub(super) fn absorb(&mut self, p: Part) {
        let names: Vec<u32> = p.names.list.iter().map(|n| self.names.intern(n)).collect();
        let tids: Vec<u32> = p.tid_keys.into_iter().map(|k| Keep::tid(self, k)).collect();
        let tid = |t: u32| tids.get(t as usize).copied().unwrap_or(u32::MAX);
        let base = self.events_read;
        for ev in p.mem {
            self.mem.push(MemEv {
                src: base + ev.src,
                tid: tid(ev.tid),
                ..ev
            });
        }
        self.ooms.extend(p.ooms.into_iter().map(|o| OomEv {
            src: base + o.src,
            ..o
        }));
        self.spans.extend(p.spans.into_iter().filter_map(|s| {
            let name = names.get(s.name() as usize).copied()?;
            Span::new(s.start, s.end, tid(s.tid), name, s.kind())
        }));
        self.events_read += p.events;
        self.events_ahead += p.events;
        self.bad_bytes += p.bad_bytes;
        if self.first_bad_bytes.is_none() {
            self.first_bad_bytes = p.first_bad_bytes.map(|s| base + s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::kineto::feed::{with_chunks_of, Feed, FeedError};
    use crate::formats::kineto::parse::scan;
    use crate::formats::source::Progress;
    use proptest::prelude::*;

    /// What a pass kept, and how it ended, as text to compare.
    fn outcome(c: &Collected, res: Result<(), FeedError>) -> String {
        format!(
            "{res:?}\nread {} bad {} first {:?}\nmem {:?}\nooms {:?}\nspans {:?}\nnames {:?}\ntids {:?}",
            c.events_read,
            c.bad_bytes,
            c.first_bad_bytes,
            c.mem,
            c.ooms,
            c.spans,
            c.names.list,
            c.thread_keys()
        )
    }

    /// One thread, no chunks: the reference.
    fn one_thread(bytes: &[u8]) -> String {
        let mut c = Collected::new();
        let res = scan(&mut Feed::new(bytes, Progress::new()), &mut c);
        outcome(&c, res)
    }

    /// In chunks of `chunk` bytes, each parsed ahead from `from_per_mille` of it on (or not at
    /// all); also the number of events parsed ahead.
    fn in_chunks(bytes: &[u8], chunk: usize, from_per_mille: Option<usize>) -> (String, u64) {
        let progress = Progress::new();
        let ahead = |b: &[u8], _: usize| parse_ahead(b, b.len() * from_per_mille? / 1000);
        let ahead = from_per_mille.map(|_| &ahead);
        with_chunks_of(chunk, bytes, &progress, ahead, |ra| {
            let mut c = Collected::new();
            let res = scan(&mut Feed::chunks(ra, progress.clone()), &mut c);
            (outcome(&c, res), c.events_ahead)
        })
    }

    fn baseline_trace() -> Vec<u8> {
        use std::io::Read;
        let gz = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/kineto-cpu-baseline/trace.json.gz"
        );
        let mut real = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(gz).expect("baseline trace"))
            .read_to_end(&mut real)
            .expect("gunzip");
        real
    }

    /// PyTorch's own trace (6,158 `[memory]` events) reads the same with half of each chunk
    /// parsed ahead, in real-sized chunks and in small ones, as on one thread.
    #[test]
    fn a_real_trace_reads_the_same_parsed_ahead() {
        let real = baseline_trace();
        let want = one_thread(&real);
        for (chunk, from, least) in [
            (2 << 20, 500, 1000),
            (64 << 10, 500, 1000),
            (4096, 300, 1000),
            (777, 200, 1),
        ] {
            let (got, ahead) = in_chunks(&real, chunk, Some(from));
            assert_eq!(got, want, "chunks of {chunk}, ahead from {from}/1000");
            assert!(
                ahead >= least,
                "chunks of {chunk}: only {ahead} events parsed ahead"
            );
        }
    }

    /// Every Kineto fixture, in chunks small enough that each has several.
    #[test]
    fn the_fixtures_read_the_same_parsed_ahead() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kineto");
        let mut ahead_somewhere = 0;
        for f in std::fs::read_dir(dir).expect("fixtures") {
            let path = f.expect("entry").path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("fixture");
            let want = one_thread(&bytes);
            for chunk in [97, 256, 1000] {
                let (got, ahead) = in_chunks(&bytes, chunk, Some(400));
                assert_eq!(got, want, "{} in chunks of {chunk}", path.display());
                ahead_somewhere += ahead;
            }
        }
        assert!(ahead_somewhere > 0, "no fixture had an event parsed ahead");
    }

    /// Pieces of trace events, chosen to tempt the guess of where an event starts: `}, {`
    /// inside strings and inside args arrays, escapes, string and number thread ids.
    fn event() -> impl Strategy<Value = String> {
        let name = prop_oneof![
            Just("aten::mm"),
            Just("a\\\"b}, {"),
            Just("f.py(1): g"),
            Just("ProfilerStep#3"),
            Just("\\u00e9t\\u00e9"),
        ];
        let tid = prop_oneof![Just("7"), Just("\"7\""), Just("8"), Just("\"main}, {\"")];
        let ws = prop_oneof![Just(""), Just(" "), Just("\n    ")];
        prop_oneof![
            (0u32..5000, 1u64..9999, -512i64..4096, tid.clone(), ws.clone()).prop_map(
                |(ts, addr, bytes, tid, w)| format!(
                    r#"{{{w}"ph":"i",{w}"name":"[memory]","ts":{ts}.5,"tid":{tid},"args":{{"Addr":{addr},"Bytes":{bytes},"Total Allocated":{addr}}}{w}}}"#
                )
            ),
            (0u32..5000, 0u32..99, name, tid.clone(), ws.clone()).prop_map(|(ts, dur, name, tid, w)| format!(
                r#"{{"ph":"X",{w}"cat":"cpu_op","name":"{name}","ts":{ts},"dur":{dur},"tid":{tid},"args":{{"a":[{{"x":1}}, {{"y":"}}, {{"}}]}}}}"#
            )),
            (0u32..5000, tid.clone()).prop_map(|(ts, tid)| format!(
                r#"{{"ph":"X","cat":"python_function","name":"f.py(1): g","ts":{ts},"dur":1,"tid":{tid}}}"#
            )),
            (0u32..5000, ws.clone()).prop_map(|(ts, w)| format!(
                r#"{{"ph":"i","name":"[memory]","ts":{ts},{w}"args":{{"Bytes":"5"}}}}"#
            )),
            (0u32..5000).prop_map(|ts| format!(
                r#"{{"ph":"i","name":"[OutOfMemory]","ts":{ts},"args":{{"Bytes":1024,"Device Type":1}}}}"#
            )),
            Just(r#"{"ph":"M","name":"thread_name","args":{"name":"}, {\"ph\":\"X\"}"}}"#.to_string()),
            Just(r#"{"ph":"i","name":"[memory]","ts":1,"args":{"Bytes":1}}}, {"#.to_string()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Any trace — whole, cut short or with a byte spoiled — reads the same parsed ahead,
        /// whatever the chunk size and split, as on one thread: the same events, ids and
        /// error (offset, line and message).
        #[test]
        fn any_trace_reads_the_same_parsed_ahead(
            events in prop::collection::vec(event(), 0..60),
            sep in prop_oneof![Just(","), Just(",\n  "), Just(" , ")],
            chunk in 40usize..700,
            from in 0usize..1000,
            spoil in prop::option::of((any::<prop::sample::Index>(), prop_oneof![
                Just(None), Just(Some(b'x')), Just(Some(b'}')), Just(Some(b','))
            ])),
        ) {
            let mut bytes = format!("{{\"traceEvents\": [\n  {}\n]}}", events.join(sep)).into_bytes();
            if let Some((at, byte)) = spoil {
                let at = at.index(bytes.len());
                match byte {
                    None => bytes.truncate(at),
                    Some(b) => bytes[at] = b,
                }
            }
            let want = one_thread(&bytes);
            let (plain, _) = in_chunks(&bytes, chunk, None);
            let (ahead, _) = in_chunks(&bytes, chunk, Some(from));
            prop_assert_eq!(&ahead, &plain);
            // Offsets and lines of errors are the chunked reader's own; what was read is not.
            if !want.starts_with("Err") {
                prop_assert_eq!(&ahead, &want);
            }
        }
    }
}
