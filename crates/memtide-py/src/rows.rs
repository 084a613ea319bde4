//! The live set as Python rows (`Trace.live_at`, `live_at_peak`): worked out on a worker
//! thread into a [`Table`] that holds each text (shortened to `TEXT_CAP`) and each stack once,
//! then made into dicts on the calling thread — one Python string per distinct text, one tuple
//! per distinct stack, shared by every row that has it — looking for Ctrl-C every [`CHUNK`]
//! rows. A 1 MiB name on every row costs one short string; a 1,000-frame stack shared by
//! 100,000 rows, one tuple.

use crate::questions::number;
use anyhow::{bail, Result};
use memtide_core::analysis::{entry_with, FrameRules, FrameView, StackFrames};
use memtide_core::clip::clip;
use memtide_core::open::Device;
use memtide_core::trace::StackId;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use std::collections::HashMap;

/// Rows made into dicts between two looks for Ctrl-C.
const CHUNK: usize = 4096;

/// Texts held once each, shortened as one-line fields are.
#[derive(Default)]
struct Texts {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl Texts {
    fn id(&mut self, s: &str) -> u32 {
        let s = clip(s);
        if let Some(&i) = self.ids.get(s.as_ref()) {
            return i;
        }
        let i = self.list.len() as u32;
        self.list.push(s.to_string());
        self.ids.insert(s.into_owned(), i);
        i
    }
}

/// One live storage: its figures, its texts as ids into [`Table::texts`].
struct Row {
    bytes: u64,
    requested: Option<u64>,
    band: u32,
    category: u32,
    inferred: bool,
    name: u32,
    label: u32,
    frame: u32,
    user_frame: u32,
    innermost: u32,
    compiled: u32,
    forward_frame: u32,
    /// Index into [`Table::stacks`].
    stack: u32,
    allocated_at: Option<u64>,
    freed_at: Option<u64>,
    views: usize,
    live_views: usize,
    retained_by_view: bool,
}

/// The live set at one instant, biggest first, `limit` rows at most.
pub struct Table {
    device: String,
    index: Option<u64>,
    at_start: bool,
    time_us: Option<f64>,
    /// Storages live then (the rows are the biggest `limit` of them).
    total: usize,
    texts: Vec<String>,
    /// Each distinct stack's frames, innermost first, as text ids.
    stacks: Vec<Vec<u32>>,
    rows: Vec<Row>,
}

/// The live set after event `index` (None: at the global peak), biggest first, at most
/// `limit` rows (None: all).
pub fn table(
    t: &Device,
    rules: &FrameRules,
    index: Option<u64>,
    limit: Option<usize>,
) -> Result<Table> {
    let (trace, ix) = (&t.trace, &t.index);
    if !trace.identities_known() {
        bail!(
            "{}: the live set is unavailable: the file records no addresses, only totals",
            trace.device
        );
    }
    let (at, ids, at_start) = match index {
        None => {
            let Some(p) = t.peak else {
                bail!("the trace has no events");
            };
            (p.at, p.live(trace, ix), p.at_start)
        }
        Some(n) => {
            let at = crate::questions::seq_of(trace, ix.len(), n)?;
            (at, ix.live_at(trace, at), false)
        }
    };
    let view = FrameView::new(trace, rules);
    let mut texts = Texts::default();
    // Per distinct stack: its row in `stacks` and its readable frames (work that grows with
    // its depth, done once however many rows share it).
    let mut stack_of: HashMap<StackId, (u32, StackFrames)> = HashMap::new();
    let mut stacks: Vec<Vec<u32>> = Vec::new();
    let total = ids.len();
    let mut rows = Vec::with_capacity(total.min(limit.unwrap_or(usize::MAX)));
    for &id in ids.iter().take(limit.unwrap_or(usize::MAX)) {
        let sid = trace.stack_id(id);
        let (stack, sf) = stack_of.entry(sid).or_insert_with(|| {
            let frames = trace
                .stack_frames(sid)
                .iter()
                .map(|f| texts.id(f))
                .collect();
            stacks.push(frames);
            ((stacks.len() - 1) as u32, view.of_stack(trace, sid))
        });
        let stack = *stack;
        let e = entry_with(trace, id, at, &view, sf.clone());
        rows.push(Row {
            bytes: e.bytes.0,
            requested: e.requested.map(|b| b.0),
            band: texts.id(e.band.name()),
            category: texts.id(e.category),
            inferred: e.inferred,
            name: texts.id(&e.name),
            label: texts.id(&e.label),
            frame: texts.id(&e.frame),
            user_frame: texts.id(&e.user_frame),
            innermost: texts.id(&e.innermost),
            compiled: texts.id(&e.compiled),
            forward_frame: texts.id(&e.forward_frame),
            stack,
            allocated_at: (!trace.is_from_start(id)).then(|| number(trace, trace.start(id))),
            freed_at: trace.end(id).map(|s| number(trace, s)),
            views: e.views,
            live_views: e.live_views,
            retained_by_view: e.retained_by_view,
        });
    }
    Ok(Table {
        device: trace.device.clone(),
        index: (!at_start).then(|| number(trace, at)),
        at_start,
        time_us: trace.time_us(at).filter(|_| !at_start),
        total,
        texts: texts.list,
        stacks,
        rows,
    })
}

/// The row keys, in the order every row has them.
const KEYS: [&str; 18] = [
    "bytes",
    "requested",
    "band",
    "category",
    "inferred",
    "name",
    "label",
    "frame",
    "user_frame",
    "innermost",
    "compiled",
    "forward_frame",
    "stack",
    "allocated_at",
    "freed_at",
    "views",
    "live_views",
    "retained_by_view",
];

/// `{device, index, at_start, time_us, total, rows}` with `rows` a list of dicts (keys
/// [`KEYS`]; `stack` a tuple of frames, innermost first), made on the calling thread.
pub fn to_python<'py>(py: Python<'py>, t: Table) -> PyResult<Bound<'py, PyDict>> {
    let keys: Vec<Bound<'py, PyString>> = KEYS.iter().map(|k| PyString::intern(py, k)).collect();
    let mut texts: Vec<Option<Bound<'py, PyString>>> = vec![None; t.texts.len()];
    let mut text = |i: u32| -> Bound<'py, PyString> {
        let slot = &mut texts[i as usize];
        slot.get_or_insert_with(|| PyString::new(py, &t.texts[i as usize]))
            .clone()
    };
    let mut stacks: Vec<Option<Bound<'py, PyTuple>>> = vec![None; t.stacks.len()];
    let rows = PyList::empty(py);
    for (n, r) in t.rows.iter().enumerate() {
        if n % CHUNK == CHUNK - 1 {
            py.check_signals()?;
        }
        let stack = match &stacks[r.stack as usize] {
            Some(s) => s.clone(),
            None => {
                let frames: Vec<_> = t.stacks[r.stack as usize]
                    .iter()
                    .map(|&f| text(f))
                    .collect();
                let s = PyTuple::new(py, frames)?;
                stacks[r.stack as usize] = Some(s.clone());
                s
            }
        };
        let d = PyDict::new(py);
        let values: [Bound<'py, PyAny>; 18] = [
            r.bytes.into_pyobject(py)?.into_any(),
            r.requested.into_pyobject(py)?.into_any(),
            text(r.band).into_any(),
            text(r.category).into_any(),
            pyo3::types::PyBool::new(py, r.inferred)
                .to_owned()
                .into_any(),
            text(r.name).into_any(),
            text(r.label).into_any(),
            text(r.frame).into_any(),
            text(r.user_frame).into_any(),
            text(r.innermost).into_any(),
            text(r.compiled).into_any(),
            text(r.forward_frame).into_any(),
            stack.into_any(),
            r.allocated_at.into_pyobject(py)?.into_any(),
            r.freed_at.into_pyobject(py)?.into_any(),
            r.views.into_pyobject(py)?.into_any(),
            r.live_views.into_pyobject(py)?.into_any(),
            pyo3::types::PyBool::new(py, r.retained_by_view)
                .to_owned()
                .into_any(),
        ];
        for (k, v) in keys.iter().zip(values) {
            d.set_item(k, v)?;
        }
        rows.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("device", &t.device)?;
    out.set_item("index", t.index)?;
    out.set_item("at_start", t.at_start)?;
    out.set_item("time_us", t.time_us)?;
    out.set_item("total", t.total)?;
    out.set_item("rows", rows)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::{open, Options};
    use memtide_core::clip::TEXT_CAP;
    use memtide_core::formats::Progress;

    /// A JSONL file in the temp dir: `n` live allocations of 1…n bytes on one 1,000-frame
    /// stack, each named by a 1 MiB name.
    fn hostile(n: usize) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("memtide-py-rows-{}.jsonl", std::process::id()));
        let stack: Vec<String> = (0..1000).map(|i| format!("m{i}.py:{i} f{i}")).collect();
        let name = "n".repeat(1 << 20);
        let mut text = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
        for i in 1..=n {
            let row = serde_json::json!({"t": i, "op": "alloc", "id": i, "size": i, "name": name, "stack": stack});
            text.push_str(&row.to_string());
            text.push('\n');
        }
        std::fs::write(&path, text).expect("write the trace");
        path
    }

    #[test]
    fn rows_hold_each_text_and_stack_once_and_short() {
        let path = hostile(5);
        let opened = open(&path, &Options::default(), &Progress::new()).expect("open");
        let _ = std::fs::remove_file(&path);
        let t = &opened.devices[opened.primary];
        let table = table(t, &opened.frame_rules, None, Some(3)).expect("table");
        assert_eq!((table.rows.len(), table.total), (3, 5));
        assert_eq!(
            table.rows.iter().map(|r| r.bytes).collect::<Vec<_>>(),
            [5, 4, 3],
            "biggest first"
        );
        // One stack of 1,000 frames, every row pointing at it.
        assert_eq!(table.stacks.len(), 1);
        assert_eq!(table.stacks[0].len(), 1000);
        assert!(table.rows.iter().all(|r| r.stack == 0));
        assert_eq!(
            table.texts[table.stacks[0][999] as usize],
            "m999.py:999 f999"
        );
        // The 1 MiB name: one short text for every row.
        let name = &table.texts[table.rows[0].name as usize];
        assert!(
            name.ends_with("… (1,048,576 bytes)"),
            "{}",
            &name[name.len() - 40..]
        );
        assert!(table.rows.iter().all(|r| r.name == table.rows[0].name));
        assert!(table.texts.iter().all(|s| s.len() <= TEXT_CAP));
        // Texts held once: the frames, the name, the few band/category/label words.
        assert!(table.texts.len() < 1000 + 12, "{}", table.texts.len());
    }
}
