//! Snapshot pickle → [`Raw`], the reading half: a [`Hook`] that checks each trace-entry dict
//! and defines its row the moment it is appended to its device list (so entries never pile
//! up as generic values), each memo-shared frame list once; the building half
//! (`pickle_build`) interns what it defines, on a second thread for a long file.

use super::entry_bytes;
use super::pickle_build::{FrameDef, Ops, Rare, RowDef, BATCH_OPS};
use super::raw::{
    is_placeholder_context, Action, Annotation, Block, BlockState, Extra, Raw, Row, Segment,
};
use crate::formats::error::FormatError;
use crate::formats::pickle::{unpickle_into, Arena, Hook, Val};
use crate::formats::Threads;
use crate::trace::StackId;
use std::collections::BTreeMap;
use std::io::Read;

/// Hook handle kinds.
const ENTRY: u8 = 0;
const STACK: u8 = 1;
const FRAME: u8 = 2;

/// The kinds above, as the byte reader of entries needs them.
const KINDS: entry_bytes::Kinds = entry_bytes::Kinds {
    frame: FRAME,
    stack: STACK,
};

/// Arena ids of the strings the reader looks for (strings are interned by value).
struct Keys {
    action: u32,
    addr: u32,
    size: u32,
    time_us: u32,
    frames: u32,
    device_free: u32,
    user_metadata: u32,
    filename: u32,
    line: u32,
    name: u32,
    stream: u32,
    pool_id: u32,
    compile_context: u32,
    forward_frames: u32,
    category: u32,
    /// FX frame fields (`augment_with_fx_traces=True`): op, node name, target, original trace.
    fx: [u32; 4],
    /// Arena string id → action, for the known action names.
    actions: Vec<(u32, Action)>,
    /// Arena string id → the trace-entry field it names (ids past the end: none).
    fields: Vec<Field>,
}

/// The trace-entry fields [`Conv::entry`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Stream,
    PoolId,
    CompileContext,
    ForwardFrames,
    Category,
    Addr,
    Size,
    TimeUs,
    DeviceFree,
    UserMetadata,
    Frames,
    Other,
}

impl Keys {
    fn new(a: &mut Arena) -> Keys {
        let mut k = Keys {
            action: a.intern("action"),
            addr: a.intern("addr"),
            size: a.intern("size"),
            time_us: a.intern("time_us"),
            frames: a.intern("frames"),
            device_free: a.intern("device_free"),
            user_metadata: a.intern("user_metadata"),
            filename: a.intern("filename"),
            line: a.intern("line"),
            name: a.intern("name"),
            stream: a.intern("stream"),
            pool_id: a.intern("pool_id"),
            compile_context: a.intern("compile_context"),
            forward_frames: a.intern("forward_frames"),
            category: a.intern("category"),
            fx: [
                a.intern("fx_node_op"),
                a.intern("fx_node_name"),
                a.intern("fx_node_target"),
                a.intern("fx_original_trace"),
            ],
            actions: Action::KNOWN
                .iter()
                .map(|&(n, act)| (a.intern(n), act))
                .collect(),
            fields: Vec::new(),
        };
        let named = [
            (k.stream, Field::Stream),
            (k.pool_id, Field::PoolId),
            (k.compile_context, Field::CompileContext),
            (k.forward_frames, Field::ForwardFrames),
            (k.category, Field::Category),
            (k.addr, Field::Addr),
            (k.size, Field::Size),
            (k.time_us, Field::TimeUs),
            (k.device_free, Field::DeviceFree),
            (k.user_metadata, Field::UserMetadata),
            (k.frames, Field::Frames),
        ];
        let len = named
            .iter()
            .map(|&(id, _)| id as usize + 1)
            .max()
            .unwrap_or(0);
        k.fields = vec![Field::Other; len];
        for (id, f) in named {
            k.fields[id as usize] = f;
        }
        k
    }

    fn field(&self, key: u32) -> Field {
        self.fields
            .get(key as usize)
            .copied()
            .unwrap_or(Field::Other)
    }
}

struct Conv {
    keys: Keys,
    /// Frames, stacks and rows as defined, numbered; interned by the building half.
    ops: Ops,
    /// Unknown actions and how often each occurred.
    unknown_actions: BTreeMap<String, u64>,
    packed: Vec<u32>,
    /// Reused buffer of flat key/value items.
    items: Vec<Val>,
    /// Frames already seen, keyed by the arena ids of their (memo-shared) strings: writers
    /// that do not share frame dicts still share the strings, and formatting plus interning
    /// "file:line:name" for every frame dominated the load.
    frame_cache: rustc_hash::FxHashMap<(u32, i64, u32), u32>,
    /// Arena ids of the texts of long frames already passed on (each goes once).
    long_texts: rustc_hash::FxHashSet<u32>,
    /// Reused buffers of the entry read straight from the bytes.
    scanned: entry_bytes::Scanned,
    /// Stacks of entries read straight from the bytes, by the bytes of their frames list.
    stack_spans: entry_bytes::StackSpans,
    /// Whether entries may be read straight from the bytes (off: the reference reader).
    entry_bytes: bool,
    /// The keys of the last entry read straight from the bytes.
    entry_keys: EntryKeys,
    /// Whether the interpreter was handed the building half's failure (its error then
    /// names it, with the byte offset).
    builder_failure_reported: bool,
}

/// The key sequence of the last plain entry, already checked: writers give every entry the
/// same keys in the same order, so an entry is checked by comparing its keys with these.
#[derive(Default)]
struct EntryKeys {
    /// Arena ids of the str keys.
    keys: Vec<u32>,
    action_at: usize,
}

impl EntryKeys {
    /// Where the `action` key is among flat key/value `items`; None unless the keys are at
    /// most 16 and distinct, one of them `action`.
    fn action_at(&mut self, items: &[Val], action: u32) -> Option<usize> {
        let same = !self.keys.is_empty()
            && items.len() == 2 * self.keys.len()
            && items
                .iter()
                .step_by(2)
                .zip(&self.keys)
                .all(|(k, &s)| matches!(*k, Val::Str(x) if x == s));
        if same {
            return Some(self.action_at);
        }
        if items.len() > 32 {
            return None;
        }
        let mut at = None;
        for (i, kv) in items.chunks_exact(2).enumerate() {
            if items[..2 * i].chunks_exact(2).any(|p| p[0] == kv[0]) {
                return None;
            }
            if kv[0] == Val::Str(action) {
                at = Some(2 * i);
            }
        }
        let at = at?;
        self.keys.clear();
        for k in items.iter().step_by(2) {
            match *k {
                Val::Str(x) => self.keys.push(x),
                // (Not remembered: only str keys are compared.)
                _ => {
                    self.keys.clear();
                    return Some(at);
                }
            }
        }
        self.action_at = at;
        Some(at)
    }
}

impl Hook for Conv {
    fn appended(&mut self, a: &mut Arena, v: Val) -> Result<Val, String> {
        if let Some(e) = self.ops.error() {
            self.builder_failure_reported = true;
            return Err(e.to_string());
        }
        let Val::Dict(id) = v else {
            return Ok(v);
        };
        match a.dict_sealed(id) {
            // Converted as its items were set, and fetched from the memo before that (else
            // it stands as its conversion already: `stands_converted`).
            Some((ENTRY, r)) => {
                a.consume_dict(id, r, Val::Done(ENTRY, r));
                return Ok(Val::Done(ENTRY, r));
            }
            Some(_) => return Ok(v),
            None => {}
        }
        // Only trace entries have an `action` (frame dicts cache a different conversion).
        let Some(act) = a.get(id, self.keys.action) else {
            return Ok(v);
        };
        if let Some(r) = a.dict_conv(id) {
            return Ok(Val::Done(ENTRY, r));
        }
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        for &(k, v) in a.dict(id) {
            items.push(k);
            items.push(v);
        }
        let r = self.entry_row(a, &items, act);
        self.items = items;
        let r = r?;
        a.consume_dict(id, r, Val::Done(ENTRY, r));
        Ok(Val::Done(ENTRY, r))
    }

    fn dict_filled(&mut self, a: &mut Arena, items: &[Val]) -> Result<Option<(u8, u32)>, String> {
        // Only small dicts with distinct str keys (then the last-write-wins order of a
        // Python dict cannot matter); anything else takes the general path.
        if items.len() > 32 {
            return Ok(None);
        }
        let k = &self.keys;
        let (mut act, mut has_filename, mut other) = (None, false, false);
        for (i, kv) in items.chunks_exact(2).enumerate() {
            let Val::Str(key) = kv[0] else {
                return Ok(None);
            };
            if items[..2 * i].chunks_exact(2).any(|p| p[0] == kv[0]) {
                return Ok(None);
            }
            if key == k.action {
                act = Some(kv[1]);
            } else if key == k.filename {
                has_filename = true;
            } else if key == k.line || key == k.name || k.fx.contains(&key) {
            } else {
                other = true;
            }
        }
        if let Some(act) = act {
            return Ok(Some((ENTRY, self.entry_row(a, items, act)?)));
        }
        // A frame names its file (a user's metadata dict with a `name` is not one); other
        // frame-shaped dicts are converted when their list is.
        if has_filename && !other {
            return Ok(Some((FRAME, self.frame_from(a, items))));
        }
        Ok(None)
    }

    /// A trace entry is its row from the moment it is read: nothing reads an entry's items
    /// again.
    fn stands_converted(&self, kind: u8) -> bool {
        kind == ENTRY
    }

    fn fast_dict(&mut self, a: &mut Arena, bytes: &[u8]) -> Option<(Val, usize)> {
        if !self.entry_bytes {
            return None;
        }
        let mut s = std::mem::take(&mut self.scanned);
        let out = self.entry_from_bytes(a, bytes, &mut s);
        self.scanned = s;
        out
    }
}

impl Conv {
    /// A trace entry read straight from its bytes ([`entry_bytes`]), converted as
    /// [`Hook::dict_filled`] converts the same items; None when the bytes are not the plain
    /// shape or the conversion fails (the interpreter then reads the entry and says why).
    fn entry_from_bytes(
        &mut self,
        a: &mut Arena,
        bytes: &[u8],
        s: &mut entry_bytes::Scanned,
    ) -> Option<(Val, usize)> {
        self.stack_spans.check(a);
        if !entry_bytes::scan(bytes, a, self.keys.frames, KINDS, &self.stack_spans, s) {
            return None;
        }
        // As dict_filled: at most 16 distinct str keys, one of them `action`. Checked here,
        // not by calling dict_filled: its conversion needs the stack interned first, and a
        // dict it refuses must not have interned one.
        let at = self.entry_keys.action_at(&s.items, self.keys.action)?;
        let act = s.items.get(at + 1).copied()?;
        // Checked first: a dict refused here must not have defined a stack.
        let mut def = self.entry(a, &s.items, act).ok()?;
        let stack = match (s.frames_at, s.known_stack) {
            (None, _) => None,
            (Some(_), Some(n)) => Some(n),
            (Some(_), None) => {
                let n = self.ops.stack(&s.frames);
                if let Some((from, to)) = s.frames_span {
                    self.stack_spans.insert(bytes.get(from..to)?, n);
                }
                Some(n)
            }
        };
        if let Some(n) = stack {
            def.row.stack = StackId(n);
        }
        let r = self.ops.row(def);
        // The entry stands as its conversion at once, in its place and in the memo, as the
        // interpreter leaves an entry it sealed (`stands_converted`): no dict is made.
        let dict = Val::Done(ENTRY, r);
        for &st in &s.stores {
            match st {
                entry_bytes::Store::Dict(idx) => a.memo_store(idx, dict),
                entry_bytes::Store::List(idx) => {
                    a.memo_store(idx, Val::Done(STACK, stack.unwrap_or(0)));
                }
            }
        }
        Some((dict, s.used))
    }
}

fn int_field(key: &str, v: Val) -> Result<u64, String> {
    match v {
        Val::Big { .. } => Err(format!(
            "trace entry field '{key}' is an integer too large for 64 bits"
        )),
        // `as_u64` would wrap it to about 16 EiB.
        Val::Int(i) if i < 0 => Err(format!(
            "trace entry field '{key}' is {i}: expected 0 to {}",
            u64::MAX
        )),
        _ => v.as_u64().ok_or_else(|| {
            format!(
                "trace entry field '{key}' must be an int, found {}",
                v.type_name()
            )
        }),
    }
}

/// A time in µs: a signed 64-bit integer; one out of that range says so and what the range
/// is (not "must be an int, found int").
fn time_field(v: Val) -> Result<i64, String> {
    match v {
        Val::UInt(u) => Err(format!(
            "trace entry field 'time_us' is {u}: expected a signed 64-bit µs count, {} to {}",
            i64::MIN,
            i64::MAX
        )),
        Val::Big { negative } => Err(format!(
            "trace entry field 'time_us' is an integer {} than 64 bits hold: expected a signed 64-bit µs count, {} to {}",
            if negative { "more negative" } else { "larger" },
            i64::MIN,
            i64::MAX
        )),
        _ => v.as_i64().ok_or_else(|| {
            format!(
                "trace entry field 'time_us' must be an int, found {}",
                v.type_name()
            )
        }),
    }
}

/// A byte count: a negative one is an error (it would wrap to about 16 EiB).
fn size_field(key: &str, v: Val) -> Result<u64, String> {
    match v {
        Val::Int(i) if i < 0 => Err(format!(
            "trace entry field '{key}' is negative ({i}): a size cannot be"
        )),
        _ => int_field(key, v),
    }
}

impl Conv {
    /// Converts one trace entry (flat key/value items, distinct keys) into a row: its index.
    fn entry_row(&mut self, a: &mut Arena, items: &[Val], act: Val) -> Result<u32, String> {
        let def = self.entry(a, items, act)?;
        Ok(self.ops.row(def))
    }

    /// Checks one trace entry (flat key/value items, distinct keys) and reads its row.
    fn entry(&mut self, a: &mut Arena, items: &[Val], act: Val) -> Result<RowDef, String> {
        let k = &self.keys;
        let action = match act {
            Val::Str(s) => match k.actions.iter().find(|(n, _)| *n == s) {
                Some(&(_, x)) => x,
                None => {
                    super::raw::count_unknown_action(&mut self.unknown_actions, a.str(s));
                    Action::Unknown
                }
            },
            other => {
                return Err(format!(
                    "trace entry field 'action' must be a str, found {}",
                    other.type_name()
                ))
            }
        };
        let mut row = Row {
            addr: 0,
            size: 0,
            time_us: 0,
            stack: StackId(0),
            action,
            has_time: false,
            category: None,
        };
        let mut device_free = None;
        let mut name = None;
        // (Made only for the rare entry with a kept field.)
        let mut extra: Option<Extra> = None;
        let mut put = |k: &str, v| extra.get_or_insert_with(Extra::default).put(k, v);
        for kv in items.chunks_exact(2) {
            let (key, val) = (kv[0], kv[1]);
            let Val::Str(key) = key else { continue };
            match self.keys.field(key) {
                Field::Stream => {
                    if let Some(v) = val.as_u64().filter(|&v| v != 0) {
                        put("stream", v.into());
                    }
                }
                Field::PoolId => {
                    let zero = match val {
                        Val::Tuple(t) => a.tuple(t).iter().all(|x| x.as_i64() == Some(0)),
                        Val::None => true,
                        _ => false,
                    };
                    if !zero {
                        let v = val_json(a, val, 0);
                        if !is_default_pool(&v) {
                            put("pool_id", v);
                        }
                    }
                }
                Field::CompileContext => match val {
                    Val::Str(s) if is_placeholder_context(a.str(s)) => {}
                    Val::None => {}
                    v => put("compile_context", val_json(a, v, 0)),
                },
                Field::ForwardFrames => {
                    let empty = matches!(val, Val::None)
                        || matches!(val, Val::List(l) if a.list(l).is_empty());
                    if !empty {
                        put("forward_frames", val_json(a, val, 0));
                    }
                }
                Field::Category => {
                    if let Val::Str(c) = val {
                        row.category = super::raw::entry_category(a.str(c));
                    }
                }
                Field::Addr => row.addr = int_field("addr", val)?,
                Field::Size => row.size = size_field("size", val)?,
                Field::TimeUs => {
                    row.time_us = time_field(val)?;
                    row.has_time = true;
                }
                Field::DeviceFree => device_free = Some(int_field("device_free", val)?),
                Field::UserMetadata => match val {
                    Val::Str(s) => {
                        let s = a.str(s);
                        if !s.is_empty() {
                            name = Some(s.into());
                        }
                    }
                    // (A dict the hook took for a frame has no JSON form left.)
                    Val::None | Val::Done(..) => {}
                    // A dict or list of metadata: kept as its JSON text.
                    v => {
                        name = Some(val_json(a, v, 0).to_string().into());
                    }
                },
                Field::Frames => row.stack = self.stack_val(a, val)?,
                Field::Other => {}
            }
        }
        let extra = extra.filter(|x| !x.is_empty());
        let rare = (name.is_some() || device_free.is_some() || extra.is_some()).then(|| {
            Box::new(Rare {
                name,
                device_free,
                extra,
            })
        });
        Ok(RowDef { row, rare })
    }

    /// The interned stack of a `frames` value.
    fn stack_val(&mut self, a: &mut Arena, v: Val) -> Result<StackId, String> {
        match v {
            Val::List(l) => self.stack_of(a, l),
            Val::Done(STACK, s) => Ok(StackId(s)),
            Val::None => Ok(StackId(0)),
            other => Err(format!(
                "'frames' must be a list of frame dicts, found {}",
                other.type_name()
            )),
        }
    }

    fn stack_of(&mut self, a: &mut Arena, l: u32) -> Result<StackId, String> {
        if let Some(s) = a.list_conv(l) {
            return Ok(StackId(s));
        }
        let mut packed = std::mem::take(&mut self.packed);
        packed.clear();
        // The items are taken out (consume_list below drops them anyway, and an error
        // ends the load), so each frame is read without a lookup of the list.
        let items = a.list_mut(l).map(std::mem::take).unwrap_or_default();
        for &item in &items {
            let p = match item {
                Val::Dict(f) => self.frame_of(a, f)?,
                Val::Done(FRAME, p) => p,
                // Some writers (FX) put plain strings in frame lists.
                Val::Str(s) => self.ops.frame(FrameDef::Text(a.str(s).into())),
                other => {
                    return Err(format!(
                        "a frame must be a dict {{filename, line, name}}, found {}",
                        other.type_name()
                    ))
                }
            };
            packed.push(p);
        }
        let s = self.ops.stack(&packed);
        self.packed = packed;
        a.consume_list(l, s, Val::Done(STACK, s));
        Ok(StackId(s))
    }

    fn frame_of(&mut self, a: &mut Arena, f: u32) -> Result<u32, String> {
        match a.dict_sealed(f) {
            Some((FRAME, p)) => {
                a.consume_dict(f, p, Val::Done(FRAME, p));
                return Ok(p);
            }
            // A trace entry where a frame belongs: its frame fields are all missing.
            Some(_) => return Ok(self.frame_from(a, &[])),
            None => {}
        }
        if let Some(p) = a.dict_conv(f) {
            return Ok(p);
        }
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        for &(k, v) in a.dict(f) {
            items.push(k);
            items.push(v);
        }
        let p = self.frame_from(a, &items);
        self.items = items;
        a.consume_dict(f, p, Val::Done(FRAME, p));
        Ok(p)
    }

    /// The interned frame of a frame dict's flat key/value items.
    fn frame_from(&mut self, a: &Arena, items: &[Val]) -> u32 {
        let k = &self.keys;
        let (mut file, mut line, mut name) = (None, 0i64, None);
        let mut fx: [Option<u32>; 4] = [None; 4];
        for kv in items.chunks_exact(2) {
            match (kv[0], kv[1]) {
                (Val::Str(key), Val::Str(s)) if key == k.filename => file = Some(s),
                (Val::Str(key), Val::Str(s)) if key == k.name => name = Some(s),
                (Val::Str(key), v) if key == k.line => line = v.as_i64().unwrap_or(0),
                (Val::Str(key), Val::Str(s)) => {
                    if let Some(i) = k.fx.iter().position(|&f| f == key) {
                        fx[i] = Some(s);
                    }
                }
                _ => {}
            }
        }
        if fx.iter().any(Option::is_some) {
            let f = fx.map(|x| x.map_or("", |s| a.str(s)));
            let name = super::raw::fx_name(name.map_or("", |s| a.str(s)), f);
            let file = file.map_or("", |s| a.str(s));
            let file = file.into();
            return self.ops.frame(FrameDef::Named { file, line, name });
        }
        let key = (
            file.map_or(u32::MAX, |s| s),
            line,
            name.map_or(u32::MAX, |s| s),
        );
        let p = match self.frame_cache.get(&key) {
            Some(&p) => p,
            None => {
                let (fs, ns) = (file.map_or("", |s| a.str(s)), name.map_or("", |s| a.str(s)));
                let def = if fs.len() + ns.len() > crate::trace::intern::LONG_FRAME {
                    let mut text = |k: u32, t: &str| self.long_texts.insert(k).then(|| t.into());
                    FrameDef::Long {
                        file_key: key.0,
                        file: text(key.0, fs),
                        line,
                        name_key: key.2,
                        name: text(key.2, ns),
                    }
                } else {
                    FrameDef::Parts {
                        file: fs.into(),
                        line,
                        name: ns.into(),
                    }
                };
                let p = self.ops.frame(def);
                self.frame_cache.insert(key, p);
                p
            }
        };
        p
    }
}

/// Reads a snapshot pickle into [`Raw`] (frames, stacks and rows built on a second thread
/// once the file proves long).
pub fn read(r: impl Read, cpp_frames: bool) -> Result<Raw, FormatError> {
    read_with(r, cpp_frames, true, Threads::Auto, BATCH_OPS)
}

/// [`read`] with the threads a load may use.
pub fn read_threads(r: impl Read, cpp_frames: bool, threads: Threads) -> Result<Raw, FormatError> {
    read_with(r, cpp_frames, true, threads, BATCH_OPS)
}

/// [`read_threads`] passing `batch_ops` ops per batch to the building half (tests: the
/// same `Raw` whatever the batches).
#[doc(hidden)]
pub fn read_in_batches(
    r: impl Read,
    cpp_frames: bool,
    threads: Threads,
    batch_ops: usize,
) -> Result<Raw, FormatError> {
    read_with(r, cpp_frames, true, threads, batch_ops)
}

/// [`read`] with every trace entry read opcode by opcode (no `entry_bytes` fast path), on
/// this thread only: the reference the fast path is tested against.
pub fn read_opcode_by_opcode(r: impl Read, cpp_frames: bool) -> Result<Raw, FormatError> {
    read_with(r, cpp_frames, false, Threads::One, BATCH_OPS)
}

fn read_with(
    r: impl Read,
    cpp_frames: bool,
    entry_bytes: bool,
    threads: Threads,
    batch_ops: usize,
) -> Result<Raw, FormatError> {
    let mut arena = Arena::new();
    let keys = Keys::new(&mut arena);
    let mut conv = Conv {
        keys,
        ops: Ops::new(cpp_frames, threads, batch_ops),
        unknown_actions: BTreeMap::new(),
        packed: Vec::new(),
        items: Vec::new(),
        frame_cache: Default::default(),
        long_texts: Default::default(),
        scanned: Default::default(),
        stack_spans: Default::default(),
        entry_bytes,
        entry_keys: EntryKeys::default(),
        builder_failure_reported: false,
    };
    let top = match unpickle_into(r, &mut arena, &mut conv) {
        Ok(top) => top,
        Err(e) => {
            // A failure of the building half came first in the file (it builds what was
            // read), unless the interpreter stopped at it.
            let reported = conv.builder_failure_reported;
            return Err(match conv.raw() {
                Err(b) if !reported => b,
                _ => e,
            });
        }
    };
    conv.raw()?;
    arena.drop_memo();
    collect(&mut arena, &mut conv, top)?;
    let mut raw = conv.ops.finish().map_err(FormatError::Invalid)?.raw;
    raw.unknown_actions = conv.unknown_actions;
    Ok(raw)
}

impl Conv {
    /// The decoded snapshot so far, every op built (for the last steps, which need the ids).
    fn raw(&mut self) -> Result<&mut Raw, FormatError> {
        match self.ops.here() {
            Ok(b) => Ok(&mut b.raw),
            Err(e) => Err(FormatError::Invalid(e)),
        }
    }

    /// The interned stack of a `frames` value, at once.
    fn stack_now(&mut self, a: &mut Arena, v: Val) -> Result<StackId, String> {
        let n = self.stack_val(a, v)?;
        Ok(self.ops.here()?.stack(n.0))
    }
}

/// At most this many values are converted from one kept field: the pickle's memo lets a small
/// file share one container everywhere (even inside itself), and a walk that copies it at every
/// reference grows exponentially with the nesting (a 5.7 KB mutant of a real snapshot took
/// 6 s: a `segment_pool_id` holding the segment list that holds it). Real kept fields (a pool
/// id, a stream, a compile context, user metadata, forward frames) are far smaller.
const KEPT_VALUE_NODES: usize = 4096;

/// A pickled value as JSON (for kept fields); containers deeper than 8 levels and
/// converted objects become `null`, and a value of more than [`KEPT_VALUE_NODES`] items is
/// replaced by a string saying so.
fn val_json(a: &Arena, v: Val, depth: u32) -> serde_json::Value {
    let mut budget = KEPT_VALUE_NODES;
    json_within(a, v, depth, &mut budget).unwrap_or_else(|| {
        serde_json::Value::String(format!(
            "<a value of over {KEPT_VALUE_NODES} items, not kept>"
        ))
    })
}

/// [`val_json`] within `budget` items; `None` when it runs out.
fn json_within(a: &Arena, v: Val, depth: u32, budget: &mut usize) -> Option<serde_json::Value> {
    use serde_json::Value as J;
    *budget = budget.checked_sub(1)?;
    if depth > 8 {
        return Some(J::Null);
    }
    Some(match v {
        Val::None | Val::Done(..) | Val::Big { .. } => J::Null,
        Val::Bool(b) => J::Bool(b),
        Val::Int(i) => i.into(),
        Val::UInt(u) => u.into(),
        Val::Float(f) => serde_json::Number::from_f64(f).map_or(J::Null, J::Number),
        Val::Str(s) => a.str(s).into(),
        Val::Bytes(_) => "<bytes>".into(),
        Val::List(l) => J::Array(
            a.list(l)
                .iter()
                .map(|x| json_within(a, x, depth + 1, budget))
                .collect::<Option<_>>()?,
        ),
        Val::Tuple(t) => J::Array(
            a.tuple(t)
                .iter()
                .map(|&x| json_within(a, x, depth + 1, budget))
                .collect::<Option<_>>()?,
        ),
        Val::Dict(d) => {
            let mut m = serde_json::Map::new();
            for &(k, x) in a.dict(d) {
                let key = match k {
                    Val::Str(s) => a.str(s).to_string(),
                    other => json_within(a, other, depth + 1, budget)?.to_string(),
                };
                m.insert(key, json_within(a, x, depth + 1, budget)?);
            }
            J::Object(m)
        }
    })
}

/// `(0, 0)` (or absent) is the default pool.
fn is_default_pool(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(x) => x.iter().all(|e| e.as_i64() == Some(0)),
        _ => false,
    }
}

fn invalid(what: String) -> FormatError {
    FormatError::Invalid(format!("not a PyTorch memory snapshot: {what}"))
}

/// The whole pickle was read and its top-level value is not a snapshot's: certainly not a
/// trace (a job's listing skips it).
fn not_a_snapshot(what: String) -> FormatError {
    FormatError::NotATrace(format!("not a PyTorch memory snapshot: {what}"))
}

/// Walks the top-level dict: device lists (rows already converted), segments, annotations,
/// allocator settings and pinned host memory. A bare list is `torch.cuda.memory_snapshot()`'s
/// list of segments.
fn collect(a: &mut Arena, c: &mut Conv, top: Val) -> Result<(), FormatError> {
    let mut host = (None, None);
    let (segments, traces, annotations) = match top {
        Val::Dict(t) => {
            let seg = a.intern("segments");
            let dt = a.intern("device_traces");
            let ann = a.intern("external_annotations");
            let (s, d, n) = (a.get(t, seg), a.get(t, dt), a.get(t, ann));
            if s.is_none() && d.is_none() {
                return Err(not_a_snapshot(
                    "the top-level dict has neither 'segments' nor 'device_traces'".into(),
                ));
            }
            let settings = a.intern("allocator_settings");
            match a.get(t, settings) {
                None | Some(Val::None) => {}
                Some(v) => c.raw()?.allocator_settings = Some(val_json(a, v, 0).to_string()),
            }
            let (hs, ht) = (a.intern("host_segments"), a.intern("host_traces"));
            host = (a.get(t, hs), a.get(t, ht));
            (s, d, n)
        }
        Val::List(l) => {
            // Only a list of segment dicts is a snapshot (an empty list is an idle device).
            let (addr, total) = (a.intern("address"), a.intern("total_size"));
            for (i, v) in a.list(l).iter().enumerate() {
                let ok = matches!(v, Val::Dict(d) if a.get(d, addr).is_some() && a.get(d, total).is_some());
                if !ok {
                    return Err(not_a_snapshot(format!(
                        "the pickle holds a list whose item {i} is not a segment dict with 'address' and 'total_size' (found {})",
                        v.type_name()
                    )));
                }
            }
            (Some(top), None, None)
        }
        other => {
            return Err(not_a_snapshot(format!(
                "the pickle holds a {}, expected a dict",
                other.type_name()
            )))
        }
    };
    if let Some(d) = traces {
        c.raw()?.has_traces_key = true;
        let Val::List(dl) = d else {
            return Err(invalid(format!(
                "'device_traces' is a {}, expected a list",
                d.type_name()
            )));
        };
        let devs: Vec<Val> = a.list(dl).to_vec();
        for (di, dv) in devs.into_iter().enumerate() {
            let rows = entry_rows(a, c, dv, &format!("device_traces[{di}]"))?;
            c.raw()?.devices.push(rows);
        }
    }
    if let Some(s) = segments {
        let segs = read_segments(a, c, s, "segments")?;
        let raw = c.raw()?;
        raw.segments = segs;
        raw.has_segments_key = true;
    }
    if let Some(Val::List(al)) = annotations {
        read_annotations(a, c.raw()?, al);
    }
    let (hs, ht) = host;
    if hs.is_some() || ht.is_some() {
        c.raw()?.has_host = true;
    }
    if let Some(ht) = ht.filter(|v| *v != Val::None) {
        // One list of entries, or (like device_traces) a list of such lists.
        let lists: Vec<Val> = match ht {
            Val::List(l) if a.list(l).iter().all(|v| matches!(v, Val::List(_))) => {
                a.list(l).to_vec()
            }
            v => vec![v],
        };
        for (i, v) in lists.into_iter().enumerate() {
            let rows = entry_rows(a, c, v, &format!("host_traces[{i}]"))?;
            c.raw()?.host_rows.extend(rows);
        }
    }
    if let Some(hs) = hs.filter(|v| *v != Val::None) {
        let segs = read_segments(a, c, hs, "host_segments")?;
        c.raw()?.host_segments = segs;
    }
    Ok(())
}

/// The row indices of one list of (already converted) trace entries.
fn entry_rows(a: &Arena, c: &mut Conv, v: Val, what: &str) -> Result<Vec<u32>, FormatError> {
    let Val::List(el) = v else {
        return Err(invalid(format!(
            "{what} is a {}, expected a list",
            v.type_name()
        )));
    };
    let mut rows = Vec::with_capacity(a.list(el).len());
    for e in a.list(el).iter() {
        match e {
            Val::Done(ENTRY, r) => rows.push(r),
            _ => c.raw()?.skipped_items += 1,
        }
    }
    Ok(rows)
}

fn field_u64(a: &Arena, d: u32, key: &str, what: &str) -> Result<Option<u64>, FormatError> {
    let Some(k) = a.find(key) else {
        return Ok(None);
    };
    match a.get(d, k) {
        None | Some(Val::None) => Ok(None),
        Some(Val::Big { .. }) => Err(invalid(format!(
            "{what}.{key} is an integer too large for 64 bits"
        ))),
        Some(Val::Int(i)) if i < 0 && key.contains("size") => Err(invalid(format!(
            "{what}.{key} is negative ({i}): a size cannot be"
        ))),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| {
            invalid(format!(
                "{what}.{key} is a {}, expected an int",
                v.type_name()
            ))
        }),
    }
}

fn read_segments(
    a: &mut Arena,
    c: &mut Conv,
    s: Val,
    key: &str,
) -> Result<Vec<Segment>, FormatError> {
    let Val::List(sl) = s else {
        return Err(invalid(format!(
            "'{key}' is a {}, expected a list",
            s.type_name()
        )));
    };
    let mut out = Vec::new();
    let seg_keys = [
        a.intern("stream"),
        a.intern("segment_type"),
        a.intern("segment_pool_id"),
        a.intern("is_expandable"),
    ];
    let block_keys = [a.intern("user_metadata"), a.intern("forward_frames")];
    let blocks_k = a.intern("blocks");
    let state_k = a.intern("state");
    let segs: Vec<Val> = a.list(sl).to_vec();
    for (si, sv) in segs.into_iter().enumerate() {
        let Val::Dict(sd) = sv else {
            return Err(invalid(format!(
                "{key}[{si}] is a {}, expected a dict",
                sv.type_name()
            )));
        };
        let what = format!("{key}[{si}]");
        let device = field_u64(a, sd, "device", &what)?.unwrap_or(0);
        let address = field_u64(a, sd, "address", &what)?.unwrap_or(0);
        let total_size = field_u64(a, sd, "total_size", &what)?.unwrap_or(0);
        let mut blocks = Vec::new();
        if let Some(Val::List(bl)) = a.get(sd, blocks_k) {
            let bvals: Vec<Val> = a.list(bl).to_vec();
            for (bi, bv) in bvals.into_iter().enumerate() {
                let Val::Dict(bd) = bv else {
                    return Err(invalid(format!(
                        "{what}.blocks[{bi}] is a {}, expected a dict",
                        bv.type_name()
                    )));
                };
                let bw = format!("{what}.blocks[{bi}]");
                let size = field_u64(a, bd, "size", &bw)?.unwrap_or(0);
                let requested = field_u64(a, bd, "requested_size", &bw)?.unwrap_or(size);
                let state = match a.get(bd, state_k) {
                    Some(Val::Str(s)) => BlockState::parse(a.str(s)),
                    _ => BlockState::Other,
                };
                let stack = match a.get(bd, c.keys.frames) {
                    Some(v) => c
                        .stack_now(a, v)
                        .map_err(|e| invalid(format!("{bw}: {e}")))?,
                    None => StackId(0),
                };
                let mut extra = Extra::default();
                for (k, name) in block_keys.iter().zip(["user_metadata", "forward_frames"]) {
                    let v = a
                        .get(bd, *k)
                        .map_or(serde_json::Value::Null, |v| val_json(a, v, 0));
                    let empty = match &v {
                        serde_json::Value::Null => true,
                        serde_json::Value::String(s) => s.is_empty(),
                        serde_json::Value::Array(l) => l.is_empty(),
                        _ => false,
                    };
                    if !empty {
                        extra.put(name, v);
                    }
                }
                blocks.push(Block {
                    size,
                    requested,
                    state,
                    stack,
                    extra: extra.intern(&mut c.raw()?.strings),
                });
            }
        }
        let stack = match a.get(sd, c.keys.frames) {
            Some(v) => c
                .stack_now(a, v)
                .map_err(|e| invalid(format!("{what}: {e}")))?,
            None => StackId(0),
        };
        let mut extra = Extra::default();
        for (k, name) in
            seg_keys
                .iter()
                .zip(["stream", "segment_type", "segment_pool_id", "is_expandable"])
        {
            if let Some(v) = a.get(sd, *k) {
                let j = val_json(a, v, 0);
                let default = match name {
                    "stream" => j.as_u64() == Some(0),
                    "segment_pool_id" => is_default_pool(&j),
                    _ => j.is_null(),
                };
                if !default {
                    extra.put(name, j);
                }
            }
        }
        out.push(Segment {
            device,
            address,
            total_size,
            blocks,
            stack,
            extra: extra.intern(&mut c.raw()?.strings),
        });
    }
    Ok(out)
}

fn read_annotations(a: &mut Arena, raw: &mut Raw, al: u32) {
    let (name_k, stage_k, dev_k, t_k) = (
        a.intern("name"),
        a.intern("stage"),
        a.intern("device"),
        a.intern("time_us"),
    );
    let items: Vec<Val> = a.list(al).to_vec();
    let mut out = Vec::new();
    for v in items {
        let Val::Dict(d) = v else { continue };
        let name = match a.get(d, name_k) {
            Some(Val::Str(s)) => a.str(s).to_string(),
            _ => continue,
        };
        let start = !matches!(a.get(d, stage_k), Some(Val::Str(s)) if a.str(s) == "END");
        let device = a.get(d, dev_k).and_then(|v| v.as_u64());
        let Some(time_us) = a.get(d, t_k).and_then(|v| v.as_i64()) else {
            continue;
        };
        out.push(Annotation {
            device,
            name,
            start,
            time_us,
        });
    }
    raw.annotations.extend(out);
}
