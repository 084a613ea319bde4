//! The questions a trace answers beyond its summary and its live set ([`crate::rows`]), each
//! as text built from the core: the timeline columns, the allocator's state, the plot.

use anyhow::{bail, Result};
use memtide_core::analysis::event_columns;
use memtide_core::open::Device;
use memtide_core::trace::{Band, Seq, Trace};
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

/// `v` as compact JSON text, every string shortened as the commands' `--json` shortens it
/// (`memtide_core::clip`: at most `TEXT_CAP` bytes).
pub fn json<T: serde::Serialize + ?Sized>(v: &T) -> Result<String> {
    let mut out = Vec::new();
    memtide_core::clip::to_json_writer(&mut out, v, false)?;
    Ok(String::from_utf8(out)?)
}

/// Event number of a position (`peak.index`'s numbering).
pub fn number(trace: &Trace, s: Seq) -> u64 {
    trace.event_number(s)
}

/// The most columns `timeline(points=…)` returns.
pub const MAX_POINTS: usize = 100_000;

/// The bands over the whole run in `points` columns (no more than the trace has events),
/// each at the instant where the total is highest in its range (the peak is never averaged
/// away).
pub fn timeline(t: &Device, points: usize) -> Result<String> {
    let (trace, ix) = (&t.trace, &t.index);
    if !(1..=MAX_POINTS).contains(&points) {
        bail!("points={points}: expected 1 to {MAX_POINTS}");
    }
    if ix.is_empty() {
        bail!("the trace has no events");
    }
    let points = points.min(ix.len());
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
    json(&Value::Object(m))
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
    json(&doc)
}

/// The stacked timeline picture of `memtide plot` (light theme), as SVG text.
pub fn svg(t: &Device, name: &str, width: u32, height: u32) -> Result<String> {
    if !(200..=8000).contains(&width) || !(120..=8000).contains(&height) {
        bail!("width must be 200–8000 and height 120–8000 pixels (got {width}×{height})");
    }
    if t.index.is_empty() {
        bail!("the trace has no events");
    }
    let palette = memtide_report::picture::Palette::light();
    memtide_report::picture::of_device(t, name, None, &palette, width, height)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::{open, Options};
    use memtide_core::formats::Progress;

    #[test]
    fn a_timeline_has_no_more_columns_than_events() {
        let path = std::env::temp_dir().join(format!("memtide-py-tl-{}.jsonl", std::process::id()));
        std::fs::write(
            &path,
            "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n\
             {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":100}\n\
             {\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":50}\n\
             {\"t\":3,\"op\":\"free\",\"id\":1}\n",
        )
        .expect("write");
        let opened = open(&path, &Options::default(), &Progress::new()).expect("open");
        let _ = std::fs::remove_file(&path);
        let t = &opened.devices[opened.primary];
        let v: Value =
            serde_json::from_str(&timeline(t, MAX_POINTS).expect("timeline")).expect("json");
        let total: Vec<u64> = serde_json::from_value(v["total"].clone()).expect("totals");
        assert!(!total.is_empty() && total.len() <= 3, "{total:?}");
        assert_eq!(total.iter().max(), Some(&150), "the peak is a column");
        assert!(timeline(t, MAX_POINTS + 1).is_err());
        assert!(timeline(t, 0).is_err());
    }
}
