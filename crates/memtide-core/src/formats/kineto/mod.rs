//! Kineto Chrome traces (`torch.profiler` with `profile_memory=True`), streamed: one trace per
//! device from the `[memory]` events; `export_memory_timeline` files are handed to
//! `formats::memory_timeline`.

mod ahead;
mod attribute;
mod blocks;
mod build;
mod fast;
pub(crate) mod feed;
mod parse;
mod sidecar;

pub use build::{step_like, PREEXISTING};

use super::detect::Format;
use super::error::FormatError;
use super::memory_timeline;
use super::source::io_or_cancel;
use super::source::{Input, Progress};
use super::LoadOptions;
use crate::trace::Trace;
use feed::{Feed, FeedError};
use parse::Collected;

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
            memory_timeline::read_path(p).map_err(|e| FormatError::SideFile {
                what: format!("categories file {}", p.display()),
                reason: e.to_string(),
            })?,
        )),
        None => None,
    };
    let (mut c, warnings) = collect(input, opts.threads, progress)?;
    if c.mem.is_empty() && c.ooms.is_empty() {
        return Err(FormatError::Empty(format!(
            "the Kineto trace holds no [memory] events ({} trace events read): record it with torch.profiler.profile(profile_memory=True)",
            c.events_read
        )));
    }
    let attr = attribute::attribute(&c);
    c.drop_op_spans();
    let mut mem = std::mem::take(&mut c.mem);
    let mut traces = build::build_all(build::Shared {
        c: &c,
        mem: &mut mem,
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
    // Without PyTorch's own categories (--categories), bands are inferred from the op/frame
    // stacks and lifetimes, as for snapshots (by the door's reading step). A device without identities
    // has no allocation to infer a band for.
    if opts.categories.is_none() {
        for t in traces.iter_mut().filter(|t| t.identities_known()) {
            t.bands_source = crate::trace::BandsSource::Inferred;
        }
    }
    Ok(traces)
}

/// The streaming pass. A trace cut short after some events opens with a warning.
/// The warnings come with whether each says the figures may be wrong.
fn collect(
    input: Input,
    threads: super::Threads,
    progress: &Progress,
) -> Result<(Collected, Vec<(String, bool)>), FormatError> {
    let mut c = Collected::new();
    let mut warnings = Vec::new();
    // Read (and inflated) ahead on a thread of its own, unless one thread was asked for.
    let res = if threads == super::Threads::One {
        let mut feed = Feed::new(input.into_reader(), progress.clone());
        parse::scan(&mut feed, &mut c)
    } else {
        // A second thread parses the later part of each chunk ahead (`ahead`).
        let ahead = Some(&ahead::parse_ahead);
        feed::with_parse_ahead(input.into_reader(), progress, ahead, |ra| {
            let mut feed = Feed::chunks(ra, progress.clone());
            parse::scan(&mut feed, &mut c)
        })
    };
    match res {
        Ok(()) => {}
        Err(FeedError::Cancelled) => return Err(FormatError::Cancelled),
        Err(FeedError::Io(e)) => return Err(io_or_cancel(e)),
        // The events after the cut are lost: the peak may be among them.
        Err(FeedError::Eof { offset }) if c.events_read > 0 => warnings.push((
            format!(
                "trace is truncated at byte {offset}; showing the {} events read (the profiler may have died before finishing the file)",
                c.events_read
            ),
            true,
        )),
        Err(FeedError::Eof { offset }) => {
            return Err(FormatError::at(
                offset,
                "the Kineto trace ends before its first trace event",
            ))
        }
        Err(FeedError::Json { offset, line, msg }) => {
            return Err(FormatError::at(
                offset,
                format!("malformed Kineto JSON (line {line}): {msg}"),
            ))
        }
    }
    warnings.extend(c.warnings.drain(..).map(|w| (w, false)));
    if c.bad_bytes > 0 {
        warnings.push((
            format!(
                "{} [memory] event(s) left out: \"Bytes\" is missing or not an integer number (first: traceEvents[{}]); the figures miss what they allocated or freed",
                c.bad_bytes,
                c.first_bad_bytes.unwrap_or(0)
            ),
            true,
        ));
    }
    if !c.saw_trace_events {
        return Err(FormatError::Invalid(
            "a JSON object without a \"traceEvents\" array: not a Kineto trace".into(),
        ));
    }
    Ok((c, warnings))
}
