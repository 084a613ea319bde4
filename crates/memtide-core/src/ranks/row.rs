//! One rank's compact row, read from its `summary --json` object (so a trace and a summary
//! made elsewhere give the same row), and the sparkline of its total timeline.

use serde_json::Value;
use std::path::PathBuf;

/// Where a row's rank number came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RankSource {
    /// The file's `distributedInfo.rank` (`distributed.rank` of its summary).
    Distributed,
    /// The file name (`rank3`, `rank-3`, `trace_3.json` …).
    FileName,
    /// The file's position in the order given.
    #[default]
    Order,
}

impl RankSource {
    /// `distributed`, `file name`, `order` (the JSON `rank_from` value).
    pub fn name(self) -> &'static str {
        match self {
            RankSource::Distributed => "distributed",
            RankSource::FileName => "file name",
            RankSource::Order => "order",
        }
    }
}

/// What the overview keeps of one rank: its figures, not its trace.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankRow {
    pub rank: u64,
    pub rank_from: RankSource,
    /// The file's position in the order given.
    pub order: usize,
    pub file: PathBuf,
    /// The row comes from a `summary --json` file, not a trace (nothing to open).
    pub from_summary: bool,
    /// `snapshot`, `kineto`, `jsonl`, `memory_timeline`.
    pub format: String,
    pub device: String,
    pub world_size: Option<u64>,
    pub events: u64,
    /// The peak (None: no events).
    pub peak: Option<u64>,
    /// Event number after which the peak holds (None: at start, or no peak).
    pub peak_index: Option<u64>,
    pub peak_time_us: Option<f64>,
    /// The step and the phase whose windows hold the peak.
    pub peak_step: Option<String>,
    pub peak_phase: Option<String>,
    /// Bytes of the persistent and activation bands at the peak.
    pub persistent: Option<u64>,
    pub activation: Option<u64>,
    pub reserved_peak: Option<u64>,
    pub capacity: Option<u64>,
    pub ooms: usize,
    /// Step baseline growth after warm-up (a fraction), when the trace has steps.
    pub growth: Option<f64>,
    /// Warnings that say the figures may be wrong.
    pub doubtful: Vec<String>,
    /// The total timeline downsampled (the maximum of each bucket); empty for a row read
    /// from a summary file, which carries no timeline.
    pub sparkline: Vec<u64>,
    /// Every device of the rank's file that has events, when it has several (empty: the
    /// row's own figures are its only device): what `check` gates.
    pub devices: Vec<DeviceFigures>,
    /// The rank's `summary --json` object, when the caller asked to keep it, as compact JSON
    /// text: the text `summary FILE --json` prints (or the summary file's own), a tenth of the
    /// memory a parsed value takes, and written out as it is (never parsed back, so its
    /// floats stay bit for bit).
    pub summary: Option<KeptSummary>,
}

/// What the gate judges of one device of a rank's file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceFigures {
    pub device: String,
    /// The peak (None: no events).
    pub peak: Option<u64>,
    pub ooms: usize,
    /// Step baseline growth after warm-up (a fraction), when the device has steps.
    pub growth: Option<f64>,
    /// Warnings that say the figures may be wrong.
    pub doubtful: Vec<String>,
}

impl RankRow {
    /// The devices the gate judges: each device of the file with events, or the row's own
    /// figures when the file has one.
    pub fn gated_devices(&self) -> Vec<DeviceFigures> {
        if !self.devices.is_empty() {
            return self.devices.clone();
        }
        vec![DeviceFigures {
            device: self.device.clone(),
            peak: self.peak,
            ooms: self.ooms,
            growth: self.growth,
            doubtful: self.doubtful.clone(),
        }]
    }

    /// The file name (no directory).
    pub fn file_name(&self) -> String {
        self.file.file_name().map_or_else(
            || self.file.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        )
    }

    /// `step 3 · backward`, `step 3`, `backward`, or "" when the peak lies in no window.
    pub fn step_phase(&self) -> String {
        match (&self.peak_step, &self.peak_phase) {
            (Some(s), Some(p)) => format!("{s} · {p}"),
            (Some(s), None) => s.clone(),
            (None, Some(p)) => p.clone(),
            (None, None) => String::new(),
        }
    }
}

/// A `summary --json` object kept as its compact JSON text (compared by that text).
#[derive(Clone, Debug)]
pub struct KeptSummary(pub Box<serde_json::value::RawValue>);

impl PartialEq for KeptSummary {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl KeptSummary {
    /// The JSON text.
    pub fn raw(&self) -> &serde_json::value::RawValue {
        &self.0
    }
}

/// The row of a `summary --json` object `v` (the fields a row needs; rank and file are the
/// caller's). Fails when `v` is not such an object.
pub fn row_from_summary(v: &Value) -> Result<RankRow, String> {
    let o = v
        .as_object()
        .ok_or("not a memtide summary: expected a JSON object")?;
    for key in ["source", "format", "device", "events", "peak"] {
        if !o.contains_key(key) {
            return Err(format!(
                "not a memtide summary (`memtide summary FILE --json`): no {key:?} key"
            ));
        }
    }
    let u = |v: &Value| v.as_u64();
    let s = |v: &Value| v.as_str().map(str::to_string);
    let peak = &v["peak"];
    let figures = device_figures(v)?;
    // Each device of a file of several (`per_device`, present when none was picked) is gated
    // too: the device that ran out of memory need not be the one shown.
    let devices = match &v["per_device"] {
        Value::Null => Vec::new(),
        Value::Array(a) => {
            let mut devices = Vec::new();
            for (i, d) in a.iter().enumerate() {
                let events = gated_u64(&d["events"], "events", "a count")
                    .map_err(|e| format!("per_device[{i}]: {e}"))?;
                if events.is_some_and(|n| n > 0) {
                    devices.push(device_figures(d).map_err(|e| format!("per_device[{i}]: {e}"))?);
                }
            }
            devices
        }
        o => return Err(format!("per_device is {}: expected a list", shown(o))),
    };
    let peak_index = u(&peak["index"]);
    let in_window = |kind: &str| -> Option<String> {
        let at = peak_index?;
        v["windows"].as_array()?.iter().find_map(|w| {
            let inside = w["kind"].as_str() == Some(kind)
                && u(&w["first_index"]).is_some_and(|a| a <= at)
                && u(&w["last_index"]).is_some_and(|b| at <= b);
            inside.then(|| s(&w["name"])).flatten()
        })
    };
    Ok(RankRow {
        format: s(&v["format"]).unwrap_or_default(),
        device: s(&v["device"]).unwrap_or_default(),
        world_size: u(&v["distributed"]["world_size"]),
        events: u(&v["events"]).unwrap_or(0),
        peak: figures.peak,
        peak_index,
        peak_time_us: peak["time_us"].as_f64(),
        peak_step: in_window("step"),
        peak_phase: in_window("phase"),
        persistent: u(&peak["bands"]["persistent"]),
        activation: u(&peak["bands"]["activation"]),
        reserved_peak: u(&v["reserved_peak"]),
        capacity: u(&v["capacity"]),
        ooms: figures.ooms,
        growth: figures.growth,
        doubtful: figures.doubtful,
        devices: if devices.len() > 1 {
            devices
        } else {
            Vec::new()
        },
        ..RankRow::default()
    })
}

/// The figures the gate judges in one device's `summary --json` object, read strictly: a value
/// there that is not what it should be is an error naming it, never a device that silently
/// has no peak (and passes every gate).
fn device_figures(v: &Value) -> Result<DeviceFigures, String> {
    let growth = match &v["trend"]["growth"] {
        Value::Null => None,
        g => Some(g.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
            format!(
                "trend.growth is {}: expected a number (the step baseline growth as a fraction) or null",
                shown(g)
            )
        })?),
    };
    let ooms = match &v["ooms"] {
        Value::Null => 0,
        Value::Array(a) => a.len(),
        o => return Err(format!("ooms is {}: expected a list", shown(o))),
    };
    Ok(DeviceFigures {
        device: v["device"].as_str().unwrap_or_default().to_string(),
        peak: gated_u64(&v["peak"]["bytes"], "peak.bytes", "whole bytes")?,
        ooms,
        growth,
        doubtful: v["doubtful_warnings"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|w| w.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// A gated count: absent or null → None; a whole number 0..2^64 − 1 → it; anything else
/// (negative, fractional, too large, a string) → an error naming the key and the value.
fn gated_u64(v: &Value, key: &str, what: &str) -> Result<Option<u64>, String> {
    match v {
        Value::Null => Ok(None),
        v => v.as_u64().map(Some).ok_or_else(|| {
            format!(
                "{key} is {}: expected {what}, 0 to {} (or null)",
                shown(v),
                u64::MAX
            )
        }),
    }
}

/// A JSON value for an error message, cut to 40 characters.
fn shown(v: &Value) -> String {
    let t = v.to_string();
    match t.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t,
    }
}

/// The distributed rank a summary object records (`distributed.rank`).
pub(crate) fn distributed_rank(v: &Value) -> Option<u64> {
    v["distributed"]["rank"].as_u64()
}

/// `totals` downsampled to at most `points` values, each the maximum of its bucket (so the
/// peak survives); the whole series when it is shorter.
pub fn sparkline(totals: impl ExactSizeIterator<Item = u64>, points: usize) -> Vec<u64> {
    let n = totals.len();
    if points == 0 || n == 0 {
        return Vec::new();
    }
    if n <= points {
        return totals.collect();
    }
    // Point k is the highest of positions [k·n/points, (k+1)·n/points): none is empty.
    let mut out = vec![0u64; points];
    let mut k = 0;
    for (p, v) in totals.enumerate() {
        while k + 1 < points && (k + 1) * n / points <= p {
            k += 1;
        }
        out[k] = out[k].max(v);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_sparkline_keeps_the_peak() {
        let t: Vec<u64> = (0..1000)
            .map(|i| if i == 377 { 99 } else { i % 7 })
            .collect();
        let s = sparkline(t.iter().copied(), 64);
        assert_eq!(s.len(), 64);
        assert_eq!(s.iter().max(), Some(&99));
        assert_eq!(sparkline([1, 2].into_iter(), 64), vec![1, 2]);
        assert!(sparkline(
            std::iter::empty::<u64>().collect::<Vec<_>>().into_iter(),
            64
        )
        .is_empty());
        // Each point is the maximum of its bucket [k·n/points, (k+1)·n/points), by slices.
        for n in [65usize, 100, 999, 1000, 4097] {
            let t: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 1013).collect();
            for points in [1usize, 2, 3, 63, 64] {
                let want: Vec<u64> = (0..points)
                    .map(|k| {
                        let lo = k * n / points;
                        let hi = ((k + 1) * n / points).max(lo + 1);
                        t[lo..hi].iter().copied().max().unwrap_or(0)
                    })
                    .collect();
                assert_eq!(sparkline(t.iter().copied(), points), want, "{n} {points}");
            }
        }
    }

    #[test]
    fn a_row_reads_the_peak_its_window_and_bands() {
        let v: Value = serde_json::json!({
            "source": "r.pickle", "format": "snapshot", "device": "cuda:0", "events": 10,
            "peak": {"bytes": 100, "index": 6, "time_us": 5,
                     "bands": {"persistent": 40, "activation": 60}},
            "reserved_peak": 128, "capacity": null,
            "windows": [
                {"kind": "step", "name": "step 1", "first_index": 0, "last_index": 4},
                {"kind": "step", "name": "step 2", "first_index": 5, "last_index": 9},
                {"kind": "phase", "name": "backward", "first_index": 6, "last_index": 8}
            ],
            "ooms": [{}, {}],
            "trend": {"growth": 0.5},
            "doubtful_warnings": ["w"],
            "distributed": {"rank": 3, "world_size": 8}
        });
        let r = row_from_summary(&v).unwrap();
        assert_eq!(r.peak, Some(100));
        assert_eq!(r.step_phase(), "step 2 · backward");
        assert_eq!(
            (r.persistent, r.activation, r.reserved_peak),
            (Some(40), Some(60), Some(128))
        );
        assert_eq!((r.ooms, r.growth, r.world_size), (2, Some(0.5), Some(8)));
        assert_eq!(distributed_rank(&v), Some(3));
        assert!(row_from_summary(&serde_json::json!({"a": 1})).is_err());
    }

    #[test]
    fn a_gated_figure_that_cannot_be_read_is_an_error_naming_it() {
        let with = |peak: Value, growth: Value| {
            serde_json::json!({"source": "r", "format": "snapshot", "device": "cuda:0",
                "events": 1, "peak": {"bytes": peak}, "trend": {"growth": growth}})
        };
        // Null is "no peak" (no events); the rest cannot be a byte count.
        assert_eq!(
            row_from_summary(&with(Value::Null, Value::Null))
                .unwrap()
                .peak,
            None
        );
        let big: Value = serde_json::from_str("18446744073709551616").unwrap();
        for bad in [
            serde_json::json!(-5),
            serde_json::json!("5"),
            serde_json::json!(1.5),
            big,
        ] {
            let e = row_from_summary(&with(bad.clone(), Value::Null)).unwrap_err();
            assert!(
                e.starts_with("peak.bytes is ") && e.contains("expected whole bytes"),
                "{bad}: {e}"
            );
        }
        let e =
            row_from_summary(&with(serde_json::json!(5), serde_json::json!("10%"))).unwrap_err();
        assert!(e.starts_with("trend.growth is \"10%\""), "{e}");
        assert_eq!(
            row_from_summary(&with(serde_json::json!(u64::MAX), serde_json::json!(0.25)))
                .unwrap()
                .peak,
            Some(u64::MAX)
        );
    }
}
