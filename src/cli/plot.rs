//! `memtide plot FILE -o out.svg|png`: the stacked band timeline as a picture to paste into a
//! pull request or an issue — bands in the theme's colours, the reserved outline, the capacity
//! line, step marks, the peak with its exact bytes, OOMs — on the explorer's peak-preserving
//! columns (drawn by [`memtide_report::picture`]); with two files, both runs aligned by step
//! ([`memtide_report::picture_diff`]).

use super::load::{open, pick_device};
use super::PlotArgs;
use crate::tui::theme::Theme;
use anyhow::{bail, Result};
use memtide_report::picture::to_png;
use std::path::Path;
use std::process::ExitCode;

/// What `-o` asks for: the format follows the extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

/// The picture format of `out`: `.svg` or `.png` (any case); SVG for `-` (standard output)
/// and a special file with no such extension (`/dev/stdout`, `/dev/null`, a FIFO); anything
/// else is refused before a long load.
fn format_of(out: &Path) -> Result<Format> {
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match ext.as_deref() {
        Some("svg") => Ok(Format::Svg),
        Some("png") => Ok(Format::Png),
        _ if crate::output_file::is_special(out) => Ok(Format::Svg),
        other => bail!(
            "-o {}: {}; plot writes .svg or .png (the format follows the extension), or SVG to - (standard output) or a device such as /dev/stdout",
            out.display(),
            other.map_or("the name has no extension".to_string(), |e| format!(
                "unknown picture format .{e}"
            ))
        ),
    }
}

pub fn run(a: &PlotArgs) -> Result<ExitCode> {
    // Refused before the (long) load: a bad name, or an output that is one of the inputs.
    format_of(&a.out)?;
    let theme = Theme::resolve(a.theme.as_deref().or(Some("light")), false)?;
    crate::output_file::refuse_inputs(&a.out, &inputs(a, &theme))?;
    if let Some(b) = &a.file_b {
        return two(a, b, theme);
    }
    let opened = open(&a.file, &a.input, a.capacity.as_deref())?;
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Some(t) = opened.devices.get(i) else {
        bail!("no trace to plot");
    };
    if t.index.is_empty() {
        bail!("{}: the trace has no events", a.file.display());
    }
    let name = a.file.file_name().map_or_else(
        || a.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let svg = memtide_report::picture::of_device(
        t,
        &name,
        a.window.as_deref(),
        &theme.palette(),
        a.width,
        a.height,
    )?;
    write(a, svg, &theme)
}

/// Every file the command reads: the traces, the side files, a theme TOML.
fn inputs<'a>(a: &'a PlotArgs, theme: &'a Theme) -> Vec<&'a Path> {
    let mut v = vec![a.file.as_path()];
    v.extend(a.file_b.as_deref());
    v.extend(super::load::side_files(&a.input));
    v.extend(theme.file.as_deref());
    v
}

/// Writes the SVG, or the PNG rendered from it when OUT ends in `.png`.
fn write(a: &PlotArgs, svg: String, theme: &Theme) -> Result<ExitCode> {
    let bytes = match format_of(&a.out)? {
        Format::Png => to_png(&svg)?,
        Format::Svg => svg.into_bytes(),
    };
    crate::output_file::write_atomically(&a.out, &bytes, &inputs(a, theme))?;
    crate::errln!(
        "wrote {} ({} bytes)",
        crate::output_file::shown(&a.out),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `plot A B`: both runs on one scale, aligned by step.
fn two(a: &PlotArgs, b: &Path, theme: Theme) -> Result<ExitCode> {
    if a.window.is_some() {
        bail!("--window draws one file; `plot A B` draws both whole runs");
    }
    if a.height < 200 {
        bail!("--height must be at least 200 pixels for two runs (labels and legend take 142)");
    }
    let side = |f: &Path| -> Result<memtide_core::open::Device> {
        let opened = open(f, &a.input, a.capacity.as_deref())?;
        let i = pick_device(&opened, a.input.device.as_deref())?;
        let Some(t) = opened.take(i) else {
            bail!("{}: no trace to plot", f.display());
        };
        if t.index.is_empty() {
            bail!("{}: the trace has no events", f.display());
        }
        Ok(t)
    };
    let (x, y) = (side(&a.file)?, side(b)?);
    let (na, nb) = (a.file.display().to_string(), b.display().to_string());
    let palette = theme.palette();
    let svg = memtide_report::picture_diff::of_runs(
        (&x, &na),
        (&y, &nb),
        a.bands.then_some(&palette),
        a.width,
        a.height,
    )?;
    write(a, svg, &theme)
}
