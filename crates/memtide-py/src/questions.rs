//! The questions a trace answers beyond its summary, each as JSON text built from the core:
//! the live set at an event, the timeline columns, the allocator's state, the plot.

use anyhow::{bail, Result};
use memtide_core::analysis::columns::event_columns;
use memtide_core::analysis::frames::{FrameRules, FrameView};
use memtide_core::analysis::live::entry_in;
use memtide_core::open::Device;
use memtide_core::trace::{AllocId, Band, Seq, Trace};
use serde_json::{json, Map, Value};

/// The position of event `#n` as users see it (`peak.index`, `summary --json`'s numbers).
pub fn seq_of(trace: &Trace, len: usize, n: u64) -> Result<Seq> {
    if len == 0 {
        bail!("the trace has no events");
    }
    let direct = Seq(n);
    if (n as usize) < len && trace.event_number(direct) == n {
        return Ok(direct);
    }
    match (0..len as u64).map(Seq).find(|&s| trace.event_number(s) == n) {
        Some(s) => Ok(s),
        None => bail!(
            "no event #{n} in this trace (events are numbered as summary --json numbers them; {len} events)"
        ),
    }
}

/// Event number of a position, for lifetimes.
fn number(trace: &Trace, s: Seq) -> u64 {
    trace.event_number(s)
}

/// One live storage as a JSON row.
fn row(trace: &Trace, id: AllocId, at: Seq, view: &FrameView) -> Value {
    let e = entry_in(trace, id, at, view);
    let allocated_at = (!trace.is_from_start(id)).then(|| number(trace, trace.start(id)));
    let freed_at = trace.end(id).map(|s| number(trace, s));
    let stack: Vec<String> = trace
        .stack(id)
        .into_iter()
        .map(|f| f.into_owned())
        .collect();
    json!({
        "bytes": e.bytes.0,
        "requested": e.requested.map(|b| b.0),
        "band": e.band.name(),
        "category": e.category,
        "inferred": e.inferred,
        "name": e.name,
        "label": e.label,
        "frame": e.frame,
        "user_frame": e.user_frame,
        "innermost": e.innermost,
        "compiled": e.compiled,
        "forward_frame": e.forward_frame,
        "stack": stack,
        "allocated_at": allocated_at,
        "freed_at": freed_at,
        "views": e.views,
        "live_views": e.live_views,
        "retained_by_view": e.retained_by_view,
    })
}

/// The live set after event `index` (None: at the global peak), biggest first.
pub fn live(
    t: &Device,
    rules: &FrameRules,
    index: Option<u64>,
    limit: Option<usize>,
) -> Result<String> {
    let (trace, ix) = (&t.trace, &t.index);
    if !trace.identities_known() {
        bail!(
            "{}: the live set is unavailable: the file records no addresses, only totals",
            trace.device
        );
    }
    let (at, ids, at_start) = match index {
        None => {
            let Some(p) = memtide_core::analysis::global_peak(trace, ix) else {
                bail!("the trace has no events");
            };
            (p.at, p.live(trace, ix), p.at_start)
        }
        Some(n) => {
            let at = seq_of(trace, ix.len(), n)?;
            (at, ix.live_at(trace, at), false)
        }
    };
    let view = FrameView::new(trace, rules);
    let rows: Vec<Value> = ids
        .into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|id| row(trace, id, at, &view))
        .collect();
    let doc = json!({
        "device": trace.device,
        "index": (!at_start).then(|| number(trace, at)),
        "at_start": at_start,
        "time_us": trace.time_us(at).filter(|_| !at_start),
        "rows": rows,
    });
    Ok(serde_json::to_string(&doc)?)
}

/// The bands over the whole run in `points` columns, each at the instant where the total
/// is highest in its range (the peak is never averaged away).
pub fn timeline(t: &Device, points: usize) -> Result<String> {
    let (trace, ix) = (&t.trace, &t.index);
    if !(1..=1_000_000).contains(&points) {
        bail!("points={points}: expected 1 to 1,000,000");
    }
    if ix.is_empty() {
        bail!("the trace has no events");
    }
    let cols = event_columns(trace, ix, Seq(0), Seq(ix.len() as u64 - 1), points);
    let cols: Vec<_> = cols.into_iter().filter(|c| !c.empty).collect();
    let mut m = Map::new();
    m.insert(
        "index".into(),
        cols.iter()
            .map(|c| number(trace, c.at))
            .collect::<Vec<_>>()
            .into(),
    );
    m.insert(
        "time_us".into(),
        cols.iter()
            .map(|c| trace.time_us(c.at))
            .collect::<Vec<_>>()
            .into(),
    );
    m.insert(
        "total".into(),
        cols.iter()
            .map(|c| Band::ALL.iter().map(|b| c.bands.get(*b)).sum::<u64>())
            .collect::<Vec<_>>()
            .into(),
    );
    for b in Band::ALL {
        m.insert(
            b.name().into(),
            cols.iter()
                .map(|c| c.bands.get(b))
                .collect::<Vec<_>>()
                .into(),
        );
    }
    m.insert(
        "reserved".into(),
        cols.iter().map(|c| c.reserved.0).collect::<Vec<_>>().into(),
    );
    m.insert("external_known".into(), trace.external_known.into());
    Ok(serde_json::to_string(&Value::Object(m))?)
}

/// The allocator's segments (with their blocks) and totals after event `index`, replayed
/// from the snapshot's allocator history.
pub fn allocator(t: &Device, index: u64) -> Result<String> {
    let Some(h) = t.history() else {
        bail!(
            "{}: no allocator history (only CUDA memory snapshots record segments and blocks)",
            t.trace.device
        );
    };
    if h.entries.len() != t.index.len() {
        bail!(
            "{}: the allocator history was not kept (open the file with allocator_history=True)",
            t.trace.device
        );
    }
    let at = seq_of(&t.trace, t.index.len(), index)?;
    let state = h
        .states_before(&[at.idx() + 1])
        .into_iter()
        .next()
        .unwrap_or_default();
    let doc = json!({
        "device": t.trace.device,
        "index": index,
        "totals": state.totals(),
        "segments": state.segments(),
    });
    Ok(serde_json::to_string(&doc)?)
}

/// The stacked timeline picture of `memtide plot` (light theme), as SVG text.
pub fn svg(t: &Device, name: &str, width: u32, height: u32) -> Result<String> {
    if !(200..=8000).contains(&width) || !(120..=8000).contains(&height) {
        bail!("width must be 200–8000 and height 120–8000 pixels (got {width}×{height})");
    }
    if t.index.is_empty() {
        bail!("the trace has no events");
    }
    let theme = memtide::tui::theme::Theme::resolve(Some("light"), false)?;
    memtide::picture::svg(&memtide::picture::Picture {
        trace: &t.trace,
        index: &t.index,
        theme: &theme,
        name,
        lo: Seq(0),
        hi: Seq(t.index.len() as u64 - 1),
        range_label: String::new(),
        width,
        height,
    })
}
