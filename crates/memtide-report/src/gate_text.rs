//! The words of a gate's verdict: the `ok:` / `FAIL:` / `note:` lines `memtide check` prints
//! for one device ([`device_lines`]), a file of several ([`devices_lines`]) and a job
//! ([`job_lines`]), rendered from the core's structured [`memtide_core::gate`] verdicts.

use memtide_core::allocator::shown;
use memtide_core::gate::{
    first_names, DevicesVerdict, GrowthGate, ImbalanceGate, JobGrowthGate, JobOomGate, JobPeakGate,
    JobVerdict, LiveItem, OomEvidence, Outcome, PeakEvidence, PeakGate, SkipReason, Verdict,
};
use memtide_core::trace::human_bytes;

/// ` (N warnings that the figures may be wrong allowed by --allow-warnings)` after an `ok`.
fn allowed_note(v: &Verdict) -> String {
    match v.allowed_warnings.len() {
        0 => String::new(),
        n => format!(
            " ({n} warning{} that the figures may be wrong allowed by --allow-warnings)",
            plural(n)
        ),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// One device's verdict, a line per limit (the OOM first); an `ok` peak line is left out when
/// another limit failed.
pub fn device_lines(v: &Verdict) -> Vec<String> {
    let note = allowed_note(v);
    let mut lines = Vec::new();
    if let Some(o) = &v.oom {
        let l = oom_text(&o.evidence);
        lines.push(if o.gated {
            format!("FAIL: {l}")
        } else {
            format!("note: {l} (not gated: --max-peak gates an OOM)")
        });
    }
    if let Some(g) = &v.growth {
        lines.push(growth_line(g, &note));
    }
    if let Some(p) = &v.peak {
        if !p.passed || v.outcome != Outcome::Fail {
            lines.push(peak_line(p, &note));
        }
    }
    lines
}

/// The verdict on a file of several devices: each gated device's lines with its name after
/// the `ok:` / `FAIL:` / `note:` word, then the devices that could not be gated (an `error`
/// when they are all that keeps the file from passing) and those left out.
pub fn devices_lines(v: &DevicesVerdict) -> Vec<String> {
    let mut lines = Vec::new();
    for d in &v.devices {
        for l in device_lines(d) {
            lines.push(match l.split_once(": ") {
                Some((word, rest)) => format!("{word}: {}: {rest}", d.device),
                None => format!("{}: {l}", d.device),
            });
        }
    }
    let prefix = if v.outcome == Outcome::Incomplete {
        "error (exit 2: a pass needs every device checked)"
    } else {
        "note"
    };
    for u in &v.unchecked {
        lines.push(format!("{prefix}: {}: not checked: {}", u.device, u.error));
    }
    for s in &v.skipped {
        let why = match s.reason {
            SkipReason::NoEvents => "no events",
            SkipReason::HoldsNoMemory => "none of its events holds any memory",
        };
        lines.push(format!("note: {}: not checked: {why}", s.device));
    }
    lines
}

/// `out of memory at event #N on DEV: verdict …` for the first OOM.
pub fn oom_text(x: &OomEvidence) -> String {
    let more = match x.more {
        0 => String::new(),
        n => format!(" (and {n} more OOM{})", plural(n)),
    };
    let at = if x.user_frame.is_empty() {
        String::new()
    } else {
        format!(" (requested at {})", x.user_frame)
    };
    let short = match x.shortfall {
        Some(b) => format!("; {} short under the file's own settings", shown(Some(b))),
        None => String::new(),
    };
    let fixes = if !x.fixes_that_fit.is_empty() {
        format!(
            "; checked by replay: {} fits under the memory the run surely had",
            x.fixes_that_fit.join(", ")
        )
    } else if !x.fixes_that_depend.is_empty() {
        format!(
            "; checked by replay: {} fits only if memory outside the allocator was small enough (the file does not record it)",
            x.fixes_that_depend.join(", ")
        )
    } else if x.no_setting_fits {
        "; checked by replay: no allocator setting fits, even under the most the run could have had"
            .to_string()
    } else {
        String::new()
    };
    format!(
        "out of memory at event #{} on {}{at}: verdict {} — {} (requested {}, allocated {}, reserved {}, driver free {}){more}{short}{fixes}: {}",
        x.event,
        x.device,
        x.verdict,
        x.reasoning,
        shown(x.requested),
        shown(x.allocated),
        shown(x.reserved),
        shown(x.device_free),
        x.advice
    )
}

fn growth_line(g: &GrowthGate, note: &str) -> String {
    if g.passed {
        return format!(
            "ok: step baseline growth {:+.2}% is within --max-growth {:.2}%{note}",
            g.growth * 100.0,
            g.limit * 100.0
        );
    }
    let who: Vec<String> = g
        .survivors
        .iter()
        .map(|s| {
            let frame = if s.user_frame.is_empty() {
                String::new()
            } else {
                format!(", {}", s.user_frame)
            };
            format!("{} × {} ({}{frame})", s.count, s.name, human_bytes(s.bytes))
        })
        .collect();
    format!(
        "FAIL: step baseline grew by {} ({:+.2}%) after warm-up, over --max-growth {:.2}%{}",
        human_bytes(g.growth_bytes.unsigned_abs()),
        g.growth * 100.0,
        g.limit * 100.0,
        if who.is_empty() {
            String::new()
        } else {
            format!("; surviving every step: {}", who.join(", "))
        }
    )
}

/// `at event #N (#M in the file)`, or `at start (before the first event)`.
pub fn at_text(p: &PeakEvidence) -> String {
    match (p.event, p.file_event) {
        (None, _) => "at start (before the first event)".to_string(),
        (Some(e), Some(f)) => format!("at event #{e} (#{f} in the file)"),
        (Some(e), None) => format!("at event #{e}"),
    }
}

fn peak_line(p: &PeakGate, note: &str) -> String {
    let wlabel = p
        .window
        .as_ref()
        .map(|w| format!(" in window {} ({})", w.spec, w.label))
        .unwrap_or_default();
    let at = at_text(&p.evidence);
    let mark = p
        .evidence
        .mark
        .as_ref()
        .map(|m| format!(" ({m})"))
        .unwrap_or_default();
    if p.passed {
        return format!(
            "ok: peak {} ({} B){wlabel} {at}{mark} is within --max-peak {}{note}",
            human_bytes(p.peak),
            p.peak,
            human_bytes(p.limit)
        );
    }
    format!(
        "FAIL: peak {} ({} B){wlabel} {at}{mark} exceeds --max-peak {} by {}; biggest live: {}",
        human_bytes(p.peak),
        p.peak,
        human_bytes(p.limit),
        human_bytes(p.peak - p.limit),
        biggest_live_text(p.biggest_live.as_deref())
    )
}

/// The biggest owners of live memory of a FAIL line, or why they are unknown.
pub fn biggest_live_text(live: Option<&[LiveItem]>) -> String {
    let Some(live) = live else {
        return "unavailable (the file records no addresses)".into();
    };
    live.iter()
        .map(|e| {
            // The row's label (name, module path or op) and its user frame.
            let frame = super::frames::shown_frame_of(&e.frame, &e.user_frame, &e.innermost, false);
            let what = match (e.label.is_empty(), frame.is_empty()) {
                (false, false) => format!("{} ({frame})", e.label),
                (false, true) => e.label.clone(),
                (true, false) => frame,
                (true, true) => "unnamed".to_string(),
            };
            match e.count {
                1 => format!("{} {} {what}", human_bytes(e.bytes), e.band),
                n => format!(
                    "{} ({n} allocations) {} {what}",
                    human_bytes(e.bytes),
                    e.band
                ),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A job's verdict: the OOM ranks, then a line per limit, then what was not checked (an
/// `error` when it is all that keeps the job from passing).
pub fn job_lines(v: &JobVerdict) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(o) = &v.oom {
        lines.push(job_oom_line(o));
    }
    if let Some(p) = &v.peak {
        lines.push(job_peak_line(p));
    }
    if let Some(i) = &v.imbalance {
        lines.push(imbalance_line(i));
    }
    if let Some(g) = &v.growth {
        lines.push(job_growth_line(g));
    }
    let prefix = if v.outcome == Outcome::Incomplete {
        "error (exit 2: a pass needs every rank checked)"
    } else {
        "note"
    };
    lines.extend(v.unchecked.iter().map(|u| format!("{prefix}: {u}")));
    // Files that are not ranks, one line per kind of reason: listed, never blocking.
    let skipped: Vec<memtide_core::ranks::Skipped> = v
        .skipped
        .iter()
        .map(|s| memtide_core::ranks::Skipped {
            path: s.file.clone().into(),
            reason: s.reason.clone(),
        })
        .collect();
    lines.extend(
        memtide_core::ranks::group_skipped(&skipped)
            .iter()
            .map(|g| format!("note: skipped: {}", g.line())),
    );
    lines
}

fn job_oom_line(o: &JobOomGate) -> String {
    let names: Vec<String> = o
        .ranks
        .iter()
        .map(|x| format!("{} ({} OOM{})", x.rank, x.ooms, plural(x.ooms)))
        .collect();
    let line = format!(
        "out of memory on {} rank{}: {} (memtide summary FILE explains each)",
        names.len(),
        plural(names.len()),
        first_names(names, 10)
    );
    if o.gated {
        format!("FAIL: {line}")
    } else {
        format!("note: {line} (not gated: --max-peak gates an OOM)")
    }
}

/// ` on cuda:1` for a rank whose file holds several devices, else nothing.
fn on_device(device: Option<&str>) -> String {
    device.map_or(String::new(), |d| format!(" on {d}"))
}

fn job_peak_line(p: &JobPeakGate) -> String {
    if p.passed {
        return format!(
            "ok: every rank's peak is within --max-peak {}{}",
            human_bytes(p.limit),
            p.highest.as_ref().map_or(String::new(), |t| format!(
                " (highest: {}{} {})",
                t.rank,
                on_device(t.device.as_deref()),
                human_bytes(t.peak)
            ))
        );
    }
    let names: Vec<String> = p
        .over
        .iter()
        .map(|x| {
            format!(
                "{}{} {} (+{})",
                x.rank,
                on_device(x.device.as_deref()),
                human_bytes(x.peak),
                human_bytes(x.peak - p.limit)
            )
        })
        .collect();
    format!(
        "FAIL: {} rank{} over --max-peak {}: {}",
        names.len(),
        plural(names.len()),
        human_bytes(p.limit),
        first_names(names, 10)
    )
}

/// `7.81×`, or `∞ (the lowest peak is 0)`.
pub fn ratio_text(ratio: Option<f64>) -> String {
    match ratio {
        Some(x) => format!("{x:.2}×"),
        None => "∞ (the lowest peak is 0)".into(),
    }
}

/// The ranks that bound the spread: `rank 3 7.81 GiB / rank 0 1.00 GiB`, or `every rank
/// 33.74 GiB` when the highest and lowest peaks are equal (one rank named twice said nothing).
pub fn extremes_text(max_rank: u64, max: u64, min_rank: u64, min: u64) -> String {
    if max == min {
        format!("every rank {}", human_bytes(max))
    } else {
        format!(
            "rank {max_rank} {} / rank {min_rank} {}",
            human_bytes(max),
            human_bytes(min)
        )
    }
}

fn imbalance_line(i: &ImbalanceGate) -> String {
    let text = format!(
        "max/min {} ({})",
        ratio_text(i.ratio),
        extremes_text(i.max_rank, i.max_peak, i.min_rank, i.min_peak)
    );
    if i.passed {
        format!(
            "ok: rank peaks differ by {:+.2}%, within --max-imbalance {:.2}%: {text}",
            i.imbalance.unwrap_or(0.0) * 100.0,
            i.limit * 100.0
        )
    } else {
        format!(
            "FAIL: rank peaks differ by {}, over --max-imbalance {:.2}%: {text}",
            i.imbalance
                .map_or("∞".into(), |x| format!("{:+.2}%", x * 100.0)),
            i.limit * 100.0
        )
    }
}

fn job_growth_line(g: &JobGrowthGate) -> String {
    if g.passed {
        return format!(
            "ok: every rank's step baseline growth is within --max-growth {:.2}%",
            g.limit * 100.0
        );
    }
    let over: Vec<String> = g
        .over
        .iter()
        .map(|x| {
            format!(
                "{}{} {:+.2}%",
                x.rank,
                on_device(x.device.as_deref()),
                x.growth * 100.0
            )
        })
        .collect();
    format!(
        "FAIL: step baseline grew over --max-growth {:.2}% on {} rank{}: {}",
        g.limit * 100.0,
        over.len(),
        plural(over.len()),
        first_names(over, 10)
    )
}
