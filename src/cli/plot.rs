//! `memtide plot FILE -o out.svg|png`: the stacked band timeline as a picture to paste into a
//! pull request or an issue — bands in the theme's colours, the reserved outline, the capacity
//! line, step marks, the peak with its exact bytes, OOMs — on the explorer's peak-preserving
//! columns (drawn by `tui::picture`); with two files, both runs aligned by step
//! (`plot_diff`).

use super::load::{apply_capacity, index_all, load, pick_device};
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
    if let Some(b) = &a.file_b {
        return two(a, b);
    }
    let mut loaded = load(&a.file, &a.input)?;
    apply_capacity(&mut loaded, a.capacity.as_deref())?;
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
    write(a, svg, &[a.file.as_path()])
}

/// Writes the SVG, or the PNG rendered from it when OUT ends in `.png`.
fn write(a: &PlotArgs, svg: String, inputs: &[&std::path::Path]) -> Result<ExitCode> {
    let png = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let bytes = if png { to_png(&svg)? } else { svg.into_bytes() };
    crate::output_file::write_atomically(&a.out, &bytes, inputs)?;
    crate::errln!("wrote {} ({} bytes)", a.out.display(), bytes.len());
    Ok(ExitCode::SUCCESS)
}

/// `plot A B`: both runs on one scale, aligned by step.
fn two(a: &PlotArgs, b: &std::path::Path) -> Result<ExitCode> {
    if a.window.is_some() {
        bail!("--window draws one file; `plot A B` draws both whole runs");
    }
    if a.height < 200 {
        bail!("--height must be at least 200 pixels for two runs (labels and legend take 142)");
    }
    let side = |f: &std::path::Path| -> Result<super::load::Indexed> {
        let mut loaded = load(f, &a.input)?;
        apply_capacity(&mut loaded, a.capacity.as_deref())?;
        let i = pick_device(&loaded, a.input.device.as_deref())?;
        let (_, traces) = index_all(loaded);
        let Some(t) = traces.into_iter().nth(i) else {
            bail!("{}: no trace to plot", f.display());
        };
        if t.index.is_empty() {
            bail!("{}: the trace has no events", f.display());
        }
        Ok(t)
    };
    let (x, y) = (side(&a.file)?, side(b)?);
    let theme = if a.bands {
        Some(Theme::resolve(a.theme.as_deref().or(Some("light")), false)?)
    } else {
        None
    };
    let d = memtide_core::analysis::diff::diff(&x.trace, &x.index, &y.trace, &y.index);
    let (na, nb) = (a.file.display().to_string(), b.display().to_string());
    let svg = super::plot_diff::svg(&super::plot_diff::DiffPicture {
        a: super::plot_diff::Run {
            trace: &x.trace,
            index: &x.index,
            name: &na,
        },
        b: super::plot_diff::Run {
            trace: &y.trace,
            index: &y.index,
            name: &nb,
        },
        diff: &d,
        width: a.width,
        height: a.height,
        bands: theme.as_ref(),
    })?;
    write(a, svg, &[a.file.as_path(), b])
}
