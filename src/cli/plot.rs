//! `memtide plot FILE -o out.svg|png`: the stacked band timeline as a picture to paste into a
//! pull request or an issue — bands in the theme's colours, the reserved outline, the capacity
//! line, step marks, the peak with its exact bytes, OOMs — on the explorer's peak-preserving
//! columns (drawn by `tui::picture`).

use super::load::{index_all, load, pick_device};
use super::PlotArgs;
use crate::tui::picture::{svg, to_png, Picture};
use crate::tui::theme::Theme;
use anyhow::{bail, Result};
use memtide_core::trace::Seq;
use std::process::ExitCode;

pub fn run(a: &PlotArgs) -> Result<ExitCode> {
    if !(200..=8000).contains(&a.width) || !(120..=8000).contains(&a.height) {
        bail!("--width must be 200–8000 and --height 120–8000 pixels");
    }
    let loaded = load(&a.file, &a.input)?;
    let i = pick_device(&loaded, a.input.device.as_deref())?;
    let (_, traces) = index_all(loaded);
    let Some(t) = traces.get(i) else {
        bail!("no trace to plot");
    };
    if t.index.is_empty() {
        bail!("{}: the trace has no events", a.file.display());
    }
    let theme = Theme::resolve(a.theme.as_deref().or(Some("light")), false)?;
    let name = a.file.file_name().map_or_else(
        || a.file.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let (lo, hi, range_label) = match a.window.as_deref() {
        Some(w) => {
            let r = memtide_core::analysis::window_spec::WindowSpec::parse(w)?
                .resolve(&t.trace, &t.index)?;
            (r.lo, r.hi, format!("window {}", r.label))
        }
        None => (Seq(0), Seq(t.index.len() as u64 - 1), String::new()),
    };
    let svg = svg(&Picture {
        trace: &t.trace,
        index: &t.index,
        theme: &theme,
        name: &name,
        lo,
        hi,
        range_label,
        width: a.width,
        height: a.height,
    })?;
    let png = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if png { to_png(&svg)? } else { svg.into_bytes() };
    crate::output_file::write_atomically(&a.out, &bytes, &[a.file.as_path()])?;
    crate::errln!("wrote {} ({} bytes)", a.out.display(), bytes.len());
    Ok(ExitCode::SUCCESS)
}
