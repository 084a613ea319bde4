//! The inspector's content for one storage, built in `update` (draw only paints it): full
//! stack, lifetime with both ends, every view with its stack, and why it is still live.

use super::fmt;
use memtide_core::analysis::{entry_in, retained, FrameView, Retained};
use memtide_core::trace::{AllocId, Seq, StorageKind, Trace, FLAG_INFERRED};

/// Tone of a piece of inspector text; the theme picks the style at draw time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Text,
    Dim,
    Title,
    Warn,
    Band(memtide_core::trace::Band),
    /// A frame or path, as [`Tone::Text`] (or [`Tone::Dim`] when `dim`): cut from the left when
    /// it does not fit, so its `file:line function` end stays.
    Frame {
        dim: bool,
    },
}

/// One inspector line: spans of (text, tone).
pub type Line = Vec<(String, Tone)>;

fn t(s: impl Into<String>, tone: Tone) -> (String, Tone) {
    (s.into(), tone)
}

/// Why `id` is (or is not) live after `at`, in one sentence.
pub fn why_live(trace: &Trace, id: AllocId, at: Seq) -> String {
    if !trace.is_live_at(id, at) {
        return "not live at the cursor".into();
    }
    if let Some(&rel) = trace.base_released.get(&id) {
        if rel <= at {
            let holders: Vec<String> = trace
                .views_of(id)
                .filter(|v| v.created <= at && v.released.is_none_or(|r| at < r))
                .map(|v| {
                    let n = trace.strings.text(v.name);
                    if n.is_empty() {
                        format!("tensor {}", v.tensor)
                    } else {
                        format!("{n:?}")
                    }
                })
                .collect();
            let who = if holders.is_empty() {
                "a view".to_string()
            } else {
                format!("view {}", holders.join(", "))
            };
            let verb = if holders.len() > 1 { "hold" } else { "holds" };
            let base = format!(
                "base released at #{}, {who} still {verb} it",
                trace.event_number(rel)
            );
            return match retained(trace, id, at) {
                Some(r @ Retained::SmallView { .. }) => {
                    format!("retained by view: {}; {base}", r.words())
                }
                Some(Retained::UnknownSize) => {
                    format!("retained by a view (size unknown): {base}")
                }
                None if trace.holding_views(id, at).all(|v| v.bytes.is_some()) => {
                    format!("live: {base} (the views span most of it: ordinary sharing)")
                }
                None => format!(
                    "live: {base} (a {} kept through its views, as optimizers do: ordinary)",
                    trace.category(id).name()
                ),
            };
        }
    }
    match trace.end(id) {
        None => "live: never freed within the trace".into(),
        Some(_) => "live: its tensor still holds it".into(),
    }
}

/// The inspector lines for `id` seen from the cursor `at` (built-in frame rules, relative
/// times).
pub fn lines(trace: &Trace, id: AllocId, at: Seq) -> Vec<Line> {
    lines_in(
        trace,
        id,
        at,
        &FrameView::new(trace, &Default::default()),
        false,
        false,
    )
}

/// An external storage's source (the library that made it), kind, process and the times
/// its source recorded it made and freed (UTC).
fn external_line(trace: &Trace, id: AllocId) -> Line {
    let mut l = vec![
        t("outside the framework: ", Tone::Dim),
        t(
            trace.external_source(id).to_string(),
            Tone::Band(memtide_core::trace::Band::External),
        ),
    ];
    if let Some(d) = trace.ext_detail.get(&id) {
        let when = |us: Option<i64>, none: &str| {
            us.map_or(none.to_string(), |u| {
                format!("{} UTC", memtide_core::device_merge::utc_text(u))
            })
        };
        l.push(t(
            format!(
                " · {} memory of pid {} · made {} · freed {}",
                d.kind,
                d.pid,
                when(d.alloc_us, "before the capture range"),
                when(d.free_us, "never (within the capture)")
            ),
            Tone::Dim,
        ));
        if d.frames.is_empty() {
            l.push(t(" · no call chain recorded", Tone::Dim));
        }
    }
    l
}

/// How the inspector names where a storage lives: a block's address in hex (`addresses`: the
/// source's ids are block addresses, as in snapshots), else the source's id.
fn source_id(trace: &Trace, id: AllocId, addresses: bool) -> String {
    let src = trace.src_id(id).unwrap_or(0);
    if addresses && trace.storage_kind(id) == StorageKind::Block {
        format!("address {}", fmt::addr(src))
    } else {
        format!("source id {src}")
    }
}

/// Columns the inspector's doubt lines wrap at (they fit an 80-column terminal).
const DOUBT_WIDTH: usize = 76;

/// `lines` with the file's doubts (`summary`'s `doubtful_warnings`) under its first line,
/// word-wrapped, each starting with "doubtful:": every storage's figures share them.
pub fn with_doubts(mut lines: Vec<Line>, doubts: &[String]) -> Vec<Line> {
    let at = lines.len().min(1);
    let rows: Vec<Line> = doubts
        .iter()
        .flat_map(|d| {
            fmt::wrap(&format!("doubtful: {d}"), DOUBT_WIDTH)
                .into_iter()
                .enumerate()
                .map(|(i, row)| {
                    let indent = if i == 0 { "" } else { "  " };
                    vec![t(format!("{indent}{row}"), Tone::Warn)]
                })
        })
        .collect();
    lines.splice(at..at, rows);
    lines
}

/// The inspector lines for `id` seen from the cursor `at`, frames read through `view`, times
/// relative to the first event or absolute; `addresses`: the source's ids are addresses.
pub fn lines_in(
    trace: &Trace,
    id: AllocId,
    at: Seq,
    view: &FrameView,
    absolute: bool,
    addresses: bool,
) -> Vec<Line> {
    let at_text = |s: Seq| fmt::at_mode(trace, s, absolute);
    let mut out: Vec<Line> = Vec::new();
    let cat = trace.category(id);
    let band = cat.band();
    let e = entry_in(trace, id, at, view);
    let inferred = trace.flags(id) & FLAG_INFERRED != 0;
    out.push(vec![
        t(
            if e.label.is_empty() {
                "(unnamed)"
            } else {
                e.label.as_str()
            },
            Tone::Title,
        ),
        t("  ", Tone::Text),
        t(fmt::bytes(trace.size(id).0), Tone::Title),
        t("  ", Tone::Text),
        t(band.name(), Tone::Band(band)),
        t(
            format!(
                " ({}, {})  storage {} · {}",
                cat.name(),
                if inferred { "inferred" } else { "recorded" },
                id.0,
                source_id(trace, id, addresses)
            ),
            Tone::Dim,
        ),
    ]);
    if let Some(r) = e.requested {
        // The size shown is the allocator's block (what memory_allocated() counts).
        out.push(vec![t(
            format!(
                "requested {} B, block {} B (the allocator's rounded or unsplit block)",
                fmt::thousands(r.0),
                fmt::thousands(trace.size(id).0)
            ),
            Tone::Text,
        )]);
    }
    let start = if trace.is_from_start(id) {
        "before the trace".to_string()
    } else {
        at_text(trace.start(id))
    };
    let end = match trace.end(id) {
        Some(e) => at_text(e),
        None => "never freed".to_string(),
    };
    let mut life = format!("lifetime [{start}, {end})");
    if let Some(e) = trace.end(id) {
        let n = e.0.saturating_sub(trace.start(id).0);
        life.push_str(&format!(" · {n} events"));
        if trace.clock.has_time() {
            let d = trace.ts(e).0 - trace.ts(trace.start(id)).0;
            life.push_str(&format!(" · {}", fmt::time_ns(d)));
        }
    }
    out.push(vec![t(life, Tone::Text)]);
    let why = why_live(trace, id, at);
    let tone = if why.starts_with("retained") {
        Tone::Warn
    } else {
        Tone::Text
    };
    out.push(vec![
        t(format!("at cursor {}: ", at_text(at)), Tone::Dim),
        t(why, tone),
    ]);
    // Why an inferred category was chosen where the file shows it only indirectly.
    if let Some(why) = trace.evidence.get(&id) {
        out.push(vec![
            t("inferred ", Tone::Dim),
            t(format!("{} because {why}", cat.name()), Tone::Text),
        ]);
    }
    if band == memtide_core::trace::Band::External {
        out.push(external_line(trace, id));
    }
    // Where in the user's code: the user frame with its full path, the op, torch.compile.
    if !e.user_frame_full.is_empty() {
        let mut l = vec![
            t("user frame ", Tone::Dim),
            t(e.user_frame_full.clone(), Tone::Frame { dim: false }),
        ];
        if !e.innermost.is_empty() && !e.user_frame.ends_with(&format!(" {}", e.innermost)) {
            l.push(t(format!("  ← {}", e.innermost), Tone::Dim));
        }
        out.push(l);
    } else if !e.user_frame.is_empty() {
        // "autograd backward", or the forward line of a backward allocation.
        out.push(vec![
            t("user frame ", Tone::Dim),
            t(
                format!(
                    "{} (made on the autograd engine's thread: no frame of your code)",
                    e.user_frame
                ),
                Tone::Text,
            ),
        ]);
    } else if !e.innermost.is_empty() {
        out.push(vec![
            t("op ", Tone::Dim),
            t(
                format!("{} (no user frame in the stack)", e.innermost),
                Tone::Text,
            ),
        ]);
    }
    if !e.compiled.is_empty() {
        out.push(vec![
            t("compiled region ", Tone::Dim),
            t(e.compiled.clone(), Tone::Text),
        ]);
    }
    if !e.forward_frame.is_empty() {
        out.push(vec![
            t("forward frame ", Tone::Dim),
            t(
                format!(
                    "{} (the forward line this backward allocation belongs to)",
                    e.forward_frame
                ),
                Tone::Text,
            ),
        ]);
    }
    // Fields the source recorded for it (snapshot pool, stream, compile context, ...).
    if let Some(&x) = trace.extra.get(&id) {
        out.push(vec![
            t("fields: ", Tone::Dim),
            t(trace.strings.shown(x), Tone::Text),
        ]);
    }
    out.push(vec![t("stack (innermost first):", Tone::Dim)]);
    let sid = trace.stack_id(id);
    if trace.strings.stack(sid).is_empty() {
        out.push(vec![t("  (no stack recorded)", Tone::Dim)]);
    }
    for f in trace.strings.stack_rows(sid, usize::MAX) {
        out.push(vec![t(format!("  {f}"), Tone::Frame { dim: false })]);
    }
    let views: Vec<_> = trace.views_of(id).collect();
    out.push(vec![t(format!("views ({}):", views.len()), Tone::Dim)]);
    for v in views {
        let vn = trace.strings.text(v.name);
        let rel = match v.released {
            Some(r) => format!("released {}", at_text(r)),
            None => "never released".into(),
        };
        let live = v.created <= at && v.released.is_none_or(|r| at < r);
        out.push(vec![
            t(
                format!("  {}", if vn.is_empty() { "(unnamed view)" } else { vn }),
                if live { Tone::Warn } else { Tone::Text },
            ),
            t(
                format!(
                    "  tensor {}{} · created {} · {rel}{}",
                    v.tensor,
                    v.bytes
                        .map(|b| format!(" · {}", fmt::bytes(b.0)))
                        .unwrap_or_default(),
                    at_text(v.created),
                    if live {
                        " · holds it at the cursor"
                    } else {
                        ""
                    }
                ),
                Tone::Dim,
            ),
        ]);
        for f in trace.strings.stack_rows(v.stack, usize::MAX) {
            out.push(vec![t(format!("      {f}"), Tone::Frame { dim: true })]);
        }
    }
    // The file's allocator settings (snapshots), with the history-cut flag among them.
    if let Some((_, a)) = trace.meta.iter().find(|(k, _)| k == "allocator_settings") {
        out.push(vec![t("allocator settings of the file:", Tone::Dim)]);
        out.push(vec![t(format!("  {a}"), Tone::Text)]);
    }
    out.push(vec![t(
        "a: jump to alloc · f: jump to free · j/k: scroll · Esc: close",
        Tone::Dim,
    )]);
    out
}
