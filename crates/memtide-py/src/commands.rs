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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    //! The Python entries answer as the command line does: the same report-layer answer,
    //! through this crate's own options and opening (so a change to either side that would
    //! break `import memtide` fails a plain `cargo test`).
    use super::*;
    use crate::open::{open, Options};

    fn repo(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(rel)
    }

    #[test]
    fn check_gates_every_device_unless_device_names_one() {
        let path = repo("tests/fixtures/snapshot/two_devices_p4.pickle");
        let lim = limits(Some("40MiB"), None, None, false).unwrap();
        let opened = open(&path, &Options::default(), &Progress::new()).unwrap();
        let (code, lines, doc) = judge(gated(&opened), &path, &lim).unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!((code, v["kind"].as_str()), (1, Some("devices")));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("FAIL: cuda:1: out of memory")));
        // `device=` narrows the gate to one device, as `--device` does.
        let one = Options {
            input: input(Some("0".into()), false),
            ..Options::default()
        };
        let opened = open(&path, &one, &Progress::new()).unwrap();
        assert_eq!(gated(&opened).len(), 1);
        let (_, _, doc) = judge(gated(&opened), &path, &lim).unwrap();
        let v: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(
            (v["kind"].as_str(), v["device"].as_str()),
            (Some("device"), Some("cuda:0"))
        );
    }

    #[test]
    fn check_needs_a_limit_and_reads_sizes_as_the_command_does() {
        assert!(limits(None, None, None, false).is_err());
        let l = limits(Some("1.5GiB"), Some("5%"), None, true).unwrap();
        assert_eq!(l.max_peak, Some(memtide_core::trace::Bytes(3 << 29)));
        assert_eq!(l.max_growth, Some(0.05));
        let e = limits(Some("12"), None, None, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a size with a unit"), "{e}");
    }

    #[test]
    fn diff_and_whatif_answer_with_the_report_layer_s_documents() {
        let a = repo("sample-traces/train-3steps.jsonl");
        let b = repo("sample-traces/train-checkpointed.jsonl");
        let c = memtide_report::compare::compare(&a, &b, &input(None, false), &mut |_| {}).unwrap();
        let v = c.json();
        assert!(
            v["peak_delta"].as_i64().unwrap() < 0,
            "checkpointing lowers the peak: {v}"
        );
        let oom = repo("sample-traces/cuda-oom.pickle");
        let r = memtide_report::whatif::replay(
            &oom,
            &input(None, false),
            &["expandable_segments:True".to_string()],
            None,
            &mut |_| {},
        )
        .unwrap();
        let v = r.json().unwrap();
        assert_eq!(v["runs"].as_array().unwrap().len(), 2, "{v}");
        assert_eq!(v["file"], oom.display().to_string());
    }
}
