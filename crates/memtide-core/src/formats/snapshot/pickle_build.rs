//! The building half of the snapshot pickle decoder: the reading half (`from_pickle`, which
//! runs the interpreter) defines frames, stacks and trace-entry rows as [`Op`]s in file order,
//! numbered as it defines them; here they are interned into [`Raw`]. For a long file this
//! half runs on a second thread, fed batches through a bounded channel; applied in the same
//! order either way, the ids are the same.

use super::raw::{Extra, Frames, Raw, Row, CPP_BIT};
use crate::formats::Threads;
use crate::trace::{StackId, StrId};
use rustc_hash::FxHashMap;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;

/// A frame as the reading half found it (texts copied out of its arena).
#[derive(Debug)]
pub(super) enum FrameDef {
    /// `file:line:name` of a frame dict, short enough to be one text.
    Parts {
        file: Box<str>,
        line: i64,
        name: Box<str>,
    },
    /// A long frame, kept as parts: the file's and the name's arena ids (`u32::MAX`: absent)
    /// key their interned texts, and a text comes only with the first frame that uses it (a
    /// long file name is shared by many frames, and is not copied for each).
    Long {
        file_key: u32,
        file: Option<Box<str>>,
        line: i64,
        name_key: u32,
        name: Option<Box<str>>,
    },
    /// A frame with FX fields, its name already formatted.
    Named {
        file: Box<str>,
        line: i64,
        name: String,
    },
    /// A plain string where a frame belongs (some writers put those in frame lists).
    Text(Box<str>),
}

/// A trace entry, checked: `row.stack` holds a stack number of [`Ops`] (0: none), `row.name`
/// is unset. What few entries have is boxed, so the common op stays small.
#[derive(Debug)]
pub(super) struct RowDef {
    pub row: Row,
    pub rare: Option<Box<Rare>>,
}

/// The parts of a trace entry most have not: a name (`user_metadata`), `device_free` (of an
/// `oom`), kept fields.
#[derive(Debug, Default)]
pub(super) struct Rare {
    pub name: Option<Box<str>>,
    pub device_free: Option<u64>,
    pub extra: Option<Extra>,
}

#[derive(Debug)]
enum Op {
    /// Defines the next frame number.
    Frame(Box<FrameDef>),
    /// Defines the next stack number: frame numbers `frames[start..start + len]` of the batch.
    Stack { start: u32, len: u32 },
    /// The next row.
    Row(RowDef),
}

#[derive(Debug, Default)]
struct Batch {
    ops: Vec<Op>,
    frames: Vec<u32>,
}

impl Batch {
    fn clear(&mut self) {
        self.ops.clear();
        self.frames.clear();
    }
}

/// Interns what the ops define, in their order.
#[derive(Debug)]
pub(super) struct Builder {
    pub raw: Raw,
    frames: Frames,
    /// Arena string id → interned id (and C++-ness) for the parts of long frames.
    text_ids: FxHashMap<u32, (StrId, bool)>,
    /// Frame number → packed frame id ([`CPP_BIT`] set for C++ frames).
    frame_ids: Vec<u32>,
    /// Stack number → stack id; number 0 is no stack.
    stack_ids: Vec<StackId>,
    packed: Vec<u32>,
    /// The first failure (the rows after it are not built).
    error: Option<String>,
}

impl Builder {
    fn new(cpp_frames: bool) -> Builder {
        Builder {
            raw: Raw::new(),
            frames: Frames::new(cpp_frames),
            text_ids: FxHashMap::default(),
            frame_ids: Vec::new(),
            stack_ids: vec![StackId(0)],
            packed: Vec::new(),
            error: None,
        }
    }

    /// A builder standing for one whose thread failed (its ops are lost: the load fails).
    fn failed() -> Builder {
        let mut b = Builder::new(false);
        b.error = Some(THREAD_FAILED.into());
        b
    }

    /// The stack id of stack number `n` (defined by an op already applied).
    pub fn stack(&self, n: u32) -> StackId {
        self.stack_ids
            .get(n as usize)
            .copied()
            .unwrap_or(StackId(0))
    }

    fn apply(&mut self, b: &mut Batch) {
        let Batch { ops, frames } = b;
        for op in ops.iter_mut() {
            if self.error.is_some() {
                return;
            }
            match op {
                Op::Frame(f) => {
                    let p = self.frame(f);
                    self.frame_ids.push(p);
                }
                Op::Stack { start, len } => {
                    let (s, n) = (*start as usize, *len as usize);
                    let nums = frames.get(s..s + n).unwrap_or(&[]);
                    self.packed.clear();
                    let ids = &self.frame_ids;
                    self.packed.extend(
                        nums.iter()
                            .map(|&f| ids.get(f as usize).copied().unwrap_or(0)),
                    );
                    let id = self.frames.stack(&mut self.raw.strings, &self.packed);
                    self.stack_ids.push(id);
                }
                Op::Row(d) => self.row(d),
            }
        }
    }

    fn frame(&mut self, f: &FrameDef) -> u32 {
        match f {
            FrameDef::Parts { file, line, name } => {
                self.frames.frame(&mut self.raw.strings, file, *line, name)
            }
            FrameDef::Long {
                file_key,
                file,
                line,
                name_key,
                name,
            } => {
                let (fid, cpp) = self.text_id(*file_key, file.as_deref(), true);
                let (nid, _) = self.text_id(*name_key, name.as_deref(), false);
                let id = self.raw.strings.intern_frame_ids(fid, *line, nid).0 & !CPP_BIT;
                if cpp {
                    id | CPP_BIT
                } else {
                    id
                }
            }
            FrameDef::Named { file, line, name } => {
                self.frames.frame(&mut self.raw.strings, file, *line, name)
            }
            FrameDef::Text(t) => self.frames.frame_text(&mut self.raw.strings, t),
        }
    }

    /// The interned id of a text with arena id `key` and, for a file name, whether it is a
    /// C++ one; cached so a long text is hashed and scanned once (its text comes the first
    /// time only).
    fn text_id(&mut self, key: u32, text: Option<&str>, file: bool) -> (StrId, bool) {
        if let Some(&x) = self.text_ids.get(&key) {
            return x;
        }
        let text = text.unwrap_or("");
        let x = (
            self.raw.strings.intern(text),
            file && super::raw::is_cpp(text),
        );
        self.text_ids.insert(key, x);
        x
    }

    fn row(&mut self, d: &mut RowDef) {
        let mut row = d.row;
        row.stack = self.stack(row.stack.0);
        let rare = d.rare.take();
        let r = match self.raw.push_row(row) {
            Ok(r) => r,
            Err(e) => {
                self.error = Some(format!("trace entry {}: {e}", self.raw.rows.len()));
                return;
            }
        };
        let Some(rare) = rare else { return };
        if let Some(n) = rare.name.as_deref() {
            let n = self.raw.strings.intern(n);
            self.raw.row_names.insert(r, n);
        }
        if let Some(f) = rare.device_free {
            self.raw.device_free.insert(r, f);
        }
        if let Some(x) = rare.extra {
            let id = x.intern(&mut self.raw.strings);
            self.raw.row_extra.insert(r, id);
        }
    }
}

/// Ops in this many batches before a second thread is started ([`Threads::Auto`]): a small
/// file is done before a thread would pay.
const AUTO_AFTER_BATCHES: usize = 8;
/// Full batches on their way to the building thread, at most.
const IN_FLIGHT: usize = 4;
/// Ops per batch.
pub(super) const BATCH_OPS: usize = 4096;

enum Sink {
    Here(Box<Builder>),
    Thread {
        tx: SyncSender<Batch>,
        back: Receiver<Batch>,
        handle: JoinHandle<Option<Box<Builder>>>,
    },
    /// Only while switching between the two.
    Gone,
}

/// The reading half's end: numbers frames, stacks and rows as it defines them and passes
/// the ops on in batches.
pub(super) struct Ops {
    batch: Batch,
    sink: Sink,
    threads: Threads,
    batch_ops: usize,
    batches: usize,
    next_frame: u32,
    next_stack: u32,
    next_row: u32,
}

impl Ops {
    pub fn new(cpp_frames: bool, threads: Threads, batch_ops: usize) -> Ops {
        Ops {
            batch: Batch::default(),
            sink: Sink::Here(Box::new(Builder::new(cpp_frames))),
            threads,
            batch_ops: batch_ops.max(1),
            batches: 0,
            next_frame: 0,
            next_stack: 1,
            next_row: 0,
        }
    }

    /// Defines a frame: its number.
    pub fn frame(&mut self, f: FrameDef) -> u32 {
        let n = self.next_frame;
        self.next_frame = n.wrapping_add(1);
        self.push(Op::Frame(Box::new(f)));
        n
    }

    /// Defines a stack of frame numbers (innermost first): its number.
    pub fn stack(&mut self, frames: &[u32]) -> u32 {
        let n = self.next_stack;
        self.next_stack = n.wrapping_add(1);
        let start = self.batch.frames.len() as u32;
        self.batch.frames.extend_from_slice(frames);
        self.push(Op::Stack {
            start,
            len: frames.len() as u32,
        });
        n
    }

    /// Defines a row: its index.
    pub fn row(&mut self, d: RowDef) -> u32 {
        let r = self.next_row;
        self.next_row = r.wrapping_add(1);
        self.push(Op::Row(d));
        r
    }

    fn push(&mut self, op: Op) {
        self.batch.ops.push(op);
        if self.batch.ops.len() >= self.batch_ops {
            self.flush();
        }
    }

    /// The building half's failure, once seen (later ops are not built).
    pub fn error(&self) -> Option<&str> {
        match &self.sink {
            Sink::Here(b) => b.error.as_deref(),
            _ => None,
        }
    }

    fn flush(&mut self) {
        self.batches += 1;
        let spawn = match self.threads {
            Threads::One => false,
            Threads::Auto => self.batches > AUTO_AFTER_BATCHES,
            Threads::Always => true,
        };
        if spawn && matches!(self.sink, Sink::Here(ref b) if b.error.is_none()) {
            self.spawn();
        }
        match &mut self.sink {
            Sink::Here(b) => {
                b.apply(&mut self.batch);
                self.batch.clear();
            }
            Sink::Thread { tx, back, .. } => {
                let mut next = back.try_recv().unwrap_or_default();
                next.clear();
                let full = std::mem::replace(&mut self.batch, next);
                if tx.send(full).is_err() {
                    // The builder stopped at a failure: bring it back to report it.
                    self.join();
                }
            }
            Sink::Gone => {}
        }
    }

    /// Moves the builder to a thread of its own (it stays here if one cannot be started).
    fn spawn(&mut self) {
        let Sink::Here(b) = std::mem::replace(&mut self.sink, Sink::Gone) else {
            return;
        };
        let (tx, rx) = mpsc::sync_channel::<Batch>(IN_FLIGHT);
        let (back_tx, back) = mpsc::channel::<Batch>();
        let started = crate::worker::spawn("memtide-build", b, move |mut b: Box<Builder>| {
            for mut batch in rx {
                b.apply(&mut batch);
                if b.error.is_some() {
                    break;
                }
                batch.clear();
                let _ = back_tx.send(batch);
            }
            b
        });
        self.sink = match started {
            Ok(handle) => Sink::Thread { tx, back, handle },
            // No thread: the builder stays here.
            Err(b) => Sink::Here(b.unwrap_or_else(|| Box::new(Builder::failed()))),
        };
    }

    /// Brings the builder back to this thread (ops already sent are applied first).
    fn join(&mut self) {
        let Sink::Thread { .. } = self.sink else {
            return;
        };
        if let Sink::Thread { tx, handle, .. } = std::mem::replace(&mut self.sink, Sink::Gone) {
            drop(tx);
            let b = handle.join().ok().flatten();
            self.sink = Sink::Here(b.unwrap_or_else(|| Box::new(Builder::failed())));
        }
    }

    /// Every op applied, the builder here: for the reading half's last steps, which need
    /// the ids at once. (The thread builds what it was sent, then what is left is built
    /// here, after it.)
    pub fn here(&mut self) -> Result<&mut Builder, String> {
        self.join();
        match &mut self.sink {
            Sink::Here(b) => {
                b.apply(&mut self.batch);
                self.batch.clear();
                match &b.error {
                    Some(e) => Err(e.clone()),
                    None => Ok(b),
                }
            }
            _ => Err(THREAD_FAILED.into()),
        }
    }

    /// The finished builder.
    pub fn finish(mut self) -> Result<Builder, String> {
        self.here()?;
        match std::mem::replace(&mut self.sink, Sink::Gone) {
            Sink::Here(b) => Ok(*b),
            _ => Err(THREAD_FAILED.into()),
        }
    }
}

const THREAD_FAILED: &str = "the thread building the trace entries failed";
