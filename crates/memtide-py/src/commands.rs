//! `memtide.check`, `memtide.diff`, `memtide.whatif`: the report layer's answers
//! ([`memtide_report::check`], [`memtide_report::compare`], [`memtide_report::whatif`]), each
//! run as a [`crate::call`] (a worker thread, the memory budget, Ctrl-C raising at once); the
//! answers as the commands print them.

use crate::call::{budget_of, run};
use crate::open::{open, OpenFail, Options};
use crate::questions::json;
use memtide_core::formats::Progress;
use memtide_core::gate::Limits;
use memtide_core::open::Device;
use memtide_report::InputOptions;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

/// The reading options `memtide.check` / `diff` / `whatif` take.
fn input(device: Option<String>, lenient: bool) -> InputOptions {
    InputOptions {
        device,
        lenient,
        ..InputOptions::default()
    }
}

/// `check`'s limits from its flags' texts (`"70GiB"`, `"5%"`), parsed as the CLI parses them.
pub fn limits(
    max_peak: Option<&str>,
    max_growth: Option<&str>,
    window: Option<String>,
    allow_warnings: bool,
) -> anyhow::Result<Limits> {
    if max_peak.is_none() && max_growth.is_none() {
        anyhow::bail!("check needs max_peak or max_growth (or both)");
    }
    memtide_report::check::limits(max_peak, max_growth, window, allow_warnings)
}

/// The core's gate on every device of `devices` with events: `(exit status 0 or 1, the lines
/// `memtide check` prints, the `check --json` document)`; what the command exits 2 on is an
/// error.
pub fn judge(
    devices: &[Device],
    file: &Path,
    limits: &Limits,
) -> anyhow::Result<(u8, Vec<String>, String)> {
    let j = memtide_report::check::judge(devices, file, limits)?;
    Ok((j.verdict.outcome().exit_code(), j.lines.clone(), json(&j)?))
}

/// The devices `memtide.check` gates: the one `device=` names, else every device.
pub fn gated(opened: &crate::open::Opened) -> &[Device] {
    if opened.device_given {
        opened
            .devices
            .get(opened.primary..=opened.primary)
            .unwrap_or_default()
    } else {
        &opened.devices
    }
}

/// `memtide check PATH …`: opens the file (the one door, as `check` reads it) and judges it.
#[pyfunction]
#[pyo3(signature = (path, *, max_peak=None, max_growth=None, window=None, capacity=None,
    device=None, allow_warnings=false, lenient=false, max_memory=None))]
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
    max_memory: Option<String>,
) -> PyResult<(u8, Vec<String>, String)> {
    let lim = limits(
        max_peak.as_deref(),
        max_growth.as_deref(),
        window,
        allow_warnings,
    )
    .map_err(|e| crate::errors::other_error(py, Some(&path), &e))?;
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
    let options = Options {
        input: input(device, lenient),
        capacity,
        whole_histories: false,
    };
    let budget = budget_of(max_memory.as_deref())?;
    let progress = Progress::new();
    let (p, file) = (progress.clone(), path.clone());
    let done = run(py, "memtide-check", budget, progress, move || {
        let opened = open(&file, &options, &p)?;
        judge(gated(&opened), &file, &lim).map_err(OpenFail::Other)
    })?;
    crate::errors::settle(py, Some(&path), done, |e| {
        crate::errors::open_error(py, &path, e)
    })
}

/// `memtide diff A B --json`: the document, as JSON text.
#[pyfunction]
#[pyo3(signature = (a, b, *, device=None, lenient=false, max_memory=None))]
pub fn diff(
    py: Python<'_>,
    a: PathBuf,
    b: PathBuf,
    device: Option<String>,
    lenient: bool,
    max_memory: Option<String>,
) -> PyResult<String> {
    let input = input(device, lenient);
    let budget = budget_of(max_memory.as_deref())?;
    let done = run(py, "memtide-diff", budget, Progress::new(), move || {
        let c = memtide_report::compare::compare(&a, &b, &input, &mut crate::open::say)?;
        json(&c.json())
    })?;
    crate::errors::settle_any(py, None, done)
}

/// `memtide whatif PATH --alloc-conf …  --json`: the document, as JSON text.
#[pyfunction]
#[pyo3(signature = (path, *, alloc_conf=Vec::new(), capacity=None, device=None, lenient=false,
    max_memory=None))]
pub fn whatif(
    py: Python<'_>,
    path: PathBuf,
    alloc_conf: Vec<String>,
    capacity: Option<String>,
    device: Option<String>,
    lenient: bool,
    max_memory: Option<String>,
) -> PyResult<String> {
    let input = input(device, lenient);
    let file = path.clone();
    let budget = budget_of(max_memory.as_deref())?;
    let done = run(py, "memtide-whatif", budget, Progress::new(), move || {
        let r = memtide_report::whatif::replay(
            &file,
            &input,
            &alloc_conf,
            capacity.as_deref(),
            &mut crate::open::say,
        )?;
        json(&r.json()?)
    })?;
    crate::errors::settle_any(py, Some(&path), done)
}
