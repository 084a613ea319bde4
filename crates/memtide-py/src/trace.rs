//! `NativeTrace`: an opened file held in Rust, answering in JSON text that the Python half
//! (`memtide._trace.Trace`) parses (the summary document, `summary --json`'s own writer; the
//! timeline; the allocator state; the plot's SVG) and the live set as Python rows
//! ([`crate::rows`]). Every question runs as a [`crate::call`]: on a worker thread holding an
//! `Arc` of the trace, inside the memory budget the trace was opened with, Ctrl-C raising at
//! once.

use crate::call::{budget_of, run, Done};
use crate::open::Opened;
use crate::questions;
use memtide_core::analysis::{write_document, DocumentJson, FixReplay, SummaryOptions, TreeFrames};
use memtide_core::formats::Progress;
use memtide_core::open::Device;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, OnceLock};

/// An opened file: every device indexed, one of them the trace's.
#[pyclass(frozen, module = "memtide._native")]
pub struct NativeTrace {
    opened: Arc<Opened>,
    /// `max_memory=` of the opening: the budget of each later call too.
    max_memory: Option<String>,
    /// `summary_json()` with the default options, made once.
    summary: OnceLock<String>,
}

/// The device asked for (the one every question is about).
fn main_of(o: &Opened) -> anyhow::Result<&Device> {
    o.devices
        .get(o.primary)
        .ok_or_else(|| anyhow::anyhow!("the file holds no device traces"))
}

fn summary_text(
    o: &Opened,
    window: Option<&str>,
    tree_frames: TreeFrames,
    fixes: FixReplay,
) -> anyhow::Result<String> {
    let opts = SummaryOptions {
        tree_frames,
        boundary: true,
        fixes,
    };
    let summaries = memtide_report::summary::summarise(&o.devices, window, &opts)?;
    let Some(main) = summaries.get(o.primary) else {
        anyhow::bail!("no trace to summarise");
    };
    if summaries.iter().all(|s| s.events == 0) {
        anyhow::bail!(
            "{}: the trace has no events (header only?); nothing to summarise",
            o.path.display()
        );
    }
    let devices: Vec<String> = o.devices.iter().map(|t| t.trace.device.clone()).collect();
    let doc = DocumentJson::new(main, &summaries, &devices, o.device_given);
    let mut bytes = Vec::new();
    write_document(&mut bytes, &doc)?;
    Ok(String::from_utf8(bytes)?)
}

impl NativeTrace {
    pub fn new(opened: Opened, max_memory: Option<String>) -> NativeTrace {
        NativeTrace {
            opened: Arc::new(opened),
            max_memory,
            summary: OnceLock::new(),
        }
    }

    /// The device asked for (the one every question is about).
    pub fn main(&self) -> PyResult<&Device> {
        main_of(&self.opened).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Runs `f` on the opened file as a [`crate::call`] (worker thread, the budget, Ctrl-C)
    /// and turns its error into the matching exception.
    fn ask<T: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Opened) -> anyhow::Result<T> + Send + 'static,
    ) -> PyResult<T> {
        let done: Done<anyhow::Result<T>> = self.ask_raw(py, f)?;
        crate::errors::settle_any(py, Some(&self.opened.path), done)
    }

    fn ask_raw<T: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Opened) -> T + Send + 'static,
    ) -> PyResult<Done<T>> {
        let budget = budget_of(self.max_memory.as_deref())?;
        let o = Arc::clone(&self.opened);
        run(py, "memtide-call", budget, Progress::new(), move || f(&o))
    }
}

#[pymethods]
impl NativeTrace {
    /// The path as given to `open`.
    #[getter]
    fn path(&self) -> String {
        self.opened.path.display().to_string()
    }

    /// The file's format: jsonl, snapshot, kineto, memory_timeline.
    #[getter]
    fn format(&self) -> &'static str {
        self.opened.format.name()
    }

    /// Every device of the file, in file order.
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.opened
            .devices
            .iter()
            .map(|t| t.trace.device.clone())
            .collect()
    }

    /// The device this trace answers about.
    #[getter]
    fn device(&self) -> PyResult<String> {
        Ok(self.main()?.trace.device.clone())
    }

    /// Events on the device's axis.
    #[getter]
    fn events(&self) -> PyResult<usize> {
        Ok(self.main()?.index.len())
    }

    /// The document `memtide summary FILE --json` prints, as JSON text (the GIL released);
    /// `fixes`: as `--fixes`.
    #[pyo3(signature = (window=None, frames="user", fixes=false))]
    fn summary_json(
        &self,
        py: Python<'_>,
        window: Option<&str>,
        frames: &str,
        fixes: bool,
    ) -> PyResult<String> {
        let default = window.is_none() && frames == "user" && !fixes;
        if default {
            if let Some(s) = self.summary.get() {
                return Ok(s.clone());
            }
        }
        let tree_frames = match frames {
            "all" => TreeFrames::All,
            "user" => TreeFrames::User,
            other => {
                return Err(crate::errors::other_error(
                    py,
                    Some(&self.opened.path),
                    &anyhow::anyhow!("frames={other:?}: expected \"user\" or \"all\""),
                ))
            }
        };
        let window = window.map(str::to_string);
        let replay = FixReplay::from_flag(fixes);
        let text = self.ask(py, move |o| {
            summary_text(o, window.as_deref(), tree_frames, replay)
        })?;
        if default {
            let _ = self.summary.set(text.clone());
        }
        Ok(text)
    }

    /// The storages live after event `index` (None: at the peak), biggest first, at most
    /// `limit` (None: all): `{device, index, at_start, time_us, total, rows}`.
    #[pyo3(signature = (index=None, limit=None))]
    fn live_rows<'py>(
        &self,
        py: Python<'py>,
        index: Option<u64>,
        limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let table = self.ask(py, move |o| {
            crate::rows::table(main_of(o)?, &o.frame_rules, index, limit)
        })?;
        crate::rows::to_python(py, table)
    }

    /// The stacked bands over the run in `points` peak-preserving columns, as JSON arrays.
    fn timeline_json(&self, py: Python<'_>, points: usize) -> PyResult<String> {
        if !(1..=questions::MAX_POINTS).contains(&points) {
            return Err(PyValueError::new_err(format!(
                "points={points}: expected 1 to {}",
                questions::MAX_POINTS
            )));
        }
        self.ask(py, move |o| questions::timeline(main_of(o)?, points))
    }

    /// The allocator's segments and blocks after event `index`, as JSON.
    fn allocator_json(&self, py: Python<'_>, index: u64) -> PyResult<String> {
        self.ask(py, move |o| questions::allocator(main_of(o)?, index))
    }

    /// `memtide check FILE …` on this trace (no second read; every device with events unless
    /// `device=` named one): `(status 0/1/2, lines, JSON)`.
    #[pyo3(signature = (*, max_peak=None, max_growth=None, window=None, allow_warnings=false))]
    fn check(
        &self,
        py: Python<'_>,
        max_peak: Option<&str>,
        max_growth: Option<&str>,
        window: Option<String>,
        allow_warnings: bool,
    ) -> PyResult<(u8, Vec<String>, String)> {
        let lim = crate::commands::limits(max_peak, max_growth, window, allow_warnings)
            .map_err(|e| crate::errors::other_error(py, Some(&self.opened.path), &e))?;
        self.ask(py, move |o| {
            crate::commands::judge(crate::commands::gated(o), &o.path, &lim)
        })
    }

    /// The picture `memtide plot FILE -o out.svg` draws.
    #[pyo3(signature = (width=1200, height=480))]
    fn svg(&self, py: Python<'_>, width: u32, height: u32) -> PyResult<String> {
        let name = self.opened.path.file_name().map_or_else(
            || self.opened.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        self.ask(py, move |o| {
            questions::svg(main_of(o)?, &name, width, height)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::open::{open, Options};
    use memtide_core::formats::Progress;
    use serde_json::Value;

    /// `Trace.budget` is the summary document's `budget` (python/memtide/_trace.py): on the
    /// hand-made capture trace, the figures of tests/fixtures/serving/README.md.
    #[test]
    fn the_summary_document_carries_the_serving_budget() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/serving/capture.kineto.json");
        let opened = open(&path, &Options::default(), &Progress::new()).expect("open");
        let doc: Value = serde_json::from_str(
            &summary_text(&opened, None, TreeFrames::User, FixReplay::default()).expect("summary"),
        )
        .expect("json");
        let b = &doc["budget"];
        let mib = 1u64 << 20;
        assert_eq!(b["graphs"].as_u64(), Some(60 * mib));
        assert_eq!(b["before_trace"].as_u64(), Some(3072 * mib));
        assert_eq!(b["weights"], Value::Null, "unknown, never 0");
        assert_eq!(b["captures"].as_array().map(Vec::len), Some(2));
    }
}
