//! `memtide.check`, `memtide.diff`, `memtide.whatif`: the commands' own code (`check::evaluate`,
//! `diff::compare` + `diff::json`, `whatif::replay` + `whatif::json`), run with the GIL
//! released; the answers as the commands print them (verdict lines, `--json` documents).

use memtide::cli::{CheckArgs, DiffArgs, FollowArgs, InputArgs, WhatifArgs};
use pyo3::prelude::*;
use std::path::PathBuf;

/// The reading options `memtide.check` / `diff` / `whatif` take, as the CLI's flags.
fn input(device: Option<String>, lenient: bool) -> InputArgs {
    InputArgs {
        device,
        lenient,
        ..InputArgs::default()
    }
}

/// `memtide check PATH …`: `(exit status 0 or 1, the verdict lines)`; exit 2 is an exception.
#[pyfunction]
#[pyo3(signature = (path, *, max_peak=None, max_growth=None, window=None, capacity=None,
    device=None, allow_warnings=false, lenient=false))]
#[allow(clippy::too_many_arguments)]
pub fn check(
    py: Python<'_>,
    path: PathBuf,
    max_peak: Option<String>,
    max_growth: Option<String>,
    window: Option<String>,
    capacity: Option<String>,
    device: Option<String>,
    allow_warnings: bool,
    lenient: bool,
) -> PyResult<(u8, Vec<String>)> {
    if max_peak.is_none() && max_growth.is_none() {
        return Err(crate::errors::other_error(
            py,
            None,
            &anyhow::anyhow!("check needs max_peak or max_growth (or both)"),
        ));
    }
    let a = CheckArgs {
        file: path.clone(),
        more: Vec::new(),
        max_peak,
        max_imbalance: None,
        jobs: 0,
        max_growth,
        window,
        capacity,
        follow: FollowArgs::default(),
        idle_exit: None,
        allow_warnings,
        report: None,
        input: input(device, lenient),
    };
    if path.is_dir() {
        return Err(crate::errors::other_error(
            py,
            Some(&path),
            &anyhow::anyhow!(
                "{}: a directory of rank files: memtide.check reads one file (the `memtide check DIR` command gates a job)",
                path.display()
            ),
        ));
    }
    let judged = py.detach(|| memtide::cli::check::evaluate(&a));
    match judged {
        Ok((code, lines, _)) => Ok((code, lines)),
        Err(e) => Err(crate::errors::other_error(py, Some(&path), &e)),
    }
}

/// `memtide diff A B --json`: the document, as JSON text.
#[pyfunction]
#[pyo3(signature = (a, b, *, device=None, lenient=false))]
pub fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    device: Option<String>,
    lenient: bool,
) -> PyResult<String> {
    let args = DiffArgs {
        a,
        b,
        json: true,
        markdown: false,
        require_parity: false,
        input: input(device, lenient),
    };
    let made = py.detach(|| -> anyhow::Result<String> {
        let c = memtide::cli::diff::compare(&args)?;
        Ok(serde_json::to_string(&memtide::cli::diff::json(&args, &c))?)
    });
    made.map_err(|e| crate::errors::other_error(py, None, &e))
}

/// `memtide whatif PATH --alloc-conf …  --json`: the document, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, *, alloc_conf=Vec::new(), capacity=None, device=None, lenient=false))]
pub fn whatif(
    py: Python<'_>,
    path: PathBuf,
    alloc_conf: Vec<String>,
    capacity: Option<String>,
    device: Option<String>,
    lenient: bool,
) -> PyResult<String> {
    let a = WhatifArgs {
        file: path.clone(),
        alloc_conf,
        capacity,
        json: true,
        input: input(device, lenient),
    };
    let made = py.detach(|| -> anyhow::Result<String> {
        let (w, _) = memtide::cli::whatif::replay(&a)?;
        Ok(serde_json::to_string(&memtide::cli::whatif::json(&a, &w)?)?)
    });
    made.map_err(|e| crate::errors::other_error(py, Some(&path), &e))
}
