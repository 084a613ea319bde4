//! The summary answer: every device's [`Summary`] (the core's, `--window` resolved on each)
//! and its readable text (`memtide summary`'s report; `--json` is the core's
//! `summary_json`, `--markdown` [`crate::markdown`]).

use anyhow::Result;
use memtide_core::analysis::{
    names_text, table_ends, Summary, SummaryOptions, WindowReport, WINDOW_ENDS,
};
use memtide_core::analysis::{StepRow, TreeNode};
use memtide_core::trace::{external, grouped, human_bytes, Band};
use std::fmt::Write as _;

/// Every device's summary (`--window` resolved on each device that has events): what
/// `summary` prints, and what the Python module's `Trace.summary()` returns, are made of these.
pub fn summarise(
    devices: &[memtide_core::open::Device],
    window: Option<&str>,
    opts: &SummaryOptions,
) -> Result<Vec<Summary>> {
    let spec = window
        .map(memtide_core::analysis::WindowSpec::parse)
        .transpose()?;
    let mut summaries: Vec<Summary> = Vec::with_capacity(devices.len());
    for t in devices {
        let resolved = match &spec {
            Some(s) if !t.index.is_empty() => Some(s.resolve(&t.trace, &t.index)?),
            _ => None,
        };
        summaries.push(t.summary(opts, resolved.as_ref()));
    }
    Ok(summaries)
}

/// The devices of a file reported one after another, in the order shown, each with its
/// peak and its OOMs: `cuda:1 (peak 78.29 GiB, 1 OOM) · cuda:0 (peak 7.876 GiB)`; None for
/// one device (its report's first line names it).
pub fn devices_index(shown: &[&Summary]) -> Option<String> {
    if shown.len() < 2 {
        return None;
    }
    let one = |s: &Summary| {
        let mut facts = Vec::new();
        if let Some(p) = &s.peak {
            facts.push(format!("peak {}", human_bytes(p.bytes)));
        }
        match s.ooms.len() {
            0 => {}
            1 => facts.push("1 OOM".into()),
            n => facts.push(format!("{n} OOMs")),
        }
        if facts.is_empty() {
            s.device.clone()
        } else {
            format!("{} ({})", s.device, facts.join(", "))
        }
    };
    let list: Vec<String> = shown.iter().map(|s| one(s)).collect();
    Some(list.join(" · "))
}

/// The text report's first line for a file of several devices ([`devices_index`]).
pub fn devices_line(shown: &[&Summary]) -> Option<String> {
    devices_index(shown).map(|list| {
        format!(
            "{} devices, each reported below in this order (--device N for one): {list}",
            shown.len()
        )
    })
}

/// The text `memtide summary` prints for one device: [`render_text_with`] and the run's
/// measurement boundary (`boundary        full update after …`) after its `final` line
/// (none when the trace holds no allocation).
pub fn text(s: &Summary, v: &TextView) -> String {
    with_boundary(&render_text_with(s, v), s)
}

fn with_boundary(text: &str, s: &Summary) -> String {
    let Some(b) = &s.boundary else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len() + 128);
    let mut done = false;
    for l in text.split_inclusive('\n') {
        out.push_str(l);
        if !done && l.starts_with("final            ") {
            crate::report_line!(out, "boundary         {}", b.words);
            done = true;
        }
    }
    out
}

/// Steps a survivor row names, at most (the rest are counted).
pub const SURVIVOR_STEPS_NAMED: usize = 20;

fn bytes_both(n: u64) -> String {
    format!("{} ({} B)", human_bytes(n), grouped(n))
}

/// How the text report shows frames, the tree and times.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextView {
    /// Show the top frame as the file gives it instead of the user frame.
    pub all_frames: bool,
    /// Print the stack tree at the peak.
    pub tree: bool,
    /// Times as the file's values instead of relative to the first event.
    pub absolute_time: bool,
    /// List every window (`--windows all`) instead of one row per phase name.
    pub all_windows: bool,
}

/// The human report (binary units, with exact bytes beside them), section by section.
pub fn render_text(s: &Summary) -> String {
    render_text_with(s, &TextView::default())
}

/// [`render_text`] shown through `v`.
pub fn render_text_with(s: &Summary, v: &TextView) -> String {
    let mut o = String::new();
    header(&mut o, s);
    peak(&mut o, s, v);
    persistent(&mut o, s);
    figures(&mut o, s);
    if let Some(b) = &s.budget {
        crate::serving::text(&mut o, b);
    }
    device_log(&mut o, s);
    nsys(&mut o, s);
    live_set(&mut o, s, v);
    if v.tree {
        tree(&mut o, s);
    }
    windows(&mut o, s, v);
    steps(&mut o, s, v);
    ooms(&mut o, s, v);
    notes_and_warnings(&mut o, s);
    o
}

/// Each OOM explained: the figures (unavailable when the source lacks them), the verdict, the
/// reasoning, the advice, the pinners and the fixes checked by replay.
fn ooms(o: &mut String, s: &Summary, v: &TextView) {
    for x in &s.ooms {
        let _ = writeln!(o);
        let t = x
            .time_us
            .map(|t| format!(" · {}", time_text(s, t, v)))
            .unwrap_or_default();
        crate::report_line!(o, "out of memory at event #{}{t} · {}", x.index, x.device);
        let verdict = [("verdict", x.verdict.name().to_string())];
        for (k, v) in x.figures().into_iter().chain(verdict).chain(x.details()) {
            crate::report_line!(o, "  {k:<17} {v}");
        }
    }
    if let Some(e) = &s.allocator_at_end {
        let _ = writeln!(o);
        crate::report_line!(o, "allocator at end {} segments · reserved {} · allocated {} · free in reserve {} · largest free block {}",
            e.segments,
            human_bytes(e.reserved),
            human_bytes(e.allocated),
            human_bytes(e.free_in_reserve),
            human_bytes(e.largest_free_block)
        );
    }
    if let Some(b) = &s.history_bounds {
        let _ = writeln!(o);
        crate::report_line!(o, "history bounds: {}", b.text);
    }
}

/// A time relative to the trace's first event (`+12.345 ms`), or the file's value.
fn time_text(s: &Summary, t: f64, v: &TextView) -> String {
    time_words(s, t, v.absolute_time)
}

/// A time relative to the trace's first event (`t=+12.345 ms`), or the file's value where it
/// has no first event or `absolute` asks for it: the text's and the Markdown's words.
pub(crate) fn time_words(s: &Summary, t: f64, absolute: bool) -> String {
    match s.start_time_us {
        Some(t0) if !absolute => {
            let d = t - t0;
            if d.abs() >= 1e6 {
                format!("t=+{:.3} s", d / 1e6)
            } else {
                format!("t=+{:.3} ms", d / 1e3)
            }
        }
        _ => format!("t={} us", memtide_core::analysis::Micros(Some(t))),
    }
}

/// `persistent 160 MiB = params 40 MiB + grads 40 MiB + optimizer 80 MiB → 16.0 B/param (fp32 Adam: 16)`.
fn persistent(o: &mut String, s: &Summary) {
    let Some(p) = s.peak.as_ref().and_then(|p| p.persistent.as_ref()) else {
        return;
    };
    if s.live_unavailable.is_some() {
        return;
    }
    let mut line = format!("persistent       {}", human_bytes(p.total));
    if let (Some(op), Some(b)) = (p.optimizer, p.buffers) {
        let _ = write!(
            line,
            " = params {} + grads {} + optimizer {}",
            p.params.map_or("unknown".into(), human_bytes),
            p.grads.map_or("unknown".into(), human_bytes),
            human_bytes(op)
        );
        if b > 0 {
            let _ = write!(line, " + buffers {}", human_bytes(b));
        }
        if p.other > 0 {
            let _ = write!(line, " + other {}", human_bytes(p.other));
        }
    }
    if p.private_pool > 0 {
        let _ = write!(line, " (private pools {})", human_bytes(p.private_pool));
    }
    if let (Some(bpp), Some(n)) = (p.bytes_per_param, p.param_count) {
        let _ = write!(line, " → {bpp:.1} B/param × {} params", grouped(n));
    }
    let _ = write!(line, " ({}) · {}", p.model, p.source);
    crate::report_line!(o, "{line}");
}

/// The top of the stack tree at the peak.
fn tree(o: &mut String, s: &Summary) {
    let Some(p) = &s.peak else {
        return;
    };
    if let Some(why) = s.live_unavailable {
        let _ = writeln!(o);
        crate::report_line!(o, "stack tree at the peak: {why}");
        return;
    }
    let _ = writeln!(o);
    crate::report_line!(
        o,
        "stack tree at the peak ({} in {} storages; outermost frame first):",
        human_bytes(p.tree.bytes),
        grouped(p.tree.count as u64)
    );
    fn walk(o: &mut String, n: &TreeNode, depth: usize) {
        for c in &n.children {
            crate::report_line!(
                o,
                "  {:>10} {:>6}  {}{}",
                human_bytes(c.bytes),
                c.count,
                "  ".repeat(depth),
                c.frame
            );
            walk(o, c, depth + 1);
        }
        if n.omitted_bytes > 0 {
            crate::report_line!(
                o,
                "  {:>10} {:>6}  {}… (more, not shown)",
                human_bytes(n.omitted_bytes),
                n.omitted_count,
                "  ".repeat(depth)
            );
        }
    }
    if p.tree.self_bytes > 0 {
        crate::report_line!(
            o,
            "  {:>10} {:>6}  (no stack)",
            human_bytes(p.tree.self_bytes),
            p.tree.self_count
        );
    }
    walk(o, &p.tree, 0);
}

/// Source, format, device, rank, event count.
fn header(o: &mut String, s: &Summary) {
    crate::report_line!(
        o,
        "memtide summary · {} · {} · {}",
        s.source,
        s.format,
        s.device
    );
    if let Some(d) = &s.distributed {
        crate::report_line!(o, "distributed      {}", d.label());
    }
    crate::report_line!(o, "sizes in binary units (1 MiB = 1,048,576 B)");
    crate::report_line!(o, "events           {} (event axis)", grouped(s.events));
}

/// The peak, where it is, and its bands.
fn peak(o: &mut String, s: &Summary, v: &TextView) {
    match &s.peak {
        None => {
            crate::report_line!(o, "peak             unavailable (no events)");
        }
        Some(p) => {
            let mut at = if p.at_start {
                "at start (the initial state, before event #0)".to_string()
            } else {
                format!("at event #{}", p.index)
            };
            if !p.at_start && p.source_index != p.index {
                let _ = write!(at, " (#{} in the file)", p.source_index);
            }
            if let Some(t) = p.time_us {
                let _ = write!(at, " · {}", time_text(s, t, v));
            }
            if let Some(m) = &p.mark {
                let _ = write!(at, " · {m}");
            }
            if let Some(w) = &s.window {
                crate::report_line!(
                    o,
                    "window           {} = {} (events #{}–#{}); the peak below is measured in it",
                    w.spec,
                    w.label,
                    w.first_index,
                    w.last_index
                );
            }
            crate::report_line!(o, "peak             {} {at}", bytes_both(p.bytes));
            crate::report_line!(o, "bands at peak    ({})", s.bands_source);
            // Each reason once: the bands it leaves unavailable below it say only that.
            let mut said: Option<&str> = None;
            for b in Band::ALL {
                let v = p.bands[b.idx()];
                let pct = if p.bytes > 0 {
                    v as f64 * 100.0 / p.bytes as f64
                } else {
                    0.0
                };
                if !s.band_known(b) {
                    // Not measured: a figure that cannot be known is not 0.
                    let why = band_unavailable(b);
                    let shown = if said == Some(why) { "" } else { why };
                    said = Some(why);
                    crate::report_line!(o, "  {:<12} {:>12}  {shown}", b.name(), "unavailable");
                    continue;
                }
                crate::report_line!(
                    o,
                    "  {:<12} {:>12}  {:>5.1}%",
                    b.name(),
                    human_bytes(v),
                    pct
                );
                if b == Band::External {
                    external_sources(o, p);
                }
            }
        }
    }
}

/// Why band `b` is unavailable: the external band is not measured; the others are not told
/// apart in a file that names no allocation.
pub fn band_unavailable(b: Band) -> &'static str {
    if b == Band::External {
        EXTERNAL_UNAVAILABLE
    } else {
        BANDS_UNAVAILABLE
    }
}

/// Why persistent, activation and workspace are unavailable where a file names no
/// allocation (its bytes are all in the unknown band).
pub const BANDS_UNAVAILABLE: &str =
    "the file records no addresses: which allocations are live is unknown, so the total is not split";

/// Why the external band is unavailable, and what measures it.
pub const EXTERNAL_UNAVAILABLE: &str =
    "no source of memory outside the framework (--nsys, --device-log or the recorder's NVML samples measure it)";

/// The external band's lines by source (`nccl`, `cudnn`, …), indented under it.
fn external_sources(o: &mut String, p: &memtide_core::analysis::PeakReport) {
    for (src, b) in p.external_by_source.iter().flatten() {
        crate::report_line!(o, "    {:<20} {:>12}", src, human_bytes(*b));
    }
}

/// Reserved peak, capacity, final bytes, allocator settings, unmatched frees.
fn figures(o: &mut String, s: &Summary) {
    crate::report_line!(
        o,
        "reserved peak    {}",
        match (s.reserved_peak, s.reserved_peak_index) {
            (Some(r), Some(i)) => match s.reserved_peak_source_index.filter(|&f| f != i) {
                Some(f) => format!("{} at event #{i} (#{f} in the file)", bytes_both(r)),
                None => format!("{} at event #{i}", bytes_both(r)),
            },
            (Some(r), None) => format!("{} at start (before event #0)", bytes_both(r)),
            _ => "unavailable (the source records no reserved memory)".into(),
        }
    );
    crate::report_line!(
        o,
        "capacity         {}",
        s.capacity.map_or("unknown".to_string(), bytes_both)
    );
    crate::report_line!(o, "final            {}", bytes_both(s.final_bytes));
    if let Some(serde_json::Value::Object(a)) = &s.allocator_settings {
        let items: Vec<String> = a.iter().map(|(k, v)| format!("{k}={v}")).collect();
        crate::report_line!(o, "allocator        {}", items.join(" "));
    }
    crate::report_line!(
        o,
        "unmatched frees  {}",
        if s.unmatched_frees_known {
            s.unmatched_frees.to_string()
        } else {
            "unavailable (the source records no addresses)".to_string()
        }
    );
    if s.skipped_lines > 0 {
        crate::report_line!(o, "skipped lines    {} (--lenient)", s.skipped_lines);
    }
}

/// How `--nsys` was put on the trace: process, matches, what was left out and unseen.
fn nsys(o: &mut String, s: &Summary) {
    let Some(n) = &s.nsys else {
        return;
    };
    crate::report_line!(o, "nsys             {}", n.label());
    crate::report_line!(
        o,
        "                 {} device allocations of the process: {} PyTorch segments (matched by address and size, {} of them made before the history; left out: reserved already), {} external; {} made before the capture, {} never freed, {} between two events (unseen), {} outside the trace; {} host allocations not counted",
        n.allocations, n.pytorch_segments, n.pytorch_segments_before_history, n.external, n.before_capture, n.never_freed, n.between_events, n.outside_trace, n.host
    );
    for u in &n.unseen {
        crate::report_line!(o, "                 not seen: {u}");
    }
}

/// How `--device-log` was aligned: source, zone and shift, interval, coverage.
fn device_log(o: &mut String, s: &Summary) {
    let Some(d) = &s.device_log else {
        return;
    };
    let dev = d
        .device
        .map_or("no matching device".to_string(), |i| format!("device {i}"));
    let every = d.sample_interval_us.map_or(String::new(), |i| {
        format!(" every {}", external::interval(i))
    });
    crate::report_line!(
        o,
        "device log       {} · {} · {dev} · {} samples{every}",
        d.path,
        d.format,
        grouped(d.samples)
    );
    crate::report_line!(
        o,
        "  aligned        {} · shift {}",
        d.time_basis,
        external::secs(d.shift_us)
    );
    let peak = match s.device_log_peak_covered {
        Some(true) => " · the peak is inside the log (its external bytes are the log's)",
        Some(false) => " · the peak is outside the log (external there unknown, shown as 0)",
        None => "",
    };
    crate::report_line!(
        o,
        "  coverage       {:.1}% of the trace ({} of {} events){peak}",
        d.coverage * 100.0,
        grouped(d.covered_events),
        grouped(d.events)
    );
    if d.used_below_reserved > 0 {
        crate::report_line!(
            o,
            "  used < reserved at {} events (by up to {})",
            grouped(d.used_below_reserved),
            human_bytes(d.max_shortfall)
        );
    }
}

/// The biggest storages live at the peak (or why the live set is unknown).
fn live_set(o: &mut String, s: &Summary, v: &TextView) {
    if let (Some(_), Some(why)) = (&s.peak, s.live_unavailable) {
        let _ = writeln!(o);
        crate::report_line!(o, "live at the peak: {why}");
    } else if let Some(p) = &s.peak {
        let _ = writeln!(o);
        crate::report_line!(
            o,
            "top {} live at the peak (of {}):",
            p.live.len(),
            grouped(p.live_count as u64)
        );
        for e in &p.live {
            let mut flags = String::new();
            if e.views > 0 {
                let _ = write!(
                    flags,
                    "  {} view{}",
                    e.views,
                    if e.views == 1 { "" } else { "s" }
                );
            }
            if let Some(r) = e.retained {
                let _ = write!(flags, "  {}", r.words());
            }
            if !e.compiled.is_empty() {
                let _ = write!(flags, "  [compiled: {}]", e.compiled);
            }
            if !e.forward_frame.is_empty() {
                let _ = write!(flags, "  (forward: {})", e.forward_frame);
            }
            let cat = if e.inferred {
                format!("{}?", e.category)
            } else {
                e.category.to_string()
            };
            let frame = super::frames::shown_frame(e, v.all_frames);
            // Snapshots and profiler traces name nothing: the label is the module or the op.
            let what = if e.label.is_empty() && frame.is_empty() {
                // A snapshot dumped without stacks: as the explorer's inspector says.
                "(no stack recorded)".to_string()
            } else if e.label.is_empty() {
                frame
            } else {
                format!("{:<28} {frame}", e.label)
            };
            crate::report_line!(
                o,
                "  {:>10}  {:<10} {:<16} {}{}",
                human_bytes(e.bytes.0),
                e.band.name(),
                cat,
                what.trim_end(),
                flags
            );
        }
    }
}

/// The peak of each window (phases folded by name unless `v.all_windows`).
fn windows(o: &mut String, s: &Summary, v: &TextView) {
    if s.windows.is_empty() {
        return;
    }
    let _ = writeln!(o);
    crate::report_line!(o, "windows:");
    let shown = shown_windows(s, v.all_windows);
    for (w, count) in &shown.rows {
        crate::report_line!(o, "  {}", window_line(w, *count));
    }
    for line in shown.notes() {
        crate::report_line!(o, "  {line}");
    }
}

/// The windows a readable report (text, Markdown) lists: every window as [`Summary::windows`]
/// lists it, or (folded) the steps and `reset_peak` windows as listed and each phase name
/// once — its count and the window of its highest peak.
pub struct ShownWindows<'a> {
    /// Each row's window and how many windows it stands for (1: itself).
    pub rows: Vec<(&'a WindowReport, u64)>,
    /// Windows left out (the first and last [`WINDOW_ENDS`] of each kind listed).
    pub omitted: u64,
    /// Phase names left out (folded: the first and last [`WINDOW_ENDS`] names listed).
    pub names_omitted: usize,
    /// Whether some rows stand for several phase windows.
    pub folded: bool,
}

impl ShownWindows<'_> {
    /// The lines after the rows: what was left out, and how to see every window.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.omitted > 0 {
            out.push(windows_omitted_text(self.omitted));
        }
        if self.names_omitted > 0 {
            out.push(format!(
                "… {} more phase names not listed (listed: the first and last {WINDOW_ENDS})",
                grouped(self.names_omitted as u64)
            ));
        }
        if self.folded {
            out.push(
                "(phases of one name folded: how many, and the highest peak among them; summary --windows all lists every window)"
                    .into(),
            );
        }
        out
    }
}

/// [`ShownWindows`] of `s`: every window listed when `all` or when no phase name repeats.
pub fn shown_windows(s: &Summary, all: bool) -> ShownWindows<'_> {
    let folded = !all && s.windows_folded.iter().any(|f| f.count > 1);
    if !folded {
        return ShownWindows {
            rows: s.windows.iter().map(|w| (w, 1)).collect(),
            omitted: s.windows_omitted,
            names_omitted: 0,
            folded: false,
        };
    }
    let phases: u64 = s.windows_folded.iter().map(|f| f.count).sum();
    let phases_listed = s.windows.iter().filter(|w| w.kind == PHASE).count() as u64;
    let mut rows: Vec<(&WindowReport, u64)> = s
        .windows
        .iter()
        .filter(|w| w.kind != PHASE)
        .map(|w| (w, 1))
        .collect();
    let (head, names_omitted, tail) = table_ends(&s.windows_folded);
    rows.extend(head.iter().chain(tail).map(|f| (&f.highest, f.count)));
    ShownWindows {
        rows,
        omitted: s
            .windows_omitted
            .saturating_sub(phases.saturating_sub(phases_listed)),
        names_omitted,
        folded: true,
    }
}

/// The kind of the windows that fold by name.
const PHASE: &str = "phase";

/// The line that says how many windows a long run's report leaves out.
pub fn windows_omitted_text(n: u64) -> String {
    format!(
        "… {} more windows not listed (listed: the first and last {WINDOW_ENDS} of each kind, and the peak's)",
        grouped(n)
    )
}

/// The line that stands for the steps a long run's table leaves out.
pub fn steps_omitted_text(n: usize) -> String {
    format!(
        "… {} steps not shown (summary --json lists every step)",
        grouped(n as u64)
    )
}

/// The per-step table and the baseline trend.
fn steps(o: &mut String, s: &Summary, v: &TextView) {
    let t = &s.trend;
    if !t.steps.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "steps (baseline = bytes live at the step's start):");
        let (head, left_out, tail) = table_ends(&t.steps);
        let row = |o: &mut String, r: &StepRow| {
            crate::report_line!(
                o,
                "  {:<16} baseline {:>11}  peak {:>11}",
                r.name,
                human_bytes(r.baseline.0),
                human_bytes(r.peak.0)
            );
        };
        head.iter().for_each(|r| row(o, r));
        if left_out > 0 {
            crate::report_line!(o, "  {}", steps_omitted_text(left_out));
        }
        tail.iter().for_each(|r| row(o, r));
        if let Some(words) = t.growth_words() {
            crate::report_line!(o, "  baseline after warm-up: {words}");
        }
        if !t.survivors.is_empty() {
            crate::report_line!(
                o,
                "  allocations that survive every step boundary, biggest first:"
            );
            for sv in t.survivors.iter().take(10) {
                crate::report_line!(
                    o,
                    "    {:>11}  {} × {}  {}  (allocated in {})",
                    human_bytes(sv.bytes.0),
                    sv.count,
                    if sv.name.is_empty() { "-" } else { &sv.name },
                    if v.all_frames || sv.user_frame.is_empty() {
                        &sv.frame
                    } else {
                        &sv.user_frame
                    },
                    names_text(&sv.steps, SURVIVOR_STEPS_NAMED)
                );
            }
        }
    }
}

/// Notes, then warnings (those that put the figures in doubt marked `!`).
fn notes_and_warnings(o: &mut String, s: &Summary) {
    if !s.notes.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "notes:");
        for n in &s.notes {
            crate::report_line!(o, "  - {n}");
        }
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "warnings:");
        for w in &s.warnings {
            // Those that say the figures may be wrong are the ones `check` refuses on.
            let mark = if s.doubtful.contains(w) { "!" } else { "-" };
            crate::report_line!(o, "  {mark} {w}");
        }
        if !s.doubtful.is_empty() {
            crate::report_line!(
                o,
                "  (! = the figures may be wrong: `memtide check` exits 2 unless --allow-warnings)"
            );
        }
    }
}

/// One window's line; a row standing for `count` > 1 windows of one name says how many and
/// shows the highest one.
fn window_line(w: &WindowReport, count: u64) -> String {
    let peak = match (w.peak_bytes, w.peak_index) {
        (Some(b), Some(i)) => format!("peak {} at #{i}", human_bytes(b)),
        (Some(b), None) if w.peak_at_start => format!("peak {} at start", human_bytes(b)),
        _ => "peak unavailable".into(),
    };
    if count > 1 {
        return format!(
            "{:<10} {:<16} × {}  highest {peak} (in #{}–#{})",
            w.kind,
            w.name,
            grouped(count),
            w.first_index,
            w.last_index
        );
    }
    format!(
        "{:<10} {:<16} #{}–#{}  {peak}",
        w.kind, w.name, w.first_index, w.last_index
    )
}
