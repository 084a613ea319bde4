//! Kineto Chrome traces (`torch.profiler` with `profile_memory=True`), streamed: one trace per
//! device from the `[memory]` events; `export_memory_timeline` files are handed to
//! [`super::memory_timeline`].

mod attribute;
mod build;
mod parse;
mod sidecar;
mod stream;

pub use build::{step_like, PREEXISTING};

use super::detect::Format;
use super::error::FormatError;
use super::memory_timeline;
use super::source::{Input, Progress};
use super::LoadOptions;
use crate::trace::Trace;
use parse::{Collected, Root};
use serde::de::DeserializeSeed;
use std::io::BufReader;

/// Reads every device of a Kineto trace or memory timeline.
pub fn read(
    source: &str,
    input: Input,
    format: Format,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<Vec<Trace>, FormatError> {
    if format == Format::MemoryTimeline {
        return memory_timeline::read(source, input);
    }
    // Read the (small) sidecar first: a bad path fails before a long parse.
    let mut side = match &opts.categories {
        Some(p) => Some(sidecar::Sidecar::new(
            memory_timeline::read_path(p).map_err(|e| {
                FormatError::Invalid(format!("categories file {}: {e}", p.display()))
            })?,
        )),
        None => None,
    };
    let (c, warnings) = collect(input, progress)?;
    if c.mem.is_empty() && c.ooms.is_empty() {
        return Err(FormatError::Empty(format!(
            "the Kineto trace holds no [memory] events ({} trace events read): record it with torch.profiler.profile(profile_memory=True)",
            c.events_read
        )));
    }
    let attr = attribute::attribute(&c);
    let traces = build::build_all(build::Shared {
        c: &c,
        attr: &attr,
        source,
        sidecar: side.as_mut(),
        sidecar_name: opts
            .categories
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        warnings: &warnings,
    });
    Ok(traces)
}

/// The streaming pass. A trace cut short after some events opens with a warning.
fn collect(input: Input, progress: &Progress) -> Result<(Collected, Vec<String>), FormatError> {
    let (tracker, pos) = stream::Tracker::new(input.into_reader(), progress.clone());
    let reader = BufReader::with_capacity(1 << 20, tracker);
    let mut c = Collected::new();
    let mut de = serde_json::Deserializer::from_reader(reader);
    let res = Root(&mut c).deserialize(&mut de).and_then(|()| de.end());
    let mut warnings = Vec::new();
    if let Err(e) = res {
        let pos = pos.borrow();
        if pos.was_cancelled() || progress.is_cancelled() {
            return Err(FormatError::Cancelled);
        }
        if e.is_eof() && c.events_read > 0 {
            warnings.push(format!(
                "trace is truncated at byte {}; showing the {} events read (the profiler may have died before finishing the file)",
                pos.offset, c.events_read
            ));
        } else if e.is_io() {
            return Err(FormatError::Io(e.into()));
        } else {
            let (off, exact) = pos.offset_of(e.line(), e.column());
            let approx = if exact { "" } else { "about " };
            return Err(FormatError::At {
                offset: off,
                reason: format!(
                    "malformed Kineto JSON ({approx}line {}, column {}): {}",
                    e.line(),
                    e.column(),
                    strip_position(&e.to_string())
                ),
            });
        }
    }
    if !c.saw_trace_events {
        return Err(FormatError::Invalid(
            "a JSON object without a \"traceEvents\" array: not a Kineto trace".into(),
        ));
    }
    Ok((c, warnings))
}

/// serde_json appends " at line L column C"; the caller reports it already.
fn strip_position(s: &str) -> &str {
    match s.rfind(" at line ") {
        Some(i) => &s[..i],
        None => s,
    }
}
